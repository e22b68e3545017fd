package sqs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

func mkQueue(t *testing.T, e testenv.Env, fifo bool) (*awssqs.Client, *sqs.Client, *sqs.Queue) {
	t.Helper()
	api := e.SQS(t)
	name := testenv.UniqueName(t, "lease")
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
		attrs["ContentBasedDeduplication"] = "true"
	}
	ctx := context.Background()
	out, err := api.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = api.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	c := sqs.New(api, e.Region)
	q, err := c.Resolve(ctx, aws.ToString(out.QueueUrl))
	if err != nil {
		t.Fatal(err)
	}
	return api, c, q
}

func send(t *testing.T, api *awssqs.Client, q *sqs.Queue, bodies ...string) {
	t.Helper()
	var entries []types.SendMessageBatchRequestEntry
	for i, b := range bodies {
		e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(b)}
		if q.FIFO {
			e.MessageGroupId = aws.String("g-" + b) // one group each: all receivable at once
		}
		entries = append(entries, e)
		if len(entries) == 10 || i == len(bodies)-1 {
			out, err := api.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("send: %v %v", err, out)
			}
			entries = nil
		}
	}
}

// receiveAll receives until n messages (by id) were received or the queue
// stays empty for a few polls.
func receiveAll(t *testing.T, c *sqs.Client, q *sqs.Queue, n int, vis time.Duration) map[string]*sqs.Message {
	t.Helper()
	got := map[string]*sqs.Message{}
	for empty := 0; len(got) < n && empty < 3; {
		msgs, err := c.Receive(context.Background(), q, 10, vis, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			empty++
		}
		for _, m := range msgs {
			got[m.Body] = m
		}
	}
	return got
}

// TestSupersededHandleOnRealServers receives two messages, lets their
// visibility run out and receives them again (new receipt handles), then:
// deletes A with its first, superseded handle straight through the API
// (recording what the server does: AWS may answer success without
// deleting), and B through a Lease given B's FIRST copy. The lease must
// delete B with the newest handle on every server.
func TestSupersededHandleOnRealServers(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		kind := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(kind, func(t *testing.T) {
			testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
				api, c, q := mkQueue(t, e, fifo)
				ctx := context.Background()
				send(t, api, q, "A", "B")
				first := receiveAll(t, c, q, 2, time.Second)
				if len(first) != 2 {
					t.Fatalf("received %d of 2", len(first))
				}
				l := sqs.NewLease(c, q, 30*time.Second)
				l.Add(first["B"])
				time.Sleep(2500 * time.Millisecond) // both visible again
				again := receiveAll(t, c, q, 2, 30*time.Second)
				// A loaded server (moto under a parallel test run) may make
				// them visible late: keep looking for a while before
				// deciding they did not come back.
				for try := 0; len(again) < 2 && try < 5; try++ {
					for k, m := range receiveAll(t, c, q, 2-len(again), 30*time.Second) {
						again[k] = m
					}
				}
				if len(again) != 2 || again["A"].ReceiptHandle == first["A"].ReceiptHandle {
					t.Fatalf("received again %d of 2 (new handles: %v)", len(again), len(again) == 2)
				}
				if red := l.Add(again["B"]); len(red) != 1 {
					t.Fatalf("redelivered %v; want B", red)
				}

				// What the server does with a superseded handle, through the
				// client (so its error is the one dlqctl would report).
				failed, err := c.Delete(ctx, q, []*sqs.Message{first["A"]})
				if err != nil {
					t.Fatal(err)
				}
				staleErr := failed[first["A"]]
				if staleErr != nil && (strings.Contains(staleErr.Error(), first["A"].ReceiptHandle) || !errors.Is(staleErr, sqs.ErrLeaseLost)) {
					t.Fatalf("stale delete error: %v; want ErrLeaseLost without the handle", staleErr)
				}
				// Did it delete A? Make A's newest handle visible and look.
				if _, err := c.ChangeVisibility(ctx, q, []*sqs.Message{again["A"]}, 0); err != nil {
					t.Fatal(err)
				}

				// The lease deletes B although given B's first copy.
				if res := l.Delete(ctx, []*sqs.Message{first["B"]}); len(res) != 0 {
					t.Fatalf("Lease.Delete(first copy of B) = %v", res)
				}
				left := receiveAll(t, c, q, 2, 30*time.Second)
				if _, ok := left["B"]; ok {
					t.Fatal("B is still in the queue after Lease.Delete")
				}
				_, aLeft := left["A"]
				t.Logf("%s %s: delete with a superseded handle -> error %v; message deleted: %v", e.Kind, kind, staleErr, !aLeft)
				// Server facts (AWS: may succeed WITHOUT deleting; the unit
				// tests' fake does that). local-aws-sqs standard and moto
				// (both types) delete by message id whatever the handle's
				// age; local-aws-sqs FIFO rejects it ("The receipt handle
				// has expired").
				checks := e.Kind == testenv.KindLocal && fifo
				if checks != (staleErr != nil) || checks == !aLeft {
					t.Fatalf("%s %s: superseded-handle delete error=%v, deleted=%v; the server's behaviour changed (update this test and docs)", e.Kind, kind, staleErr, !aLeft)
				}
			})
		})
	}
}

// TestLostLeaseOnRealServers: our handle goes stale because another
// consumer received the message after our visibility ran out. The next
// extension tells the lease (on servers that check handles), and then the
// lease neither deletes nor releases the other consumer's message.
func TestLostLeaseOnRealServers(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		kind := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(kind, func(t *testing.T) {
			testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
				api, c, q := mkQueue(t, e, fifo)
				ctx := context.Background()
				send(t, api, q, "M")
				mine := receiveAll(t, c, q, 1, time.Second)["M"]
				l := sqs.NewLease(c, q, 30*time.Second)
				var lostErr error
				l.OnLost = func(_ *sqs.Message, err error) { lostErr = err }
				l.Add(mine)
				time.Sleep(2500 * time.Millisecond)
				theirs := receiveAll(t, c, q, 1, 30*time.Second)["M"]
				if theirs == nil {
					t.Fatal("the other consumer did not receive M")
				}
				sqs.ExtendLease(l, ctx)
				lost := sqs.LeaseIsLost(l, mine.MessageID)
				errText := ""
				if lostErr != nil {
					errText = lostErr.Error()
				}
				res := l.Delete(ctx, []*sqs.Message{mine})
				t.Logf("%s %s: extension with a superseded handle -> lost=%v (%s); lease delete -> %v", e.Kind, kind, lost, errText, res[mine])
				// Server facts: only local-aws-sqs FIFO checks the handle on
				// a visibility change (as AWS does); local-aws-sqs standard
				// and moto apply it to whoever holds the message now, so on
				// them the lease cannot see the loss (nor can any client).
				if checks := e.Kind == testenv.KindLocal && fifo; checks != lost {
					t.Fatalf("%s %s: lost=%v; the server's behaviour changed (update this test and docs)", e.Kind, kind, lost)
				}
				if !lost {
					return
				}
				if strings.Contains(errText, mine.ReceiptHandle) || !strings.Contains(errText, sqs.ScrubbedHandle) || sqs.LeaseHolds(l, mine.MessageID) {
					t.Fatalf("OnLost error %q (held %v): want it scrubbed and the message no longer held", errText, sqs.LeaseHolds(l, mine.MessageID))
				}
				if !errors.Is(res[mine], sqs.ErrLeaseLost) {
					t.Fatalf("Lease.Delete of a lost message = %v; want ErrLeaseLost", res[mine])
				}
				// The lease did not delete it: the other consumer still can.
				if failed, err := c.Delete(ctx, q, []*sqs.Message{theirs}); err != nil || len(failed) != 0 {
					t.Fatalf("other consumer's delete: %v %v", failed, err)
				}
				if again := receiveAll(t, c, q, 1, 30*time.Second); len(again) != 0 {
					t.Fatalf("message still in the queue after its holder deleted it: %v", again)
				}
			})
		})
	}
}

// TestHeldMessagesOverASlowLink: 2,000 messages held over a link adding
// 40 ms per call are extended, half deleted and the rest released, and
// nothing is left in flight (one batch after another this took 2 x 200
// calls x 40 ms and fell behind short visibilities).
func TestHeldMessagesOverASlowLink(t *testing.T) {
	e := testenv.Require(t)
	api, c, q := mkQueue(t, e, false)
	ctx := context.Background()
	const n = 2000
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("m%04d", i)
	}
	send(t, api, q, bodies...)
	held := receiveAll(t, c, q, n, 2*time.Minute)
	if len(held) != n {
		t.Fatalf("received %d of %d", len(held), n)
	}

	px, err := faultproxy.New(e.SQSEndpoint, faultproxy.Fault{Kind: faultproxy.Latency, Delay: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	slow := sqs.New(awssqs.NewFromConfig(e.AWSConfig(ctx), func(o *awssqs.Options) { o.BaseEndpoint = aws.String(px.URL) }), e.Region)
	l := sqs.NewLease(slow, q, 2*time.Minute)
	var msgs []*sqs.Message
	for _, m := range held {
		msgs = append(msgs, m)
	}
	l.Add(msgs...)

	start := time.Now()
	sqs.ExtendLease(l, ctx)
	extendTook := time.Since(start)
	extendCalls := px.Stats().Requests["ChangeMessageVisibilityBatch"]
	if l.Lost() != 0 || l.Len() != n {
		t.Fatalf("after extension: %d lost, %d held", l.Lost(), l.Len())
	}
	start = time.Now()
	if res := l.Delete(ctx, msgs[:n/2]); len(res) != 0 {
		t.Fatalf("delete: %d failures", len(res))
	}
	deleteTook := time.Since(start)
	start = time.Now()
	if err := l.ReleaseAll(ctx); err != nil {
		t.Fatal(err)
	}
	releaseTook := time.Since(start)
	st := px.Stats()
	t.Logf("2,000 held at +40 ms/call: extend %v (%d calls), delete 1,000 %v (%d calls), release 1,000 %v",
		extendTook.Round(time.Millisecond), extendCalls, deleteTook.Round(time.Millisecond), st.Requests["DeleteMessageBatch"], releaseTook.Round(time.Millisecond))

	// Everything not deleted is visible again (the emulator applies
	// visibility 0 on its next timer tick: read until it settles).
	var left map[string]*sqs.Message
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Refresh(ctx, q); err != nil {
			t.Fatal(err)
		}
		if q.Counts().InFlight == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if inflight := q.Counts().InFlight; inflight != 0 {
		t.Fatalf("%d messages still in flight after ReleaseAll", inflight)
	}
	left = receiveAll(t, c, q, n, time.Minute)
	if len(left) != n/2 {
		t.Fatalf("%d messages left; want the %d released", len(left), n/2)
	}
	for _, m := range msgs[:n/2] {
		if _, ok := left[m.Body]; ok {
			t.Fatalf("%s was deleted through the lease but is still in the queue", m.Body)
		}
	}
}
