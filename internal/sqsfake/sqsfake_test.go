package sqsfake_test

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

	"github.com/dlqctl/dlqctl/internal/sqsfake"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

var _ sqs.API = (*sqsfake.SQS)(nil)

var ctx = context.Background()

func receive(t *testing.T, f *sqsfake.SQS, url string, n, vis, wait int32) []types.Message {
	t.Helper()
	out, err := f.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: n,
		VisibilityTimeout: vis, WaitTimeSeconds: wait, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func bodies(ms []types.Message) string {
	var b []string
	for _, m := range ms {
		b = append(b, aws.ToString(m.Body))
	}
	return strings.Join(b, " ")
}

func attrs(t *testing.T, f *sqsfake.SQS, url string) map[string]string {
	t.Helper()
	out, err := f.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes
}

func del(t *testing.T, f *sqsfake.SQS, url string, ms ...types.Message) *awssqs.DeleteMessageBatchOutput {
	t.Helper()
	var es []types.DeleteMessageBatchRequestEntry
	for i, m := range ms {
		es = append(es, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	out, err := f.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: es})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFIFOGroupLocking: AWS returns no message of a group while another of
// it is in flight; one receive may return several of a group, in order.
func TestFIFOGroupLocking(t *testing.T) {
	f := sqsfake.New(sqsfake.Options{WaitScale: -1})
	url := f.AddQueue("q.fifo", true, nil)
	f.Send(url, sqsfake.Message{Body: "a1", GroupID: "a"}, sqsfake.Message{Body: "b1", GroupID: "b"},
		sqsfake.Message{Body: "a2", GroupID: "a"}, sqsfake.Message{Body: "a3", GroupID: "a"}, sqsfake.Message{Body: "b2", GroupID: "b"})
	first := receive(t, f, url, 2, 30, 0)
	if got := bodies(first); got != "a1 b1" {
		t.Fatalf("first receive %q", got)
	}
	if got := bodies(receive(t, f, url, 10, 30, 0)); got != "" {
		t.Fatalf("both groups are locked, got %q", got)
	}
	del(t, f, url, first[0]) // a1 done: a unlocks, b stays locked behind b1
	second := receive(t, f, url, 10, 30, 0)
	if got := bodies(second); got != "a2 a3" {
		t.Fatalf("second receive %q; want a's next messages in order", got)
	}
	m := second[0].Attributes
	if m["MessageGroupId"] != "a" || m["SequenceNumber"] == "" || m["ApproximateReceiveCount"] != "1" || m["SentTimestamp"] == "" {
		t.Fatalf("system attributes %v", m)
	}
	a := attrs(t, f, url)
	if a["ApproximateNumberOfMessages"] != "1" || a["ApproximateNumberOfMessagesNotVisible"] != "3" || a["FifoQueue"] != "true" ||
		a["QueueArn"] != "arn:aws:sqs:us-east-1:123456789012:q.fifo" || a["VisibilityTimeout"] != "30" {
		t.Fatalf("attributes %v; want 1 visible (b2, locked) and 3 in flight", a)
	}
	// Releasing b1 (visibility 0) unlocks b; b1 comes again before b2.
	_, err := f.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url),
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: first[1].ReceiptHandle}}})
	if err != nil {
		t.Fatal(err)
	}
	third := receive(t, f, url, 10, 30, 0)
	if got := bodies(third); got != "b1 b2" || third[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after release %q %v", got, third[0].Attributes)
	}
}

// TestStaleHandles: a delete with a superseded handle succeeds without
// deleting (AWS may); an unknown handle fails, echoing the handle.
func TestStaleHandles(t *testing.T) {
	f := sqsfake.New(sqsfake.Options{WaitScale: -1})
	url := f.AddQueue("q", false, nil)
	f.Put(url, "m1")
	old := receive(t, f, url, 1, 30, 0)
	f.Expire(url, "m1")
	cur := receive(t, f, url, 1, 30, 0)
	if out := del(t, f, url, old...); len(out.Successful) != 1 || f.Deleted(url, "m1") {
		t.Fatalf("stale delete: %+v deleted=%v; want success without deleting", out, f.Deleted(url, "m1"))
	}
	f.ForgetHandle(aws.ToString(cur[0].ReceiptHandle))
	out := del(t, f, url, cur...)
	if len(out.Failed) != 1 || aws.ToString(out.Failed[0].Code) != "ReceiptHandleIsInvalid" ||
		!strings.Contains(aws.ToString(out.Failed[0].Message), aws.ToString(cur[0].ReceiptHandle)) {
		t.Fatalf("unknown handle: %+v", out.Failed)
	}
}

// TestSendBatchDedupAndPerEntryResults: FIFO sends need a group; a repeated
// deduplication id within 5 minutes is answered with the first message's id
// and not enqueued; per-entry failures do not fail the call.
func TestSendBatchDedupAndPerEntryResults(t *testing.T) {
	f := sqsfake.New(sqsfake.Options{})
	url := f.AddQueue("q.fifo", true, nil)
	entry := func(id, body, group, dedup string) types.SendMessageBatchRequestEntry {
		e := types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(body), MessageDeduplicationId: aws.String(dedup)}
		if group != "" {
			e.MessageGroupId = aws.String(group)
		}
		return e
	}
	out, err := f.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		entry("0", "x", "g", "d1"), entry("1", "x again", "g", "d1"), entry("2", "no group", "", "d2"), entry("3", "y", "g", "d3")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 3 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "2" {
		t.Fatalf("send: %+v", out)
	}
	if aws.ToString(out.Successful[0].MessageId) != aws.ToString(out.Successful[1].MessageId) {
		t.Fatal("a duplicate send must be answered with the first message's id")
	}
	if ms := f.Messages(url); len(ms) != 2 || ms[0].Body != "x" || ms[1].Body != "y" || ms[0].SequenceNumber >= ms[1].SequenceNumber {
		t.Fatalf("queue holds %+v", ms)
	}
	many := make([]types.SendMessageBatchRequestEntry, 11)
	for i := range many {
		many[i] = entry(fmt.Sprint(i), "z", "g", fmt.Sprint("z", i))
	}
	var tooMany *types.TooManyEntriesInBatchRequest
	if _, err := f.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: many}); !errors.As(err, &tooMany) {
		t.Fatalf("11 entries: %v", err)
	}
}

// TestLostReceive: the lost answer's messages stay in flight (the caller
// sees the SDK's retried receive), and come back when their visibility
// ends, received once more.
func TestLostReceive(t *testing.T) {
	f := sqsfake.New(sqsfake.Options{WaitScale: -1})
	url := f.AddQueue("q", false, nil)
	f.Put(url, "a", "b", "c")
	f.LoseReceives(50*time.Millisecond, 1)
	got := receive(t, f, url, 2, 30, 0)
	if bodies(got) != "body of c" || f.LostMessages() != 2 || f.CallCount(sqsfake.OpReceive) != 2 {
		t.Fatalf("got %q, lost %d, calls %d", bodies(got), f.LostMessages(), f.CallCount(sqsfake.OpReceive))
	}
	if c := f.Counts(url); c.InFlight != 3 {
		t.Fatalf("counts %+v", c)
	}
	time.Sleep(60 * time.Millisecond)
	back := receive(t, f, url, 10, 30, 0)
	if bodies(back) != "body of a body of b" || back[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("back %q %v", bodies(back), back[0].Attributes)
	}
}

// TestLongPollWaitsScaled: an empty receive waits WaitTimeSeconds ×
// WaitScale, and returns as soon as a message becomes visible.
func TestLongPollWaitsScaled(t *testing.T) {
	f := sqsfake.New(sqsfake.Options{WaitScale: 0.05})
	url := f.AddQueue("q", false, nil)
	start := time.Now()
	if got := receive(t, f, url, 10, 30, 2); len(got) != 0 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("empty long poll of 2 s × 0.05 returned after %v", time.Since(start))
	}
	f.Put(url, "a")
	held := receive(t, f, url, 1, 30, 0)
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.Expire(url, aws.ToString(held[0].MessageId))
	}()
	if got := receive(t, f, url, 10, 30, 20); bodies(got) != "body of a" {
		t.Fatalf("long poll got %q", bodies(got))
	}
}

// TestCountsIncludeInFlightImitatesTheEmulator: with the option,
// ApproximateNumberOfMessages counts in-flight messages as local-aws-sqs
// does, and a sqs.Client told so subtracts them.
func TestCountsIncludeInFlightImitatesTheEmulator(t *testing.T) {
	for _, inc := range []bool{false, true} {
		f := sqsfake.New(sqsfake.Options{CountsIncludeInFlight: inc})
		url := f.AddQueue("q", false, nil)
		f.Put(url, "a", "b", "c")
		f.Take(url, 1, time.Minute)
		want := map[bool]string{false: "2", true: "3"}[inc]
		if a := attrs(t, f, url); a["ApproximateNumberOfMessages"] != want || a["ApproximateNumberOfMessagesNotVisible"] != "1" {
			t.Fatalf("include=%v: %v", inc, a)
		}
	}
}
