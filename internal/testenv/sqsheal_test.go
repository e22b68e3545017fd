package testenv

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
)

// TestSQSHealsALostReceive: one message, one receive through a proxy that
// loses the answer of the first receive after the server handed the
// message out (the SDK retries it, and the retry finds the queue empty).
// A plain client gets nothing; a healing client (what Env.SQS gives
// straight to a stack server) waits until the message is visible again
// and returns it from the same call, whether the visibility is the
// receive's own or the queue's.
func TestSQSHealsALostReceive(t *testing.T) {
	ForEachServer(t, func(t *testing.T, e Env) {
		t.Parallel()
		direct := e.SQS(t)
		for _, tc := range []struct {
			name           string
			heal           bool
			queueVis, rcvV int32
		}{
			// Visibilities longer than the SDK's retry (a backoff of up
			// to 2 s, then the 1 s long poll): the retry cannot get the
			// message back itself.
			{"plain", false, 8, 0},
			{"healing, the receive's visibility", true, 30, 5},
			{"healing, the queue's visibility", true, 5, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				p, via := healProxy(t, e)
				url := healQueue(t, direct, "heal", map[string]string{"VisibilityTimeout": strconv.Itoa(int(tc.queueVis))})
				if _, err := direct.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m1")}); err != nil {
					t.Fatal(err)
				}
				var logs []string
				c := via.sqsClient(ctx, tc.heal, func(f string, a ...any) { logs = append(logs, f) })
				p.SetFaults(faultproxy.LostReceives(1, 1))
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: tc.rcvV})
				p.SetFaults()
				if err != nil {
					t.Fatal(err)
				}
				if got := p.Stats().LostReceivedMessages; got != 1 {
					t.Fatalf("the proxy lost %d received messages, want 1 (the fault did not fire)", got)
				}
				switch {
				case !tc.heal && len(out.Messages) != 0:
					t.Fatalf("a plain client received %d messages after its answer was lost, want 0 (the message is in flight, held by nobody)", len(out.Messages))
				case tc.heal && (len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "m1"):
					t.Fatalf("a healing client received %+v, want m1", out.Messages)
				case tc.heal && (len(logs) == 0 || !strings.Contains(logs[0], "may have lost its answer")):
					t.Fatalf("healing logged %q, want a line saying the receive may have lost its answer", logs)
				}
			})
		}
	})
}

// TestSQSHealsOnlyStraightToTheStack: Env.SQS heals on the stack's own
// endpoints, not through a proxy a test put in between.
func TestSQSHealsOnlyStraightToTheStack(t *testing.T) {
	e := Require(t)
	if !isStackSQS(e.SQSEndpoint) {
		t.Errorf("the stack's SQS endpoint %s is not recognised", e.SQSEndpoint)
	}
	p, err := faultproxy.New(e.SQSEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if isStackSQS(p.URL) {
		t.Errorf("a proxy's endpoint %s is taken for the stack's", p.URL)
	}
}

// TestSQSHealKeepsWhatTheCallGot: healing waits a visibility timeout, in
// which the messages the retried call did get would be visible again and
// received a second time; it holds them through the wait instead. Two
// messages, one received (visibility 4 s) as if by the retried attempt,
// then healed: the answer holds each message once.
func TestSQSHealKeepsWhatTheCallGot(t *testing.T) {
	ForEachServer(t, func(t *testing.T, e Env) {
		t.Parallel()
		ctx := t.Context()
		c := e.sqsClient(ctx, false, t.Logf)
		url := healQueue(t, c, "healkeep", nil)
		for _, b := range []string{"m1", "m2"} {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(b)}); err != nil {
				t.Fatal(err)
			}
		}
		in := &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 1, VisibilityTimeout: 4}
		first, err := c.ReceiveMessage(ctx, in)
		if err != nil || len(first.Messages) != 1 {
			t.Fatalf("first receive: %v, %d messages", err, len(first.Messages))
		}
		bodies := healBodies(t, c, in, first.Messages)
		sort.Strings(bodies)
		if strings.Join(bodies, ",") != "m1,m2" {
			t.Fatalf("healed answer %v, want each of m1 and m2 once", bodies)
		}
	})
}

// healBodies heals a retried receive like in, up to 10 messages, whose
// call got got, and returns the healed answer's bodies in its order.
func healBodies(t *testing.T, c *sqs.Client, in *sqs.ReceiveMessageInput, got []types.Message) []string {
	t.Helper()
	all := *in
	all.MaxNumberOfMessages = 10
	var bodies []string
	for _, m := range (healer{plain: c, logf: t.Logf}).heal(t.Context(), &all, time.Now(), got) {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies
}

// TestSQSHealKeepsAFIFOGroupsOrder: on a FIFO queue, the messages a
// retried call did get can be later ones of a group whose head the lost
// answer took (an emulator that does not lock the group meanwhile).
// Healing hands them back after the wait and reads the group again from
// its head: the answer holds the group in its order, each message once.
// On local-aws-sqs, which hands out a group's later messages while its
// head is in flight; moto locks the group as AWS does (the retry gets
// nothing), so there is nothing to put back in order.
func TestSQSHealKeepsAFIFOGroupsOrder(t *testing.T) {
	e := Require(t)
	ctx := t.Context()
	c := e.sqsClient(ctx, false, t.Logf)
	name := strings.ToLower(UniqueName(t, "healfifo")) + ".fifo"
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	url := out.QueueUrl
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: url}) })
	want := []string{"m1", "m2", "m3", "m4"}
	for _, b := range want {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(b), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	in := &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 2, WaitTimeSeconds: 1, VisibilityTimeout: 3}
	// The lost answer: the group's head, in flight, held by nobody.
	if lost, err := c.ReceiveMessage(ctx, in); err != nil || len(lost.Messages) == 0 {
		t.Fatalf("first receive: %v, %d messages", err, len(lost.Messages))
	}
	// The retry's answer: what the server hands out meanwhile (later
	// messages of the group on a server that does not lock it, none on
	// one that does).
	retry, err := c.ReceiveMessage(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	bodies := healBodies(t, c, in, retry.Messages)
	if strings.Join(bodies, ",") != strings.Join(want, ",") {
		t.Fatalf("healed answer %v (the retry got %d), want the group in order %v", bodies, len(retry.Messages), want)
	}
}

// TestSQSHealingDrainGetsWhatALostReceiveTook: a drain that holds what it
// receives (visibility 4 s), through a proxy that loses the answer of its
// first receive after the server applied it. A plain client's drain stops
// at its empty answers and misses those messages (in flight, held by
// nobody); a healing client's drain receives every message.
func TestSQSHealingDrainGetsWhatALostReceiveTook(t *testing.T) {
	ForEachServer(t, func(t *testing.T, e Env) {
		t.Parallel()
		p, via := healProxy(t, e)
		direct := e.SQS(t)
		const n, hold = 25, 4
		for _, heal := range []bool{false, true} {
			url := healQueue(t, direct, "healdrain", nil)
			for i := 0; i < n; i += 10 {
				var entries []types.SendMessageBatchRequestEntry
				for j := i; j < min(i+10, n); j++ {
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String("m" + strconv.Itoa(j))})
				}
				if _, err := direct.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries}); err != nil {
					t.Fatal(err)
				}
			}
			c := via.sqsClient(t.Context(), heal, t.Logf)
			p.SetFaults(faultproxy.LostReceives(1, 1))
			seen := map[string]bool{}
			for empty := 0; empty < 2 && len(seen) < n; {
				out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: hold, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Messages) == 0 {
					empty++
					continue
				}
				empty = 0
				for _, m := range out.Messages {
					seen[aws.ToString(m.Body)] = true
				}
			}
			p.SetFaults()
			switch {
			case !heal && len(seen) == n:
				t.Fatalf("without healing the drain got all %d: the proxy lost no receive, the test shows nothing", n)
			case heal && len(seen) != n:
				t.Errorf("with healing the drain got %d of %d", len(seen), n)
			}
		}
	})
}

// healProxy is a faultproxy in front of e's SQS server (closed with the
// test) and e pointed at it.
func healProxy(t *testing.T, e Env) (*faultproxy.Proxy, Env) {
	t.Helper()
	p, err := faultproxy.New(e.SQSEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	via := e
	via.SQSEndpoint = p.URL
	return p, via
}

// healQueue creates a queue (deleted when the test ends) and returns its URL.
func healQueue(t *testing.T, c *sqs.Client, name string, attrs map[string]string) *string {
	t.Helper()
	q, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(UniqueName(t, name)), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	return q.QueueUrl
}
