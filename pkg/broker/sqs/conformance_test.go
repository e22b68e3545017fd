package sqs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/brokertest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// TestConformance runs the broker conformance suite against SQS on both
// servers of the stack: local-aws-sqs and moto_server.
func TestConformance(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		brokertest.Run(t, &sqsHarness{env: e, api: e.SQS(t)})
	})
}

// unpublishable marks a body the harness's SQS refuses per entry (through
// a fault proxy: neither emulator validates message contents).
const unpublishable = "dlqctl-conformance-unpublishable"

type sqsHarness struct {
	env testenv.Env
	api *awssqs.Client // direct: what a producer or an operator would use

	mu      sync.Mutex
	proxies map[broker.Source]*faultproxy.Proxy
}

func (h *sqsHarness) Name() string { return "sqs/" + string(h.env.Kind) }

func (h *sqsHarness) Features() brokertest.Features {
	// Only local-aws-sqs checks receipt handles as AWS does (on FIFO
	// queues): moto applies a stale handle to whoever holds the message
	// now, so no client can see a lost lease there (docs/emulators.md).
	return brokertest.Features{LosableHold: h.env.Kind == testenv.KindLocal, PerEntryRejection: true, HeaderTypes: []string{"String", "Number", "Binary"}}
}

// endpoint is an SQS endpoint whose sources each talk to SQS through their
// own proxy (so Crash can cut one off as kill -9 would) and whose
// publisher refuses unpublishable bodies per entry.
type endpoint struct {
	*sqs.Endpoint
	h *sqsHarness
	t *testing.T
}

func (h *sqsHarness) client(t *testing.T, faults ...faultproxy.Fault) (*sqs.Client, *faultproxy.Proxy) {
	p, err := faultproxy.New(h.env.SQSEndpoint, faults...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	api := awssqs.NewFromConfig(h.env.AWSConfig(context.Background()), func(o *awssqs.Options) { o.BaseEndpoint = aws.String(p.URL) })
	c := sqs.New(api, "us-east-1")
	return c, p
}

func (h *sqsHarness) NewQueue(t *testing.T, opt brokertest.QueueOptions) broker.Endpoint {
	name := testenv.UniqueName(t, "conf")
	attrs := map[string]string{"VisibilityTimeout": "5"}
	if opt.Ordered || opt.StrictHolds {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
		attrs["ContentBasedDeduplication"] = "true"
	}
	out, err := h.api.CreateQueue(t.Context(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = h.api.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	c, _ := h.client(t, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.EntryFail,
		EntryBodyContains: unpublishable, EntryCode: "InvalidMessageContents", EntrySenderFault: true})
	ref, err := broker.ParseRef(url)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := sqs.Open(t.Context(), c, ref)
	if err != nil {
		t.Fatal(err)
	}
	return &endpoint{Endpoint: ep, h: h, t: t}
}

// OpenSource opens a source with a client of its own.
func (e *endpoint) OpenSource(ctx context.Context, opt broker.SourceOptions) (broker.Source, error) {
	c, p := e.h.client(e.t)
	src, err := sqs.NewEndpoint(c, e.Queue()).OpenSource(ctx, opt)
	if err == nil {
		e.h.mu.Lock()
		if e.h.proxies == nil {
			e.h.proxies = map[broker.Source]*faultproxy.Proxy{}
		}
		e.h.proxies[src] = p
		e.h.mu.Unlock()
	}
	return src, err
}

func (h *sqsHarness) Put(t *testing.T, ep broker.Endpoint, msgs []brokertest.Msg) {
	url := ep.(*endpoint).Queue().URL
	fifo := ep.(*endpoint).Queue().FIFO
	for lo := 0; lo < len(msgs); lo += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i, m := range msgs[lo:min(lo+10, len(msgs))] {
			e := types.SendMessageBatchRequestEntry{Id: aws.String(string(rune('a' + i))), MessageBody: aws.String(m.Body), MessageAttributes: sqsAttrs(m.Headers)}
			if fifo {
				group := m.OrderingKey
				if group == "" {
					group = "g"
				}
				e.MessageGroupId = aws.String(group)
			}
			entries = append(entries, e)
		}
		out, err := h.api.SendMessageBatch(t.Context(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("put: %v %+v", err, out)
		}
	}
}

func sqsAttrs(hd map[string][]byte) map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{}
	for k, v := range hd {
		switch k {
		case "bin":
			out[k] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: v}
		case "num":
			out[k] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(string(v))}
		default:
			out[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(v))}
		}
	}
	return out
}

// Count waits until the queue's counts read the same three times in a row
// (they are approximate) and returns visible + in flight + delayed.
func (h *sqsHarness) Count(t *testing.T, ep broker.Endpoint) int {
	url := ep.(*endpoint).Queue().URL
	last, same := -1, 0
	for i := 0; i < 60 && same < 3; i++ {
		out, err := h.api.GetQueueAttributes(t.Context(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		q := &sqs.Queue{Attrs: out.Attributes}
		c := q.Counts()
		n := c.Visible + c.InFlight + c.Delayed
		if h.env.CountsIncludeInFlight() {
			n = c.Visible + c.Delayed
		}
		if n == last {
			same++
		} else {
			last, same = n, 1
		}
		time.Sleep(300 * time.Millisecond)
	}
	return last
}

func (h *sqsHarness) Drain(t *testing.T, ep broker.Endpoint, settle time.Duration) []brokertest.Msg {
	url := ep.(*endpoint).Queue().URL
	var got []brokertest.Msg
	quietSince := time.Now()
	for time.Since(quietSince) < settle {
		out, err := h.api.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			VisibilityTimeout: 60, MessageAttributeNames: []string{"All"}, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}) //nolint:staticcheck // the emulator honours only this
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			if h.empty(t, url) {
				// Nothing visible, in flight or delayed: no straggler
				// can come (the emulators' counts are exact), so the
				// rest of settle would only wait.
				break
			}
			continue
		}
		quietSince = time.Now()
		for _, m := range out.Messages {
			hd := map[string][]byte{}
			for k, v := range m.MessageAttributes {
				if v.BinaryValue != nil {
					hd[k] = v.BinaryValue
				} else {
					hd[k] = []byte(aws.ToString(v.StringValue))
				}
			}
			got = append(got, brokertest.Msg{Body: aws.ToString(m.Body), Headers: hd, OrderingKey: m.Attributes["MessageGroupId"]})
			if _, err := h.api.DeleteMessage(t.Context(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

// empty reports whether the queue's counts are all zero: nothing visible,
// in flight or delayed.
func (h *sqsHarness) empty(t *testing.T, url string) bool {
	out, err := h.api.GetQueueAttributes(t.Context(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	c := (&sqs.Queue{Attrs: out.Attributes}).Counts()
	return c.Visible+c.InFlight+c.Delayed == 0
}

// LoseHold makes m visible with its own receipt handle and has another
// consumer receive it, then waits for the source's heartbeat to find out
// (an extension pass runs every third of the hold).
func (h *sqsHarness) LoseHold(t *testing.T, ep broker.Endpoint, src broker.Source, m broker.Message) {
	url := ep.(*endpoint).Queue().URL
	held, ok := m.Handle.(*sqs.Message)
	if !ok {
		t.Fatalf("handle %T is not an SQS message", m.Handle)
	}
	if _, err := h.api.ChangeMessageVisibility(t.Context(), &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(held.ReceiptHandle)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, err := h.api.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 120})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Messages {
			if aws.ToString(o.MessageId) == m.Record.MessageID {
				time.Sleep(5 * time.Second) // two heartbeat passes of the suite's 6 s hold
				return
			}
		}
	}
	t.Fatalf("another consumer could not receive %s", m.Record.MessageID)
}

// Crash cuts the source off from SQS as kill -9 would: its heartbeat and
// its release never arrive; what it held returns when its visibility ends.
func (h *sqsHarness) Crash(t *testing.T, src broker.Source) {
	h.mu.Lock()
	p := h.proxies[src]
	h.mu.Unlock()
	if p == nil {
		t.Fatal("Crash: the source was not opened by the harness")
	}
	p.Close()
}

func (h *sqsHarness) Unpublishable(*testing.T, broker.Endpoint) brokertest.Msg {
	return brokertest.Msg{Body: `{"note":"` + unpublishable + `"}`, Headers: map[string][]byte{"bin": {0xff}, "num": []byte("1")}}
}
