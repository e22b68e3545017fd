package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/sqsfake"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// The pipeline's logic on the shared in-memory SQS (internal/sqsfake),
// which locks FIFO groups like AWS and counts visible messages only. The
// same behaviours run against local-aws-sqs and moto in the integration
// tests of the commands; these pin them without the stack.

// newFake returns a fake and a client on it.
func newFake(t *testing.T) (*sqsfake.SQS, *sqs.Client) {
	t.Helper()
	f := sqsfake.New(sqsfake.Options{})
	c := sqs.New(f, "us-east-1")
	return f, c
}

func resolve(t *testing.T, c *sqs.Client, url string) *sqs.Queue {
	t.Helper()
	q, err := c.Resolve(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// fifoDLQ makes a FIFO queue with groups × per messages, sent interleaved
// (g0-00, g1-00, …, g0-01, …) so that group order is not send order.
func fifoDLQ(t *testing.T, f *sqsfake.SQS, c *sqs.Client, groups, per int) *sqs.Queue {
	t.Helper()
	url := f.AddQueue("orders-dlq.fifo", true, nil)
	var msgs []sqsfake.Message
	for i := range per {
		for g := range groups {
			msgs = append(msgs, sqsfake.Message{Body: fmt.Sprintf("g%d-%02d", g, i), GroupID: fmt.Sprintf("g%d", g)})
		}
	}
	f.Send(url, msgs...)
	return resolve(t, c, url)
}

// standardDLQ makes a standard queue holding n messages "m-00"….
func standardDLQ(t *testing.T, f *sqsfake.SQS, c *sqs.Client, n int) *sqs.Queue {
	t.Helper()
	url := f.AddQueue("orders-dlq", false, nil)
	msgs := make([]sqsfake.Message, n)
	for i := range msgs {
		msgs[i] = sqsfake.Message{ID: fmt.Sprintf("id-%02d", i), Body: fmt.Sprintf("m-%02d", i)}
	}
	f.Send(url, msgs...)
	return resolve(t, c, url)
}

// newSource reads q through a lease; each receive long-polls 1 s (10 ms on
// the fake).
func newSource(c *sqs.Client, q *sqs.Queue) *sqs.QueueSource {
	return sqs.NewQueueSource(c, q, sqs.QueueSourceOptions{Visibility: 30 * time.Second, Wait: time.Second})
}

// recSink is the test sink: it decides with decide (default: deliver
// everything under one key), refuses the items refuse names, and records
// what was delivered, in order.
type recSink struct {
	decide func(it pipeline.Item) pipeline.Decision
	refuse func(it pipeline.Item) bool

	mu        sync.Mutex
	delivered []string // bodies, in the order Deliver got them
	accepted  []string
}

func (s *recSink) Prepare(_ context.Context, it pipeline.Item) (pipeline.Decision, error) {
	if s.decide != nil {
		return s.decide(it), nil
	}
	return pipeline.Decision{Verb: pipeline.Deliver, Key: "k", Label: "sink"}, nil
}

func (s *recSink) Deliver(_ context.Context, _ int, _ string, items []pipeline.Item, _ []any) ([]pipeline.Outcome, pipeline.Commit) {
	outs := make([]pipeline.Outcome, len(items))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, it := range items {
		s.delivered = append(s.delivered, it.Record.Body)
		if s.refuse != nil && s.refuse(it) {
			outs[i].Err = pipeline.Refused(fmt.Errorf("destination refused %s", it.Record.Body))
			continue
		}
		s.accepted = append(s.accepted, it.Record.Body)
	}
	return outs, nil // nil commit: durable as accepted
}

func (s *recSink) Flush(context.Context) (bool, error) { return false, nil }

func (s *recSink) bodies() (delivered, accepted []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.delivered...), append([]string(nil), s.accepted...)
}

// run runs the pipeline on src and closes the source (releasing what the
// run still holds), as every command does.
func run(t *testing.T, src *sqs.QueueSource, sink pipeline.Sink, opt pipeline.Options) *pipeline.Result {
	t.Helper()
	return runSrc(t, src, sink, opt)
}

// checkAccounting: every message received ends in exactly one bucket.
func checkAccounting(t *testing.T, r *pipeline.Result) {
	t.Helper()
	sum := r.Delivered + r.Resumed + r.SkippedTotal() + r.Released + r.Refused + r.Unknown + r.NotAcked
	if r.Received != sum {
		t.Fatalf("accounting: received %d != delivered %d + resumed %d + skipped %d + released %d + refused %d + unknown %d + not acked %d = %d",
			r.Received, r.Delivered, r.Resumed, r.SkippedTotal(), r.Released, r.Refused, r.Unknown, r.NotAcked, sum)
	}
}

// checkGroupOrder: every message delivered at most once, and each group's
// messages in their order.
func checkGroupOrder(t *testing.T, bodies []string) map[string][]string {
	t.Helper()
	seen := map[string]bool{}
	groups := map[string][]string{}
	for _, b := range bodies {
		if seen[b] {
			t.Fatalf("%s delivered twice", b)
		}
		seen[b] = true
		g, _, _ := strings.Cut(b, "-")
		if prev := groups[g]; len(prev) > 0 && prev[len(prev)-1] > b {
			t.Fatalf("group %s out of order: %s delivered after %s", g, b, prev[len(prev)-1])
		}
		groups[g] = append(groups[g], b)
	}
	return groups
}

// checkOnce: nothing delivered twice.
func checkOnce(t *testing.T, bodies []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, b := range bodies {
		if seen[b] {
			t.Fatalf("%s delivered twice", b)
		}
		seen[b] = true
	}
}

func allVisible(t *testing.T, f *sqsfake.SQS, q *sqs.Queue, want int) {
	t.Helper()
	if c := f.Counts(q.URL); c.Visible != want || c.InFlight != 0 {
		t.Fatalf("after the run: %+v; want %d visible and nothing in flight", c, want)
	}
}
