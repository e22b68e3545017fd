package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// redeliverSource offers ids once; the first removal of "m-3" fails as a
// lost lease and the message is offered again (as SQS does once its
// visibility ends), where the sink finds it durable and the engine removes it.
type redeliverSource struct {
	mu      sync.Mutex
	queue   []string
	failed  bool
	removed map[string]int
}

func (s *redeliverSource) Name() string { return "redeliver" }

func (s *redeliverSource) Next(context.Context, int) ([]pipeline.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		s.mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a short poll; the acker runs behind the worker
		s.mu.Lock()
		return nil, nil
	}
	id := s.queue[0]
	s.queue = s.queue[1:]
	return []pipeline.Item{{Record: &record.Record{MessageID: id, Body: id}}}, nil
}

func (s *redeliverSource) Ack(_ context.Context, items []pipeline.Item) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]error, len(items))
	for i, it := range items {
		if it.Record.MessageID == "m-3" && !s.failed {
			s.failed = true
			out[i] = fmt.Errorf("%w: lease ran out", sqs.ErrLeaseLost)
			s.queue = append(s.queue, "m-3") // received again later
			continue
		}
		s.removed[it.Record.MessageID]++
	}
	return out
}

func (s *redeliverSource) Release(context.Context, []pipeline.Item) error { return nil }
func (s *redeliverSource) Close(context.Context) error                    { return nil }

// durableSink delivers each message once; a message it already holds is
// removed without delivering again (as redrive's journal does).
type durableSink struct {
	mu   sync.Mutex
	sent map[string]int
}

func (s *durableSink) Prepare(_ context.Context, it pipeline.Item) (pipeline.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent[it.Record.MessageID] > 0 {
		return pipeline.Decision{Verb: pipeline.AckOnly}, nil
	}
	return pipeline.Decision{Verb: pipeline.Deliver, Key: "k", Label: "dest"}, nil
}

func (s *durableSink) Deliver(_ context.Context, _ int, _ string, items []pipeline.Item, _ []any) ([]pipeline.Outcome, pipeline.Commit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		s.sent[it.Record.MessageID]++
	}
	return make([]pipeline.Outcome, len(items)), nil
}

func (s *durableSink) Flush(context.Context) (bool, error) { return false, nil }

// TestRemovalThatFailsThenSucceedsIsNotReportedAsLeft: a message whose
// removal failed (lease lost) and that was removed when received again is
// not "durable but still in the source" at the end: the run is complete,
// and it was delivered once.
func TestRemovalThatFailsThenSucceedsIsNotReportedAsLeft(t *testing.T) {
	src := &redeliverSource{queue: []string{"m-1", "m-2", "m-3", "m-4"}, removed: map[string]int{}}
	sink := &durableSink{sent: map[string]int{}}
	res, err := pipeline.Run(context.Background(), src, sink, pipeline.Options{Workers: 1, EmptyReceives: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.NotAcked != 0 || res.LeaseLost != 0 || len(res.NotAckedIDs) != 0 || res.Resumed != 1 || res.Delivered != 3 || !res.Complete {
		t.Fatalf("result %+v; want 3 delivered, m-3 removed on its second receive, nothing left, complete", res)
	}
	if sink.sent["m-3"] != 1 || src.removed["m-3"] != 1 {
		t.Fatalf("m-3 delivered %d times, removed %d times; want once each", sink.sent["m-3"], src.removed["m-3"])
	}
}
