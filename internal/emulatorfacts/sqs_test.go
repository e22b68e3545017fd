package emulatorfacts

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

const (
	local = testenv.KindLocal
	moto  = testenv.KindMoto
)

// TestFIFOGroupLocking: 3 messages in group A and 1 in group B; receive one
// message (A1) and keep it in flight; what does the next receive return?
// AWS: nothing more from group A while A1 is in flight.
func TestFIFOGroupLocking(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "lock", true, nil)
		for _, b := range []string{"A1", "A2", "A3"} {
			send(t, c, q, b, "A")
		}
		send(t, c, q, "B1", "B")
		first := bodies(receive(t, c, q, 1, 30))
		second := bodies(receive(t, c, q, 10, 30))
		expect(t, e, "first receive (max 1)", first, both([]string{"A1"}))
		expect(t, e, "second receive while A1 is in flight", second, map[testenv.Kind]any{
			local: []string{"A2", "A3", "B1"},
			moto:  []string{"B1"},
		})
	})
}

// TestFIFOOneReceiveReturnsAWholeGroup: on a fresh FIFO queue, one receive
// of up to 10 returns several messages of the same group (AWS does too).
func TestFIFOOneReceiveReturnsAWholeGroup(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "grp", true, nil)
		for _, b := range []string{"A1", "A2", "A3"} {
			send(t, c, q, b, "A")
		}
		expect(t, e, "receive max 10 from one group", bodies(receive(t, c, q, 10, 30)), both([]string{"A1", "A2", "A3"}))
	})
}

// TestRedrivePolicyDeadLetters: a source queue with maxReceiveCount 2.
// Receive and release (ChangeMessageVisibility 0) until the message leaves;
// then look at it in the DLQ. On local-aws-sqs the release itself counts as
// a receive (TestChangeVisibilityAndReceiveCount), so the message leaves
// after one receive.
func TestRedrivePolicyDeadLetters(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		dlq := mkQueue(t, c, "dlq", false, nil)
		rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlq.ARN, "maxReceiveCount": 2})
		src := mkQueue(t, c, "src", false, map[string]string{"RedrivePolicy": string(rp)})
		send(t, c, src, "poison", "")
		var sent string
		returned := 0
		for range 5 {
			ms := receive(t, c, src, 1, 30)
			if len(ms) == 0 {
				break
			}
			returned++
			sent = ms[0].Attributes["SentTimestamp"]
			if _, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(src.URL), ReceiptHandle: ms[0].ReceiptHandle}); err != nil {
				must(t, err)
			}
		}
		expect(t, e, "receives (each followed by a release) that returned the message (maxReceiveCount 2)", returned, map[testenv.Kind]any{local: 1, moto: 2})
		ms := receive(t, c, dlq, 1, 30)
		if len(ms) != 1 {
			t.Fatalf("DLQ holds %d messages, want the dead-lettered one", len(ms))
		}
		a := ms[0].Attributes
		_, hasSrc := a["DeadLetterQueueSourceArn"]
		expect(t, e, "DeadLetterQueueSourceArn set", hasSrc, map[testenv.Kind]any{local: true, moto: false})
		if hasSrc && a["DeadLetterQueueSourceArn"] != src.ARN {
			t.Errorf("DeadLetterQueueSourceArn = %q, want %q", a["DeadLetterQueueSourceArn"], src.ARN)
		}
		expect(t, e, "ApproximateReceiveCount of the first receive from the DLQ", a["ApproximateReceiveCount"], map[testenv.Kind]any{local: "1", moto: "3"})
		expect(t, e, "SentTimestamp kept from the source queue", a["SentTimestamp"] == sent, map[testenv.Kind]any{local: false, moto: true})
	})
}

// TestApproximateCounts: 5 sent, 2 received and in flight.
func TestApproximateCounts(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "cnt", false, nil)
		for range 5 {
			send(t, c, q, "m", "")
		}
		if n := len(receive(t, c, q, 2, 30)); n != 2 {
			t.Fatalf("received %d, want 2", n)
		}
		v, nv := queueCounts(t, c, q)
		expect(t, e, "ApproximateNumberOfMessages, ...NotVisible (5 sent, 2 in flight)", [2]int{v, nv}, map[testenv.Kind]any{
			local: [2]int{5, 2},
			moto:  [2]int{3, 2},
		})
	})
}

// TestChangeVisibilityAndReceiveCount: receive, release with
// ChangeMessageVisibility 0, receive again. On AWS and moto the count goes
// 1 → 2; local-aws-sqs counts every ChangeMessageVisibility call (a
// heartbeat too) as a receive: 1 → 3. The message is visible at once.
func TestChangeVisibilityAndReceiveCount(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "cmv", false, nil)
		send(t, c, q, "m", "")
		// The first receive is not the fact under test: under load a short
		// poll right after the send can come back empty (moto), so poll
		// for it for a while.
		var ms []sqstypes.Message
		for start := time.Now(); len(ms) == 0 && time.Since(start) < 10*time.Second; {
			ms = receive(t, c, q, 1, 30)
		}
		if len(ms) != 1 {
			t.Fatal("no message within 10 s of sending it")
		}
		first := ms[0].Attributes["ApproximateReceiveCount"]
		if _, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: ms[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			must(t, err)
		}
		released := time.Now()
		var again []sqstypes.Message
		tries := 0
		for len(again) == 0 && time.Since(released) < 5*time.Second {
			tries++
			again = receive(t, c, q, 1, 30)
		}
		t.Logf("visible again after %v (%d short polls)", time.Since(released).Round(time.Millisecond), tries)
		expect(t, e, "visible on the first receive after ChangeMessageVisibility 0", tries == 1 && len(again) == 1, both(true))
		if len(again) == 1 {
			expect(t, e, "ApproximateReceiveCount before/after a release", first+"→"+again[0].Attributes["ApproximateReceiveCount"], map[testenv.Kind]any{local: "1→3", moto: "1→2"})
		}
		if len(again) == 0 {
			t.Fatalf("the released message was not received again within 5 s")
		}
		// Two heartbeats (extend to 10 s, then 20 s) and a release.
		h := again[0].ReceiptHandle
		for _, v := range []int32{10, 20, 0} {
			if _, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: h, VisibilityTimeout: v}); err != nil {
				must(t, err)
			}
		}
		ms = receive(t, c, q, 1, 30)
		if len(ms) == 1 {
			expect(t, e, "ApproximateReceiveCount after 2 heartbeats, a release and a receive (was 2 or 3)", ms[0].Attributes["ApproximateReceiveCount"], map[testenv.Kind]any{local: "7", moto: "3"})
		}
	})
}

// TestSupersededReceiptHandle: receive (h1), release, receive again (h2),
// delete with h1. AWS documents that a delete with an out-of-date handle can
// succeed without deleting.
func TestSupersededReceiptHandle(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "old", false, nil)
		send(t, c, q, "m", "")
		h1 := receive(t, c, q, 1, 30)[0].ReceiptHandle
		if _, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: h1}); err != nil {
			must(t, err)
		}
		ms := receive(t, c, q, 1, 30)
		if len(ms) != 1 {
			t.Fatal("not received again")
		}
		h2 := ms[0].ReceiptHandle
		_, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: h1})
		expect(t, e, "DeleteMessage with the superseded handle: error code", code(err), both(""))
		v, nv := queueCounts(t, c, q)
		expect(t, e, "message still in the queue after that delete", v+nv == 1, both(false))
		_, err = c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: h2, VisibilityTimeout: 0})
		expect(t, e, "ChangeMessageVisibility with the current handle afterwards: error code", code(err), both("ReceiptHandleIsInvalid"))
	})
}

// TestInvalidReceiptHandleError: what a bad handle's error says. AWS echoes
// the handle in the message text, so dlqctl never prints such errors raw.
func TestInvalidReceiptHandleError(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "bad", false, nil)
		const handle = "dlqctl-bogus-receipt-handle-0123456789"
		_, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: aws.String(handle)})
		t.Logf("DeleteMessage error on %s: %v", e.Kind, err)
		expect(t, e, "DeleteMessage(bad handle) code", code(err), both("ReceiptHandleIsInvalid"))
		expect(t, e, "DeleteMessage(bad handle) message echoes the handle", strings.Contains(message(err), handle), map[testenv.Kind]any{local: true, moto: false})
		_, err = c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: aws.String(handle)})
		t.Logf("ChangeMessageVisibility error on %s: %v", e.Kind, err)
		expect(t, e, "ChangeMessageVisibility(bad handle) code", code(err), both("ReceiptHandleIsInvalid"))
		expect(t, e, "ChangeMessageVisibility(bad handle) message echoes the handle", strings.Contains(message(err), handle), map[testenv.Kind]any{local: true, moto: false})
		out, err := c.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String(handle)}}})
		var got string
		if err != nil {
			got = "call error " + code(err)
		} else if len(out.Failed) == 1 {
			got = "entry " + aws.ToString(out.Failed[0].Code)
			t.Logf("DeleteMessageBatch entry on %s: %s", e.Kind, aws.ToString(out.Failed[0].Message))
			expect(t, e, "DeleteMessageBatch(bad handle) entry message echoes the handle", strings.Contains(aws.ToString(out.Failed[0].Message), handle), both(true))
		}
		expect(t, e, "DeleteMessageBatch(bad handle)", got, both("entry ReceiptHandleIsInvalid"))
	})
}

// TestSystemAttributeNames: ReceiveMessage asking for attributes with only
// the newer MessageSystemAttributeNames, or only the older AttributeNames.
func TestSystemAttributeNames(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "attr", false, nil)
		send(t, c, q, "m1", "")
		send(t, c, q, "m2", "")
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		must(t, err)
		if len(out.Messages) != 1 {
			t.Fatalf("%v %v", err, out)
		}
		_, has := out.Messages[0].Attributes["ApproximateReceiveCount"]
		expect(t, e, "MessageSystemAttributeNames=[All] alone returns attributes", has, map[testenv.Kind]any{local: false, moto: true})
		out, err = c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1,
			AttributeNames: []sqstypes.QueueAttributeName{"All"}})
		must(t, err)
		if len(out.Messages) != 1 {
			t.Fatalf("%v %v", err, out)
		}
		_, has = out.Messages[0].Attributes["ApproximateReceiveCount"]
		expect(t, e, "AttributeNames=[All] alone returns attributes", has, both(true))
	})
}

// TestSendMessageBatchFailures: a character AWS rejects (NUL), an entry
// with DelaySeconds over 900 between good ones, and the batch limits.
func TestSendMessageBatchFailures(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "batch", false, nil)
		out, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
			{Id: aws.String("0"), MessageBody: aws.String("good")},
			{Id: aws.String("1"), MessageBody: aws.String("bad \x00 char")},
			{Id: aws.String("2"), MessageBody: aws.String("good")},
		}})
		var got string
		if err != nil {
			got = "call error " + code(err)
		} else {
			got = "ok " + itoa(len(out.Successful))
			for _, f := range out.Failed {
				got += " failed " + aws.ToString(f.Id) + " " + aws.ToString(f.Code)
			}
		}
		expect(t, e, "batch with a NUL character in one body", got, both("ok 3"))
		out, err = c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
			{Id: aws.String("0"), MessageBody: aws.String("good")},
			{Id: aws.String("1"), MessageBody: aws.String("late"), DelaySeconds: 901},
		}})
		if err != nil {
			got = "call error " + code(err)
		} else {
			got = "ok " + itoa(len(out.Successful))
			for _, f := range out.Failed {
				got += " failed " + aws.ToString(f.Id) + " " + aws.ToString(f.Code)
			}
		}
		expect(t, e, "batch with DelaySeconds 901 in one entry", got, map[testenv.Kind]any{
			local: "ok 1 failed 1 InvalidParameterValue",
			// moto answers SenderFault as the string "true": the SDK cannot
			// decode the response, although the good entry was enqueued.
			moto: "call error HTTP 200, undecodable body",
		})
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := range 11 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(itoa(i)), MessageBody: aws.String("m")})
		}
		_, err = c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		expect(t, e, "batch of 11 entries", code(err), both("AWS.SimpleQueueService.TooManyEntriesInBatchRequest"))
		big := strings.Repeat("x", 120<<10)
		entries = nil
		for i := range 10 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(itoa(i)), MessageBody: aws.String(big)})
		}
		_, err = c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		expect(t, e, "batch of 10 × 120 KiB (over 1 MiB)", code(err), both("AWS.SimpleQueueService.BatchRequestTooLong"))
		_, err = c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(strings.Repeat("x", 1<<20+1))})
		expect(t, e, "one message of 1 MiB + 1 byte", code(err), both("InvalidParameterValue"))
		attrs := map[string]sqstypes.MessageAttributeValue{}
		for i := range 11 {
			attrs["a"+itoa(i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		_, err = c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("m"), MessageAttributes: attrs})
		expect(t, e, "11 message attributes", code(err), map[testenv.Kind]any{local: "InvalidParameterValue", moto: ""})
	})
}

// TestVisibilityLimit: a visibility timeout over 12 hours.
func TestVisibilityLimit(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "vis", false, nil)
		send(t, c, q, "m", "")
		ms := receive(t, c, q, 1, 30)
		_, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: ms[0].ReceiptHandle, VisibilityTimeout: 43201})
		expect(t, e, "ChangeMessageVisibility 43201 s", code(err), both("InvalidParameterValue"))
	})
}

// TestMoveTask: StartMessageMoveTask from a DLQ back to its source (no
// DestinationArn: the source is taken from DeadLetterQueueSourceArn).
func TestMoveTask(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		dlq := mkQueue(t, c, "mvdlq", false, nil)
		rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlq.ARN, "maxReceiveCount": 1})
		src := mkQueue(t, c, "mvsrc", false, map[string]string{"RedrivePolicy": string(rp)})
		send(t, c, src, "poison", "")
		for range 3 {
			ms := receive(t, c, src, 1, 30)
			if len(ms) == 0 {
				break
			}
			c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(src.URL), ReceiptHandle: ms[0].ReceiptHandle})
		}
		_, err := c.StartMessageMoveTask(t.Context(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)})
		t.Logf("StartMessageMoveTask (to source) on %s: %v", e.Kind, err)
		// moto 5.2.1 does not implement move tasks: HTTP 500 with an HTML
		// page (the SDK retries it 3 times first).
		expect(t, e, "StartMessageMoveTask without DestinationArn", code(err), map[testenv.Kind]any{local: "", moto: "HTTP 500, undecodable body"})
		_, err = c.ListMessageMoveTasks(t.Context(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.ARN)})
		expect(t, e, "ListMessageMoveTasks", code(err), map[testenv.Kind]any{local: "", moto: "HTTP 500, undecodable body"})
		if e.Kind == local {
			_, err = c.StartMessageMoveTask(t.Context(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN), DestinationArn: aws.String(src.ARN)})
			expect(t, e, "a second StartMessageMoveTask while one runs", code(err), both("InvalidParameterValue"))
		}
	})
}

// TestLongPollOnEmptyQueue: WaitTimeSeconds 1 on an empty queue waits.
func TestLongPollOnEmptyQueue(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "lp", false, nil)
		start := time.Now()
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), WaitTimeSeconds: 1})
		if err != nil {
			must(t, err)
		}
		d := time.Since(start)
		t.Logf("empty long poll of 1 s on %s returned %d messages after %v", e.Kind, len(out.Messages), d.Round(time.Millisecond))
		expect(t, e, "empty long poll waits about WaitTimeSeconds", d >= 900*time.Millisecond, both(true))
	})
}

func itoa(i int) string { return strconv.Itoa(i) }
