package pipeline_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// doneSource hands out its ids, then says it is done (a Kafka read that
// reached its start-time ends); at the end it reports left what it was
// told to (a partition that changed hands and was never read).
type doneSource struct {
	mu     sync.Mutex
	queue  []string
	left   broker.Leftover
	asked  int
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

func (s *doneSource) Leftover(context.Context) (broker.Leftover, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	return s.left, nil
}

// TestRunIsNotCompleteWhileTheSourceReportsRecordsLeft: a source that read
// to its end but knows records are left (Kafka: the group's commit, read
// back, does not cover a partition the run was assigned) makes the run
// partial with its sentence, never complete; with nothing left it is
// complete. The source is asked once, after the last ack, before Close.
func TestRunIsNotCompleteWhileTheSourceReportsRecordsLeft(t *testing.T) {
	note := "20 record(s) of partitions this run held were not read or not committed past (partitions [2] of kafka://x/dlt); run the same command again to finish them"
	src := &doneSource{queue: []string{"m-1", "m-2"}, left: broker.Leftover{Unread: 20, Note: note}}
	res, err := pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || res.Note != note || res.VisibleLeft != 20 || src.asked != 1 || src.closed {
		t.Fatalf("complete=%v note=%q visible_left=%d asked=%d closed-before-end=%v; want partial with the source's note, asked once before Close",
			res.Complete, res.Note, res.VisibleLeft, src.asked, src.closed)
	}

	src = &doneSource{queue: []string{"m-1", "m-2"}}
	res, err = pipeline.Run(context.Background(), src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Delivered != 2 || src.asked != 1 {
		t.Fatalf("nothing left: %+v asked=%d; want complete, 2 delivered", res, src.asked)
	}

	// An interrupted run is partial already: the source is not asked.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src = &doneSource{queue: []string{"m-1"}, left: broker.Leftover{Unread: 1, Note: note}}
	res, _ = pipeline.Run(ctx, src, &durableSink{sent: map[string]int{}}, pipeline.Options{Workers: 1})
	if res.Complete || src.asked != 0 || strings.Contains(res.Note, "partitions") {
		t.Fatalf("interrupted: complete=%v asked=%d note=%q", res.Complete, src.asked, res.Note)
	}
}
