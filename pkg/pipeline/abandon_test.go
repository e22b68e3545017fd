package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/sqsfake"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// stopAfterSink delivers, and cancels the run once it has accepted n.
type stopAfterSink struct {
	recSink
	n      int
	cancel context.CancelFunc
	once   sync.Once
}

func (s *stopAfterSink) Deliver(ctx context.Context, w int, key string, items []pipeline.Item, p []any) ([]pipeline.Outcome, pipeline.Commit) {
	outs, commit := s.recSink.Deliver(ctx, w, key, items, p)
	if _, acc := s.bodies(); len(acc) >= s.n {
		s.once.Do(s.cancel)
	}
	return outs, commit
}

// TestReleaseWaitsOutAbandonedPolls: every message is received at once,
// so the run sees the queue drained and abandons the other workers' long
// polls — but then it stops (a guard, an interrupt) and gives back what it
// holds. An abandoned poll goes on at the server until its wait is over;
// a release landing before that hands the messages to a poll nobody reads,
// leaving them invisible for the visibility timeout with nobody holding
// them. Everything given back must be visible after the run.
func TestReleaseWaitsOutAbandonedPolls(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f := sqsfake.New(sqsfake.Options{WaitScale: 1}) // real 1 s long polls
			c := sqs.New(f, "us-east-1")
			q := standardDLQ(t, f, c, 60)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runCtx, stop := context.WithCancel(ctx)
			sink := &stopAfterSink{n: 20, cancel: stop}
			src := newSource(c, q)
			res, err := pipeline.Run(runCtx, src, sink, pipeline.Options{Workers: 8, Rate: 15})
			if cerr := src.Close(context.Background()); cerr != nil {
				t.Fatalf("Close: %v", cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, res)
			if res.Complete {
				t.Fatalf("an interrupted run says complete: %+v", res)
			}
			_, acc := sink.bodies()
			if n := f.AbandonedClaims(); n > 0 {
				t.Fatalf("%d released message(s) were taken by abandoned long polls (invisible, held by nobody)", n)
			}
			allVisible(t, f, q, 60-len(acc))
		})
	}
}
