package pipeline_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// failingSink is recSink whose first delivery fails with an outcome that
// is not known (the connection dropped before the destination answered).
type failingSink struct {
	recSink
	deliveries atomic.Int64
}

func (s *failingSink) Deliver(ctx context.Context, w int, key string, items []pipeline.Item, payloads []any) ([]pipeline.Outcome, pipeline.Commit) {
	if s.deliveries.Add(1) == 1 {
		outs := make([]pipeline.Outcome, len(items))
		for i := range outs {
			outs[i].Err = errors.New("connection reset by peer")
		}
		return outs, nil
	}
	return s.recSink.Deliver(ctx, w, key, items, payloads)
}

// TestAnUnknownDeliveryIsCountedOnce: a delivery whose outcome is unknown
// stops the run; its messages go back to the source and are counted as
// unknown only — not also as released — so the run's account adds up
// (every message received ends in exactly one bucket), and every message
// is at the source again when the run ends.
func TestAnUnknownDeliveryIsCountedOnce(t *testing.T) {
	f, c := newFake(t)
	q := standardDLQ(t, f, c, 10)
	sink := &failingSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := newSource(c, q)
	res, _ := pipeline.Run(ctx, src, sink, pipeline.Options{Workers: 1})
	_ = src.Close(context.Background())
	checkAccounting(t, res)
	if res.Unknown != 10 || res.Released != 0 || res.Delivered != 0 || res.Complete {
		t.Fatalf("result %+v; want 10 unknown, none released or delivered, not complete", res)
	}
	allVisible(t, f, q, 10)
}
