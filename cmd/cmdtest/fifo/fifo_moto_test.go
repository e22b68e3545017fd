package fifo

// FIFO behaviour on a server that locks message groups as AWS does
// (moto_server): SQS hands out nothing more of a group while one of its
// messages is in flight. local-aws-sqs does not lock groups, so everything
// here runs against moto.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
)

func TestArchiveDeleteDrainsAGroupLockingFIFOQueue(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fa"), 5, 20)
	bucket := clitest.Bucket(t, env, "fifo")

	// Small parts: each part's messages are deleted as soon as it is
	// verified, which unlocks their groups for the next receives. One
	// receiver: moto 5.2.1 can hand one group to two concurrent receives on
	// a loaded machine (docs/emulators.md), which AWS never does.
	r := clitest.Run(t, env, "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "--part-records", "7", "--concurrency", "1", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("archive --delete of a group-locking FIFO queue: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if v, f := clitest.SettledDepth(t, c, url); v+f != 0 {
		t.Fatalf("after archive --delete the FIFO DLQ still holds %d visible, %d in flight; want 0", v, f)
	}
	m := clitest.ArchiveManifest(t, env, bucket)
	if !m.Complete || m.Totals.Records != 100 || m.Totals.Deleted != 100 {
		t.Fatalf("manifest: complete=%v records=%d deleted=%d note=%q; want complete, 100, 100", m.Complete, m.Totals.Records, m.Totals.Deleted, m.Note)
	}
	// The archive keeps each group's order.
	var bodies []string
	for _, rec := range clitest.SampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
		bodies = append(bodies, rec.Body)
	}
	if len(bodies) != 100 {
		t.Fatalf("archive read back %d records, want 100", len(bodies))
	}
	clitest.CheckOrderPerGroup(t, bodies)
}

func TestArchiveWithoutDeleteOfAGroupLockingFIFOQueueIsPartial(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fk"), 5, 20)
	bucket := clitest.Bucket(t, env, "fifo")

	r := clitest.Run(t, env, "", "archive", url, "--to", "s3://"+bucket+"/p", "--yes")
	if r.Code != 4 {
		t.Fatalf("archive (no --delete) of a group-locking FIFO queue: exit %d, want 4 (partial)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, "completed") {
		t.Errorf("a partial archive printed 'completed':\n%s\n%s", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "could not be read") {
		t.Errorf("stderr does not say what could not be read:\n%s", r.Stderr)
	}
	m := clitest.ArchiveManifest(t, env, bucket)
	// One receive may return several messages of a group; then the group
	// is locked. What was read is archived, the rest is reported.
	if m.Complete || m.Totals.Records < 5 || m.Totals.Records >= 100 {
		t.Errorf("manifest: complete=%v records=%d; want an incomplete archive of the groups' first messages", m.Complete, m.Totals.Records)
	}
	if want := fmt.Sprintf("archived %d message(s), but", m.Totals.Records); !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.Stderr)
	}
	if v, f := clitest.SettledDepth(t, c, url); v != 100 || f != 0 {
		t.Errorf("after a non-deleting archive the queue has %d visible, %d in flight; want 100, 0", v, f)
	}
}

func TestGroupAllOfAGroupLockingFIFOQueueSaysWhatItCouldNotRead(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fg"), 5, 20)

	r := clitest.Run(t, env, "", "group", url, "--by", "shape", "--all")
	if r.Code != 4 {
		t.Fatalf("group --all of a group-locking FIFO queue: exit %d, want 4 (partial)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !regexp.MustCompile(`read \d+ of ~100: a FIFO group's later messages cannot be read`).MatchString(r.Stderr) {
		t.Errorf("stderr does not say how much was read:\n%s", r.Stderr)
	}
	if v, f := clitest.SettledDepth(t, c, url); v != 100 || f != 0 {
		t.Errorf("after group the queue has %d visible, %d in flight; want 100, 0", v, f)
	}
}

func TestFilteredFIFORedriveReportsGroupsBlockedBehindUnselectedMessages(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fr"), 5, 20)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "frd")+".fifo", map[string]string{"FifoQueue": "true"})

	r := clitest.Run(t, env, "", "redrive", url, "--to", dest, "--yes", "-o", "json", "--wait-inflight=false", "--concurrency", "1",
		"--filter", `.system.message_group_id == "g1" or .system.message_group_id == "g2"`)
	if r.Code != 4 {
		t.Fatalf("filtered FIFO redrive: exit %d, want 4 (groups blocked)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var sum struct {
		Status        string   `json:"status"`
		Moved         int      `json:"moved"`
		Blocked       int      `json:"blocked"`
		BlockedGroups []string `json:"blocked_groups"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, r.Stdout)
	}
	if sum.Moved != 40 || sum.Status == "completed" {
		t.Errorf("summary: moved %d status %q; want the 40 messages of g1 and g2, not completed\n%s\n%s", sum.Moved, sum.Status, r.Stdout, r.Stderr)
	}
	if sum.Blocked == 0 || strings.Join(sum.BlockedGroups, ",") != "g3,g4,g5" {
		t.Errorf("summary: blocked %d in groups %v; want messages blocked behind g3,g4,g5", sum.Blocked, sum.BlockedGroups)
	}
	moved := clitest.ReceiveAll(t, c, dest)
	if len(moved) != 40 {
		t.Fatalf("destination holds %d, want 40", len(moved))
	}
	clitest.CheckOrderPerGroup(t, moved)
	if v, f := clitest.SettledDepth(t, c, url); v != 60 || f != 0 {
		t.Errorf("the DLQ has %d visible, %d in flight; want 60, 0", v, f)
	}
}

func TestRedriveToSourceWithoutDeadLetterSourceArn(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	dlqURL, dlqARN := clitest.CreateQueue(t, c, testenv.UniqueName(t, "rsd"), nil)
	srcURL, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "rss"), map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, dlqARN),
	})
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srcURL), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Receive every message once without deleting it and let it time out:
	// moto dead-letters it on the next receive (it sets no
	// DeadLetterQueueSourceArn on the copy).
	for got := 0; got < 12; {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
		if err != nil {
			t.Fatal(err)
		}
		got += len(out.Messages)
	}
	for i := 0; i < 40; i++ {
		_, _ = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if v, _ := clitest.QueueDepth(t, c, dlqURL); v >= 12 {
			break
		}
	}
	// Under CI load a seeding SendMessage the SDK retried can leave one
	// message twice: every message the DLQ holds must go back once.
	n, _ := clitest.SettledDepth(t, c, dlqURL)
	if n < 12 {
		t.Fatalf("moto dead-lettered %d of 12 messages", n)
	}

	r := clitest.Run(t, env, "", "redrive", dlqURL, "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("redrive to source without DeadLetterQueueSourceArn: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := clitest.ReceiveAll(t, c, srcURL); len(got) != n {
		t.Errorf("source queue got back %d messages, want the DLQ's %d", len(got), n)
	}
	if v, f := clitest.SettledDepth(t, c, dlqURL); v+f != 0 {
		t.Errorf("DLQ still holds %d visible, %d in flight", v, f)
	}
}

// TestFIFOWithDefaultConcurrencyDrainsEveryGroupInOrder: on moto (which
// locks message groups as AWS does), archive --delete and redrive --to
// source of a multi-group FIFO DLQ with the DEFAULT concurrency move every
// message, each group in order, and exit 0 — repeated, because the end of
// such a run is a race between finishing a group's message and the next
// empty receive: a run that ended on a count read while it still held a
// group's message left that group's rest behind, saying "completed". Under
// CI load a receive's answer can be lost: the run must then wait for its
// messages (it exited 0 with 10 of them in flight when it measured their
// visibility from the receive's start), and when moto gives a group back
// out of order (docs/emulators.md row 27) the run must say which groups
// and exit 4 (it archived "0 after 11" and said completed).
func TestFIFOWithDefaultConcurrencyDrainsEveryGroupInOrder(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	const groups, per, rounds = 5, 12, 20
	const n = groups * per
	for i := range rounds {
		t.Run(fmt.Sprintf("archive-delete/%02d", i), func(t *testing.T) {
			url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fr"), groups, per)
			bucket := clitest.Bucket(t, env, "fifo")
			r := clitest.Run(t, env, "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "-o", "json")
			if v, f := clitest.QueueDepth(t, c, url); v+f != 0 { // moto's counts are exact
				t.Fatalf("archive --delete exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
			}
			m := clitest.ArchiveManifest(t, env, bucket)
			if m.Complete != (r.Code == 0) || m.Totals.Records != n || m.Totals.Deleted != n {
				t.Fatalf("exit %d, manifest: complete=%v records=%d deleted=%d; want %d, complete when exit 0\n%s", r.Code, m.Complete, m.Totals.Records, m.Totals.Deleted, n, r.Stderr)
			}
			var bodies []string
			for _, rec := range clitest.SampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
				bodies = append(bodies, rec.Body)
			}
			if len(bodies) != n {
				t.Fatalf("archive read back %d records, want %d", len(bodies), n)
			}
			clitest.InOrderOrSaidSo(t, "archive --delete", r, bodies)
		})
		t.Run(fmt.Sprintf("redrive-to-source/%02d", i), func(t *testing.T) {
			dlq, dlqARN := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "frd"), groups, per)
			src, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "frs")+".fifo", map[string]string{
				"FifoQueue": "true", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, dlqARN),
			})
			r := clitest.Run(t, env, "", "redrive", dlq, "--to", "source", "--yes", "-o", "json")
			var sum struct {
				Status string `json:"status"`
				Moved  int    `json:"moved"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Moved != n || (sum.Status == "completed") != (r.Code == 0) {
				t.Fatalf("redrive --to source: exit %d, status %q, moved %d of %d (%v)\n%s", r.Code, sum.Status, sum.Moved, n, err, r.Stderr)
			}
			if v, f := clitest.QueueDepth(t, c, dlq); v+f != 0 { // moto's counts are exact
				t.Fatalf("redrive exited %d with %d visible and %d in flight left in the DLQ", r.Code, v, f)
			}
			got := clitest.ReceiveN(t, c, src, n)
			if len(got) != n {
				t.Fatalf("the source queue got %d messages, want %d", len(got), n)
			}
			clitest.InOrderOrSaidSo(t, "redrive --to source", r, got)
		})
	}
}
