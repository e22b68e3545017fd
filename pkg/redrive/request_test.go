package redrive

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// unpacedDLQ is a source without a batch API that reads bigger batches
// when nothing paces the run (only UnpacedBatch is called).
type unpacedDLQ struct{ broker.Endpoint }

func (unpacedDLQ) UnpacedBatch(workers, max int) (int, int) { return 100, 1 << 20 }

func TestTuneBatchFitsTheBroker(t *testing.T) {
	part := broker.Capabilities{Ordering: broker.OrderPartition, MaxBatchEntries: 500, MaxBatchBytes: 1 << 20}
	for _, tc := range []struct {
		name        string
		ep          broker.Endpoint
		caps        broker.Capabilities
		rate        float64
		ramp        []float64
		workers     int
		wantWorkers int
		wantEntries int
	}{
		{"partition-ordered, unpaced: one worker, the broker's batch", nil, part, 0, nil, 8, 1, 500},
		{"partition-ordered at 20/s: a second of the rate", nil, part, 20, nil, 8, 1, 20},
		{"partition-ordered along a ramp: its smallest step", nil, part, 0, []float64{50, 5, 100}, 8, 1, 5},
		{"partition-ordered at 0.5/s: at least one", nil, part, 0.5, nil, 8, 1, 1},
		{"no batch API, unpaced: the broker's bigger batch", unpacedDLQ{}, broker.Capabilities{}, 0, nil, 8, 8, 100},
		{"no batch API, paced: the default batch", unpacedDLQ{}, broker.Capabilities{}, 10, nil, 8, 8, 0},
		{"a batch API: untouched", nil, broker.Capabilities{}, 0, nil, 4, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Rate: tc.rate, Ramp: tc.ramp, Concurrency: tc.workers}
			tuneBatch(&o, tc.ep, tc.caps, 0)
			if o.Concurrency != tc.wantWorkers || o.BatchEntries != tc.wantEntries {
				t.Fatalf("workers %d, batch %d; want %d, %d", o.Concurrency, o.BatchEntries, tc.wantWorkers, tc.wantEntries)
			}
		})
	}
}
