package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// handingOver is a queue that hands the messages a run holds over to
// another reader only once the run is done with them (broker.HandOverer,
// as Kafka does when a partition moves): it records what the engine
// settles and the flush the engine registers.
type handingOver struct {
	*sqs.QueueSource
	// lost names messages held past the source's wait: handed over.
	lost    func(body string) bool
	mu      sync.Mutex
	settled []string
	flush   func(context.Context)
}

func (s *handingOver) Holding(msgs []broker.Message) error {
	for _, m := range msgs {
		if s.lost != nil && s.lost(m.Record.Body) {
			return fmt.Errorf("%s: its partition moved to another member while the run held it: %w", m.Record.Body, broker.ErrLeaseLost)
		}
	}
	return nil
}

func (s *handingOver) Settle(msgs []broker.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.settled = append(s.settled, m.Record.Body)
	}
}

func (s *handingOver) OnHandOver(flush func(context.Context)) { s.flush = flush }

// flushCounter counts the sink's flushes.
type flushCounter struct {
	recSink
	flushes int
}

func (s *flushCounter) Flush(context.Context) (bool, error) { s.flushes++; return false, nil }

// TestTheRunSettlesWhatItNeitherAcksNorReleases: a source that waits for
// the messages a run holds before handing them over is told, as soon as
// it is decided, of every message the run will neither ack nor release —
// skipped by the selection, refused by the destination — so its hand-over
// does not wait for them; delivered ones are acked, not settled. The
// flush the engine registers makes the sink's pending deliveries durable.
func TestTheRunSettlesWhatItNeitherAcksNorReleases(t *testing.T) {
	f, c := newFake(t)
	q := standardDLQ(t, f, c, 30)
	src := &handingOver{QueueSource: newSource(c, q)}
	sink := &flushCounter{recSink: recSink{
		decide: func(it pipeline.Item) pipeline.Decision {
			if strings.HasSuffix(it.Record.Body, "5") {
				return pipeline.Decision{Verb: pipeline.Skip, Reason: "not selected"}
			}
			return pipeline.Decision{Verb: pipeline.Deliver, Key: "k", Label: "sink"}
		},
		refuse: func(it pipeline.Item) bool { return strings.HasSuffix(it.Record.Body, "7") },
	}}
	res := runSrc(t, src, sink, pipeline.Options{Workers: 2})
	sort.Strings(src.settled)
	want := []string{"m-05", "m-07", "m-15", "m-17", "m-25", "m-27"}
	if strings.Join(src.settled, ",") != strings.Join(want, ",") {
		t.Fatalf("settled %v; want the skipped and the refused %v", src.settled, want)
	}
	if res.Delivered != 24 || res.Skipped["not selected"] != 3 || res.Refused != 3 {
		t.Fatalf("result %+v", res)
	}
	if src.flush == nil {
		t.Fatal("the engine registered no hand-over flush")
	}
	before := sink.flushes
	src.flush(context.Background())
	if sink.flushes != before+1 {
		t.Fatalf("the hand-over flushed the sink %d time(s); want 1", sink.flushes-before)
	}
}

// TestABatchHandedOverIsNotDelivered: a batch the source handed over
// while the run held it (past its bounded wait: a long guard pause) is not
// delivered at all — it is released and the run stops with the reason —
// so its new reader delivers it once; batches delivered before stay.
func TestABatchHandedOverIsNotDelivered(t *testing.T) {
	f, c := newFake(t)
	q := standardDLQ(t, f, c, 30)
	src := &handingOver{QueueSource: newSource(c, q), lost: func(b string) bool { return b == "m-17" }}
	sink := &recSink{}
	ctx := context.Background()
	res, err := pipeline.Run(ctx, src, sink, pipeline.Options{Workers: 1, BatchEntries: 5})
	_ = src.Close(ctx)
	if !errors.Is(err, broker.ErrLeaseLost) || errs.Code(err) != errs.ExitPartial || !strings.Contains(err.Error(), "partition moved") {
		t.Fatalf("run: %v (exit %d), result %+v; want it stopped, partial, naming the moved partition", err, errs.Code(err), res)
	}
	_, accepted := sink.bodies()
	for _, b := range accepted {
		if b == "m-17" {
			t.Fatal("m-17 was delivered although it was handed over")
		}
	}
	if res.Delivered != len(accepted) || res.Complete || res.Released == 0 {
		t.Fatalf("delivered %d, result %+v; want the batch released and the run not complete", len(accepted), res)
	}
	if cnt := f.Counts(q.URL); cnt.InFlight != 0 || cnt.Visible != 30-res.Delivered {
		t.Fatalf("queue %+v after the run; want the %d undelivered visible again", cnt, 30-res.Delivered)
	}
}
