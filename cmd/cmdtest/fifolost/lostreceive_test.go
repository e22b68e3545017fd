package fifolost

// Lost receives on a group-locking FIFO queue (moto_server): a receive whose
// answer is lost leaves messages in flight, held by nobody, and dlqctl must
// wait for them and keep (or report) each group's order. These tests wait on
// visibility timeouts and a 20 s latency fault, so they are a package of
// their own, beside cmd/cmdtest/fifo: make test runs the two side by side
// (clitest.Run sets the environment per test, so tests of one package cannot
// run in parallel).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
)

// interleavedFIFO makes a FIFO queue of groups × per messages sent round
// by round (g01-0, g02-0, …, g01-1, …): a receive of 10 takes the heads of
// the first 10 groups, one message each.
func interleavedFIFO(t *testing.T, c *sqs.Client, name string, groups, per int) (url, arn string) {
	t.Helper()
	url, arn = clitest.CreateQueue(t, c, name+".fifo", map[string]string{"FifoQueue": "true"})
	var all []types.SendMessageBatchRequestEntry
	for i := range per {
		for g := 1; g <= groups; g++ {
			all = append(all, types.SendMessageBatchRequestEntry{
				Id: aws.String(fmt.Sprint(len(all) % 10)), MessageBody: aws.String(fmt.Sprintf(`{"group":"g%02d","n":%d}`, g, i)),
				MessageGroupId: aws.String(fmt.Sprintf("g%02d", g)), MessageDeduplicationId: aws.String(fmt.Sprintf("g%02d-%d", g, i)),
			})
		}
	}
	for len(all) > 0 {
		n := min(10, len(all))
		out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: all[:n]})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("seeding %s: %v %v", name, err, out)
		}
		all = all[n:]
	}
	return url, arn
}

// slowLostReceive is a proxy in front of moto whose first ReceiveMessage
// reaches moto 10 s late (network latency: 10 s in, 10 s back) and whose
// answer is then lost (500 after moto handed the messages out): the SDK
// retries, and the messages moto handed out stay in flight, held by
// nobody, for the visibility the run asked for — counted from when moto
// acted, 10 s after the call began.
func slowLostReceive(t *testing.T, env testenv.Env) (*faultproxy.Proxy, testenv.Env) {
	t.Helper()
	p, err := faultproxy.New(env.SQSEndpoint,
		faultproxy.Fault{Action: "ReceiveMessage", Kind: faultproxy.Latency, Delay: 20 * time.Second, Limit: 1},
		faultproxy.LostReceives(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	via := env
	via.SQSEndpoint = p.URL // S3 stays moto's own endpoint
	return p, via
}

// TestLostSlowReceiveIsWaitedForOnFIFO: a receive whose answer was lost
// after moto acted late (its first attempt spent 10 s on the way there)
// leaves the heads of 10 groups in flight, held by nobody, for 15 s from
// when moto acted. archive --delete and redrive wait for them (the window
// runs from the end of the receive call), read them when they are back,
// and end complete with every message once and each group in order. Before,
// the window ran from the call's start and closed 5 s too early: the runs
// exited 0, "completed", with the 10 messages still in flight in the DLQ.
func TestLostSlowReceiveIsWaitedForOnFIFO(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	const groups, per = 12, 3
	const n = groups * per

	t.Run("archive-delete", func(t *testing.T) {
		url, _ := interleavedFIFO(t, c, testenv.UniqueName(t, "fl"), groups, per)
		bucket := clitest.Bucket(t, env, "fifo")
		p, via := slowLostReceive(t, env)
		r := clitest.Run(t, via, "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "--visibility", "15s", "-o", "json")
		if lost := p.Stats().LostReceivedMessages; lost != 10 {
			t.Fatalf("the lost receive took %d messages, want 10 (the fault did not fire as planned)", lost)
		}
		if v, f := clitest.QueueDepth(t, c, url); v+f != 0 { // moto's counts are exact
			t.Fatalf("archive --delete exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
		}
		if r.Code != 0 {
			t.Fatalf("archive --delete: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		m := clitest.ArchiveManifest(t, env, bucket)
		if !m.Complete || m.Totals.Records != n || m.Totals.Deleted != n {
			t.Fatalf("manifest: complete=%v records=%d deleted=%d; want %d", m.Complete, m.Totals.Records, m.Totals.Deleted, n)
		}
		var bodies []string
		for _, rec := range clitest.SampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
			bodies = append(bodies, rec.Body)
		}
		if len(bodies) != n {
			t.Fatalf("archive read back %d records, want %d", len(bodies), n)
		}
		clitest.CheckOrderPerGroup(t, bodies)
	})

	t.Run("redrive", func(t *testing.T) {
		url, _ := interleavedFIFO(t, c, testenv.UniqueName(t, "flr"), groups, per)
		dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "fld")+".fifo", map[string]string{"FifoQueue": "true"})
		p, via := slowLostReceive(t, env)
		r := clitest.Run(t, via, "", "redrive", url, "--to", dest, "--yes", "--visibility", "15s", "-o", "json")
		if lost := p.Stats().LostReceivedMessages; lost != 10 {
			t.Fatalf("the lost receive took %d messages, want 10 (the fault did not fire as planned)", lost)
		}
		if v, f := clitest.QueueDepth(t, c, url); v+f != 0 {
			t.Fatalf("redrive exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
		}
		var sum struct {
			Status string `json:"status"`
			Moved  int    `json:"moved"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Moved != n || sum.Status != "completed" {
			t.Fatalf("redrive: exit %d, status %q, moved %d of %d (%v)\n%s", r.Code, sum.Status, sum.Moved, n, err, r.Stderr)
		}
		got := clitest.ReceiveN(t, c, dest, n)
		if len(got) != n {
			t.Fatalf("the destination got %d messages, want %d", len(got), n)
		}
		clitest.CheckOrderPerGroup(t, got)
	})
}

// TestFIFOGroupOrderLostAfterALostReceiveIsReported: the same lost receive
// on a queue whose groups were sent one after the other takes 10
// consecutive messages of g1 (0–9). When they come back together, moto
// hands out the last of them and the group's later messages first (9, 10,
// 11, then 0–8: docs/emulators.md row 27; AWS keeps a group's order) —
// the CI failure "group g1: message 0 after 11 (order lost)" of an archive
// that said "completed". dlqctl cannot undo that order; it must say so:
// archive --delete and redrive still take every message once, and end
// partial (exit 4) naming g1 and the 9 messages handed out late.
func TestFIFOGroupOrderLostAfterALostReceiveIsReported(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	const groups, per = 3, 12
	const n = groups * per
	const want = "9 message(s) of FIFO group(s) g1 were handed out by the queue after later messages of their group"

	t.Run("archive-delete", func(t *testing.T) {
		url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fo"), groups, per)
		bucket := clitest.Bucket(t, env, "fifo")
		p, via := slowLostReceive(t, env)
		r := clitest.Run(t, via, "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "--visibility", "15s", "-o", "json")
		if lost := p.Stats().LostReceivedMessages; lost != 10 {
			t.Fatalf("the lost receive took %d messages, want 10 (the fault did not fire as planned)", lost)
		}
		if v, f := clitest.QueueDepth(t, c, url); v+f != 0 {
			t.Fatalf("archive --delete exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
		}
		if r.Code != 4 || !strings.Contains(r.Stderr, want) || strings.Contains(r.Stdout+r.Stderr, `"completed"`) {
			t.Fatalf("archive --delete: exit %d; want 4 saying %q\n%s\n%s", r.Code, want, r.Stdout, r.Stderr)
		}
		m := clitest.ArchiveManifest(t, env, bucket)
		if m.Complete || m.Totals.Records != n || m.Totals.Deleted != n || !strings.Contains(m.Note, want) {
			t.Fatalf("manifest: complete=%v records=%d deleted=%d note=%q; want all %d, not complete, saying why", m.Complete, m.Totals.Records, m.Totals.Deleted, m.Note, n)
		}
		seen := map[string]int{}
		var bodies []string
		for _, rec := range clitest.SampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
			seen[rec.Body]++
			bodies = append(bodies, rec.Body)
		}
		if len(seen) != n || len(bodies) != n {
			t.Fatalf("the archive holds %d records, %d distinct, want %d once each", len(bodies), len(seen), n)
		}
		clitest.InOrderOrSaidSo(t, "archive --delete", r, bodies) // g1 is out of order, and the run said so
	})

	t.Run("redrive", func(t *testing.T) {
		url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "for"), groups, per)
		dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "fod")+".fifo", map[string]string{"FifoQueue": "true"})
		p, via := slowLostReceive(t, env)
		r := clitest.Run(t, via, "", "redrive", url, "--to", dest, "--yes", "--visibility", "15s", "-o", "json")
		if lost := p.Stats().LostReceivedMessages; lost != 10 {
			t.Fatalf("the lost receive took %d messages, want 10 (the fault did not fire as planned)", lost)
		}
		if v, f := clitest.QueueDepth(t, c, url); v+f != 0 {
			t.Fatalf("redrive exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
		}
		var sum struct {
			Status string `json:"status"`
			Moved  int    `json:"moved"`
			Note   string `json:"note"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 4 || err != nil || sum.Moved != n || sum.Status == "completed" || !strings.Contains(sum.Note, want) {
			t.Fatalf("redrive: exit %d, status %q, moved %d of %d, note %q (%v); want exit 4, all moved, saying %q\n%s", r.Code, sum.Status, sum.Moved, n, sum.Note, err, want, r.Stderr)
		}
		got := clitest.ReceiveN(t, c, dest, n)
		if len(got) != n {
			t.Fatalf("the destination got %d messages, want %d", len(got), n)
		}
		clitest.InOrderOrSaidSo(t, "redrive", r, got)
	})
}

// TestFIFOHoldRunningOutDuringASlowDeleteIsReceivedAgainOnce: the first
// DeleteMessageBatch of the run takes 16 s (8 s to reach moto), longer than
// the 5 s visibility, and a message being deleted is not extended: the
// group's messages become visible before the delete lands, and the run
// receives them again. Each must be archived (or moved) once, deleted (the
// delete with the old handle, then once more with the new one), counted as
// a duplicate receive, and the run complete only with nothing left in the
// DLQ and every group in order.
func TestFIFOHoldRunningOutDuringASlowDeleteIsReceivedAgainOnce(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	const groups, per = 3, 12
	const n = groups * per
	slowDelete := func(t *testing.T) testenv.Env {
		p, err := faultproxy.New(env.SQSEndpoint, faultproxy.Fault{Action: "DeleteMessageBatch", Kind: faultproxy.Latency, Delay: 16 * time.Second, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		via := env
		via.SQSEndpoint = p.URL
		return via
	}

	t.Run("archive-delete", func(t *testing.T) {
		url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fs"), groups, per)
		bucket := clitest.Bucket(t, env, "fifo")
		r := clitest.Run(t, slowDelete(t), "", "archive", url, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "--visibility", "5s", "-o", "json")
		if v, f := clitest.QueueDepth(t, c, url); v+f != 0 {
			t.Fatalf("archive --delete exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
		}
		var out struct {
			Stats struct {
				Received   int `json:"received"`
				Duplicates int `json:"duplicates"`
			} `json:"stats"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Stats.Received != n || out.Stats.Duplicates == 0 {
			t.Fatalf("stats: received %d, duplicates %d (%v); want %d received and the messages received again during the slow delete counted\n%s\n%s", out.Stats.Received, out.Stats.Duplicates, err, n, r.Stdout, r.Stderr)
		}
		m := clitest.ArchiveManifest(t, env, bucket)
		var bodies []string
		for _, rec := range clitest.SampleArchive(t, env, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+archive.ManifestName) {
			bodies = append(bodies, rec.Body)
		}
		if r.Code != 0 || !m.Complete || m.Totals.Records != n || m.Totals.Deleted != n || len(bodies) != n {
			t.Fatalf("exit %d, manifest complete=%v records=%d deleted=%d, read back %d; want 0, complete, %d\n%s\n%s", r.Code, m.Complete, m.Totals.Records, m.Totals.Deleted, len(bodies), n, r.Stdout, r.Stderr)
		}
		clitest.CheckOrderPerGroup(t, bodies)
	})

	t.Run("redrive", func(t *testing.T) {
		url, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "fsr"), groups, per)
		dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "fsd")+".fifo", map[string]string{"FifoQueue": "true"})
		r := clitest.Run(t, slowDelete(t), "", "redrive", url, "--to", dest, "--yes", "--visibility", "5s", "-o", "json")
		if v, f := clitest.QueueDepth(t, c, url); v+f != 0 {
			t.Fatalf("redrive exited %d with %d visible and %d in flight left in the DLQ\n%s\n%s", r.Code, v, f, r.Stdout, r.Stderr)
		}
		var sum struct {
			Status string `json:"status"`
			Moved  int    `json:"moved"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Moved != n || sum.Status != "completed" {
			t.Fatalf("redrive: exit %d, status %q, moved %d of %d (%v)\n%s\n%s", r.Code, sum.Status, sum.Moved, n, err, r.Stdout, r.Stderr)
		}
		got := clitest.ReceiveN(t, c, dest, n)
		if len(got) != n {
			t.Fatalf("the destination got %d messages, want %d", len(got), n)
		}
		clitest.CheckOrderPerGroup(t, got)
	})
}
