package pipeline_test

import (
	"context"
	"sync"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// doneSource hands out its ids, then says it is done (a Kafka read that
// reached its start-time ends); at its final End it reports left what it
// was told to (a partition that changed hands and was never read).
type doneSource struct {
	mu     sync.Mutex
	queue  []string
	left   broker.EndState
	finals int
	closed bool
}

func (s *doneSource) Name() string { return "done" }

func (s *doneSource) Next(context.Context, int) ([]pipeline.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return nil, pipeline.ErrSourceDone
	}
	id := s.queue[0]
	s.queue = s.queue[1:]
	return []pipeline.Item{{Record: &record.Record{MessageID: id, Body: id}}}, nil
}

func (s *doneSource) Ack(_ context.Context, items []pipeline.Item) []error {
	return make([]error, len(items))
}
func (s *doneSource) Release(context.Context, []pipeline.Item) error { return nil }
func (s *doneSource) Close(context.Context) error                    { s.closed = true; return nil }
func (s *doneSource) EndReading(bool)                                {}

func (s *doneSource) End(_ context.Context, _ pipeline.RunState, final bool) (pipeline.EndState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !final {
		return pipeline.EndState{}, nil
	}
	s.finals++
	return s.left, nil
}

// TestRunIsNotCompleteWhileADoneSourceReportsRecordsLeft: a source that
// read to its end (ErrSourceDone) but knows records are left (Kafka: the
// group's commit, read back, does not cover a partition the run was
// assigned) makes the run partial with its sentence, never complete; with
// nothing left it is complete. It is asked once, after the last ack,
// before Close; a run stopped at --max is not asked.
func TestRunIsNotCompleteWhileADoneSourceReportsRecordsLeft(t *testing.T) {
	note := "20 record(s) of partitions this run held were not read or not committed past (partitions [2] of kafka://x/dlt); run the same command again to finish them"
	src := &doneSource{queue: []string{"m-1", "m-2"}, left: pipeline.EndState{Drained: true, Blocked: 20, Note: note}}
	res, err := pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || res.Note != note || res.Blocked != 20 || src.finals != 1 || src.closed {
		t.Fatalf("complete=%v note=%q blocked=%d finals=%d closed-before-end=%v; want partial with the source's note, asked once before Close",
			res.Complete, res.Note, res.Blocked, src.finals, src.closed)
	}

	src = &doneSource{queue: []string{"m-1", "m-2"}, left: pipeline.EndState{Drained: true}}
	res, err = pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Delivered != 2 || src.finals != 1 {
		t.Fatalf("nothing left: %+v finals=%d; want complete, 2 delivered", res, src.finals)
	}

	src = &doneSource{queue: []string{"m-1", "m-2", "m-3"}, left: pipeline.EndState{Drained: true, Blocked: 1, Note: note}}
	res, _ = pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 1, Max: 1})
	if src.finals != 0 || !res.StoppedAtMax {
		t.Fatalf("--max: finals=%d stopped_at_max=%v; a run stopped at its maximum is partial already and not asked", src.finals, res.StoppedAtMax)
	}
}

// TestRunIsNotCompleteWhenTheSourceHandedOutAGroupOutOfOrder: a source
// that read everything but reports messages handed out after later ones
// of their ordering group (moto after a lost receive) makes the run
// partial with its sentence, or the engine's own naming the groups.
func TestRunIsNotCompleteWhenTheSourceHandedOutAGroupOutOfOrder(t *testing.T) {
	note := "9 message(s) of FIFO group(s) g1 were handed out by the queue after later messages of their group"
	src := &doneSource{queue: []string{"m-1", "m-2"}, left: pipeline.EndState{Drained: true, OrderLost: 9, OrderLostGroups: []string{"g1"}, Note: note}}
	res, err := pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || res.OrderLost != 9 || res.Note != note || res.Delivered != 2 {
		t.Fatalf("complete=%v order_lost=%d note=%q delivered=%d; want partial with the source's note", res.Complete, res.OrderLost, res.Note, res.Delivered)
	}

	src = &doneSource{queue: []string{"m-1"}, left: pipeline.EndState{Drained: true, OrderLost: 2, OrderLostGroups: []string{"g1", "g4"}}}
	res, _ = pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 1})
	if want := "2 message(s) of ordering group(s) g1, g4 were handed out after later messages of their group: those groups were delivered out of order"; res.Complete || res.Note != want {
		t.Fatalf("complete=%v note=%q; want %q", res.Complete, res.Note, want)
	}
}
