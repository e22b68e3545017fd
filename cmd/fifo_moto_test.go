package cmd

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
)

// fifoDLQ creates a FIFO queue on moto holding groups×per messages, sent
// in group order (body "g<G>-<N>").
func fifoDLQ(t *testing.T, c *sqs.Client, name string, groups, per int) (url, arn string) {
	t.Helper()
	url, arn = createQueue(t, c, name+".fifo", map[string]string{"FifoQueue": "true"})
	for g := 1; g <= groups; g++ {
		for n := 0; n < per; n += 10 {
			var entries []types.SendMessageBatchRequestEntry
			for i := n; i < min(n+10, per); i++ {
				entries = append(entries, types.SendMessageBatchRequestEntry{
					Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf(`{"group":"g%d","n":%d}`, g, i)),
					MessageGroupId: aws.String(fmt.Sprintf("g%d", g)), MessageDeduplicationId: aws.String(fmt.Sprintf("g%d-%d", g, i)),
				})
			}
			out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("seeding %s: %v %v", name, err, out)
			}
		}
	}
	return url, arn
}

// receiveAll drains url (deleting), returning bodies in receive order.
func receiveAll(t *testing.T, c *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for empty := 0; empty < 2; {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bodies
}

// checkOrderPerGroup checks that each group's bodies appear in send order.
func checkOrderPerGroup(t *testing.T, bodies []string) {
	t.Helper()
	last := map[string]int{}
	for _, b := range bodies {
		var v struct {
			Group string `json:"group"`
			N     int    `json:"n"`
		}
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("body %q: %v", b, err)
		}
		if prev, ok := last[v.Group]; ok && v.N != prev+1 {
			t.Errorf("group %s: message %d after %d (order lost)", v.Group, v.N, prev)
		}
		last[v.Group] = v.N
	}
}

func motoBucket(t *testing.T, env testenv.Env) string {
	t.Helper()
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "fifo"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return bucket
}

func archiveManifest(t *testing.T, env testenv.Env, bucket string) *archive.Manifest {
	t.Helper()
	api := env.S3(t)
	out, err := api.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), archive.ManifestName) {
			m, err := archive.ReadManifest(t.Context(), archive.Ref{Src: archive.S3Source{API: api, Bucket: bucket}, Key: aws.ToString(o.Key)})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no manifest in s3://%s", bucket)
	return nil
}

func TestArchiveDeleteDrainsAGroupLockingFIFOQueue(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := fifoDLQ(t, c, testenv.UniqueName(t, "fa"), 5, 20)
	bucket := motoBucket(t, env)

	// Small parts: each part's messages are deleted as soon as it is
	// verified, which unlocks their groups for the next receives. One
	// receiver: moto 5.2.1 can hand one group to two concurrent receives on
	// a loaded machine (docs/emulators.md), which AWS never does.
	r := runCLI(t, env, "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "--part-records", "7", "--concurrency", "1", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("archive --delete of a group-locking FIFO queue: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if v, f := settledDepth(t, c, url); v+f != 0 {
		t.Fatalf("after archive --delete the FIFO DLQ still holds %d visible, %d in flight; want 0", v, f)
	}
	m := archiveManifest(t, env, bucket)
	if !m.Complete || m.Totals.Records != 100 || m.Totals.Deleted != 100 {
		t.Fatalf("manifest: complete=%v records=%d deleted=%d note=%q; want complete, 100, 100", m.Complete, m.Totals.Records, m.Totals.Deleted, m.Note)
	}
	// The archive keeps each group's order.
	var bodies []string
	for _, rec := range sampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
		bodies = append(bodies, rec.Body)
	}
	if len(bodies) != 100 {
		t.Fatalf("archive read back %d records, want 100", len(bodies))
	}
	checkOrderPerGroup(t, bodies)
}

func TestArchiveWithoutDeleteOfAGroupLockingFIFOQueueIsPartial(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := fifoDLQ(t, c, testenv.UniqueName(t, "fk"), 5, 20)
	bucket := motoBucket(t, env)

	r := runCLI(t, env, "", "archive", url, "--to", "s3://"+bucket+"/p", "--yes")
	if r.Code != 4 {
		t.Fatalf("archive (no --delete) of a group-locking FIFO queue: exit %d, want 4 (partial)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, "completed") {
		t.Errorf("a partial archive printed 'completed':\n%s\n%s", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "could not be read") {
		t.Errorf("stderr does not say what could not be read:\n%s", r.Stderr)
	}
	m := archiveManifest(t, env, bucket)
	// One receive may return several messages of a group; then the group
	// is locked. What was read is archived, the rest is reported.
	if m.Complete || m.Totals.Records < 5 || m.Totals.Records >= 100 {
		t.Errorf("manifest: complete=%v records=%d; want an incomplete archive of the groups' first messages", m.Complete, m.Totals.Records)
	}
	if want := fmt.Sprintf("archived %d message(s), but", m.Totals.Records); !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.Stderr)
	}
	if v, f := settledDepth(t, c, url); v != 100 || f != 0 {
		t.Errorf("after a non-deleting archive the queue has %d visible, %d in flight; want 100, 0", v, f)
	}
}

func TestGroupAllOfAGroupLockingFIFOQueueSaysWhatItCouldNotRead(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := fifoDLQ(t, c, testenv.UniqueName(t, "fg"), 5, 20)

	r := runCLI(t, env, "", "group", url, "--by", "shape", "--all")
	if r.Code != 4 {
		t.Fatalf("group --all of a group-locking FIFO queue: exit %d, want 4 (partial)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !regexp.MustCompile(`read \d+ of ~100: a FIFO group's later messages cannot be read`).MatchString(r.Stderr) {
		t.Errorf("stderr does not say how much was read:\n%s", r.Stderr)
	}
	if v, f := settledDepth(t, c, url); v != 100 || f != 0 {
		t.Errorf("after group the queue has %d visible, %d in flight; want 100, 0", v, f)
	}
}

func TestFilteredFIFORedriveReportsGroupsBlockedBehindUnselectedMessages(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	url, _ := fifoDLQ(t, c, testenv.UniqueName(t, "fr"), 5, 20)
	dest, _ := createQueue(t, c, testenv.UniqueName(t, "frd")+".fifo", map[string]string{"FifoQueue": "true"})

	r := runCLI(t, env, "", "redrive", url, "--to", dest, "--yes", "-o", "json", "--wait-inflight=false", "--concurrency", "1",
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
	moved := receiveAll(t, c, dest)
	if len(moved) != 40 {
		t.Fatalf("destination holds %d, want 40", len(moved))
	}
	checkOrderPerGroup(t, moved)
	if v, f := settledDepth(t, c, url); v != 60 || f != 0 {
		t.Errorf("the DLQ has %d visible, %d in flight; want 60, 0", v, f)
	}
}

func TestRedriveToSourceWithoutDeadLetterSourceArn(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	dlqURL, dlqARN := createQueue(t, c, testenv.UniqueName(t, "rsd"), nil)
	srcURL, _ := createQueue(t, c, testenv.UniqueName(t, "rss"), map[string]string{
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
		if v, _ := queueDepth(t, c, dlqURL); v == 12 {
			break
		}
	}
	if v, _ := queueDepth(t, c, dlqURL); v != 12 {
		t.Fatalf("moto dead-lettered %d of 12 messages", v)
	}

	r := runCLI(t, env, "", "redrive", dlqURL, "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("redrive to source without DeadLetterQueueSourceArn: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := receiveAll(t, c, srcURL); len(got) != 12 {
		t.Errorf("source queue got back %d messages, want 12", len(got))
	}
	if v, f := settledDepth(t, c, dlqURL); v+f != 0 {
		t.Errorf("DLQ still holds %d visible, %d in flight", v, f)
	}
}

// TestFIFOWithDefaultConcurrencyDrainsEveryGroupInOrder: on moto (which
// locks message groups as AWS does), archive --delete and redrive --to
// source of a multi-group FIFO DLQ with the DEFAULT concurrency move every
// message, each group in order, and exit 0 — repeated, because the end of
// such a run is a race between finishing a group's message and the next
// empty receive: a run that ended on a count read while it still held a
// group's message left that group's rest behind, saying "completed".
func TestFIFOWithDefaultConcurrencyDrainsEveryGroupInOrder(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	const groups, per, rounds = 5, 12, 20
	const n = groups * per
	for i := range rounds {
		t.Run(fmt.Sprintf("archive-delete/%02d", i), func(t *testing.T) {
			url, _ := fifoDLQ(t, c, testenv.UniqueName(t, "fr"), groups, per)
			bucket := motoBucket(t, env)
			r := runCLI(t, env, "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "-o", "json")
			if r.Code != 0 {
				t.Fatalf("archive --delete: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if v, f := queueDepth(t, c, url); v+f != 0 { // moto's counts are exact
				t.Fatalf("archive --delete exited 0 with %d visible and %d in flight left in the DLQ", v, f)
			}
			m := archiveManifest(t, env, bucket)
			if !m.Complete || m.Totals.Records != n || m.Totals.Deleted != n {
				t.Fatalf("manifest: complete=%v records=%d deleted=%d; want %d", m.Complete, m.Totals.Records, m.Totals.Deleted, n)
			}
			var bodies []string
			for _, rec := range sampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
				bodies = append(bodies, rec.Body)
			}
			if len(bodies) != n {
				t.Fatalf("archive read back %d records, want %d", len(bodies), n)
			}
			checkOrderPerGroup(t, bodies)
		})
		t.Run(fmt.Sprintf("redrive-to-source/%02d", i), func(t *testing.T) {
			dlq, dlqARN := fifoDLQ(t, c, testenv.UniqueName(t, "frd"), groups, per)
			src, _ := createQueue(t, c, testenv.UniqueName(t, "frs")+".fifo", map[string]string{
				"FifoQueue": "true", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, dlqARN),
			})
			r := runCLI(t, env, "", "redrive", dlq, "--to", "source", "--yes", "-o", "json")
			var sum struct {
				Status string `json:"status"`
				Moved  int    `json:"moved"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Moved != n || sum.Status != "completed" {
				t.Fatalf("redrive --to source: exit %d, status %q, moved %d of %d (%v)\n%s", r.Code, sum.Status, sum.Moved, n, err, r.Stderr)
			}
			if v, f := queueDepth(t, c, dlq); v+f != 0 { // moto's counts are exact
				t.Fatalf("redrive exited 0 with %d visible and %d in flight left in the DLQ", v, f)
			}
			got := receiveN(t, c, src, n)
			if len(got) != n {
				t.Fatalf("the source queue got %d messages, want %d", len(got), n)
			}
			checkOrderPerGroup(t, got)
		})
	}
}

// receiveN receives (and deletes) n messages from url in receive order,
// then checks that nothing more is visible.
func receiveN(t *testing.T, c *sqs.Client, url string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var bodies []string
	deadline := time.Now().Add(30 * time.Second)
	for len(bodies) < n && time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(del) > 0 {
			if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v, f := queueDepth(t, c, url); v+f != 0 {
		t.Fatalf("%s holds %d visible, %d in flight beyond the %d received", url, v, f, len(bodies))
	}
	return bodies
}
