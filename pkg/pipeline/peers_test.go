package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// Several dlqctl processes on one DLQ (--rate-share i/N): what one run does
// not hold, its peers may. A shared run (Options.Peers > 1) ends when
// nothing is visible for it and reports the peers' messages; a single run
// keeps waiting for them (or reports them as a partial run).

// TestSharedRunLeavesPeersMessagesToThem: a peer holds 10 of 50 messages.
// The shared run delivers the other 40 and is complete, with the 10 reported
// as in flight at peers; the same run alone says they were in flight
// elsewhere and is partial. Either way the peer's 10 are untouched.
func TestSharedRunLeavesPeersMessagesToThem(t *testing.T) {
	for _, peers := range []int{4, 0} {
		t.Run(fmt.Sprintf("peers=%d", peers), func(t *testing.T) {
			f, c := newFake(t)
			q := standardDLQ(t, f, c, 50)
			if held := f.Take(q.URL, 10, time.Minute); len(held) != 10 {
				t.Fatalf("the peer took %d", len(held))
			}
			sink := &recSink{}
			res := run(t, newSource(c, q), sink, pipeline.Options{Peers: peers})
			delivered, _ := sink.bodies()
			checkOnce(t, delivered)
			if res.Delivered != 40 || len(delivered) != 40 {
				t.Fatalf("delivered %d (%d), want the 40 the peer does not hold: %+v", res.Delivered, len(delivered), res)
			}
			if peers > 1 {
				if !res.Complete || res.Note != "" || res.InFlightAtPeers != 10 || res.InFlightElsewhere != 0 {
					t.Fatalf("shared run: %+v; want complete with 10 in flight at peers", res)
				}
			} else if res.Complete || res.InFlightElsewhere != 10 || res.InFlightAtPeers != 0 {
				t.Fatalf("single run: %+v; want partial with 10 in flight elsewhere", res)
			}
			if c := f.Counts(q.URL); c.Deleted != 40 || c.InFlight != 10 {
				t.Fatalf("queue after the run: %+v; want the peer's 10 still in flight", c)
			}
		})
	}
}

// TestSharedFIFORunLeavesGroupsLockedByPeers: on a group-locking FIFO queue
// a peer holds the head of one group. A shared run delivers the other
// groups whole and in order and ends complete, reporting the locked group's
// messages as locked by peers; alone, the same run reports them blocked
// (partial).
func TestSharedFIFORunLeavesGroupsLockedByPeers(t *testing.T) {
	for _, peers := range []int{2, 0} {
		t.Run(fmt.Sprintf("peers=%d", peers), func(t *testing.T) {
			f, c := newFake(t)
			q := fifoDLQ(t, f, c, 5, 20)
			held := f.Take(q.URL, 1, time.Minute)
			if len(held) != 1 {
				t.Fatalf("the peer took %d", len(held))
			}
			sink := &recSink{}
			res := run(t, newSource(c, q), sink, pipeline.Options{Peers: peers})
			delivered, _ := sink.bodies()
			groups := checkGroupOrder(t, delivered)
			if len(delivered) != 80 || len(groups) != 4 {
				t.Fatalf("delivered %d in %d groups, want the 4 groups the peer does not lock (80)", len(delivered), len(groups))
			}
			if peers > 1 {
				if !res.Complete || res.LockedByPeers != 19 || res.InFlightAtPeers != 1 || res.Blocked != 0 {
					t.Fatalf("shared run: %+v; want complete, 19 locked by peers, 1 in flight at peers", res)
				}
			} else if res.Complete || res.Blocked != 19 {
				t.Fatalf("single run: %+v; want partial with 19 blocked", res)
			}
		})
	}
}

// TestSharedRunStillWaitsForItsOwnLostReceive: a shared run whose source
// reports that one of its own receives may have lost its answer waits for
// those messages like a single run, instead of taking them for a peer's.
func TestSharedRunStillWaitsForItsOwnLostReceive(t *testing.T) {
	f, c := newFake(t)
	q := standardDLQ(t, f, c, 50)
	f.LoseReceives(300*time.Millisecond, 2)
	src := &lostSource{QueueSource: newSource(c, q), until: time.Now().Add(time.Second)}
	sink := &recSink{}
	res := runSrc(t, src, sink, pipeline.Options{Peers: 3, WaitInFlight: 10 * time.Second})
	delivered, _ := sink.bodies()
	checkOnce(t, delivered)
	if f.LostMessages() != 10 {
		t.Fatalf("%d messages lost; the fault did not fire", f.LostMessages())
	}
	if !res.Complete || res.Delivered != 50 || res.InFlightAtPeers != 0 || res.InFlightElsewhere != 0 {
		t.Fatalf("result %+v; want all 50 delivered: the lost receive's messages are waited for", res)
	}
}

// lostSource is a QueueSource whose counts say that one of its receives may
// have lost its answer until until (what the SDK's retry metadata tells the
// real source; the in-memory SQS has no retryer).
type lostSource struct {
	*pipeline.QueueSource
	until time.Time
}

func (s *lostSource) Remaining(ctx context.Context) (pipeline.Remaining, error) {
	r, err := s.QueueSource.Remaining(ctx)
	r.LostUntil = s.until
	return r, err
}

func (s *lostSource) Settle(ctx context.Context) (pipeline.Remaining, error) {
	r, err := s.QueueSource.Settle(ctx)
	r.LostUntil = s.until
	return r, err
}

// runSrc is run for any source.
func runSrc(t *testing.T, src pipeline.Source, sink pipeline.Sink, opt pipeline.Options) *pipeline.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := pipeline.Run(ctx, src, sink, opt)
	if cerr := src.Close(context.Background()); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, res)
	}
	checkAccounting(t, res)
	return res
}
