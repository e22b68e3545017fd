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

// Several dlqctl processes on one DLQ (--rate-share i/N), or another
// consumer: what one run does not hold, others may. A run ends on what it
// saw — an empty long poll — whether it is shared or alone, and never
// waits for what others hold; the queue's counts only add a note (and, for
// a shared run, what its peers held).

// TestRunLeavesOthersMessagesToThem: a peer holds 10 of 50 messages. The run
// delivers the other 40 and is complete at once, shared or alone; the
// counts' note says 10 were in flight elsewhere (a shared run reports them
// as its peers'). The peer's 10 are untouched.
func TestRunLeavesOthersMessagesToThem(t *testing.T) {
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
			if !res.Complete || res.Note != "" || res.InFlightElsewhere != 0 || res.Counts == nil || res.Counts.InFlight != 10 {
				t.Fatalf("result %+v (counts %+v); want complete, the counts noting 10 in flight elsewhere", res, res.Counts)
			}
			if peers > 1 && res.InFlightAtPeers != 10 {
				t.Fatalf("shared run: in flight at peers %d; want 10", res.InFlightAtPeers)
			}
			if c := f.Counts(q.URL); c.Deleted != 40 || c.InFlight != 10 {
				t.Fatalf("queue after the run: %+v; want the peer's 10 still in flight", c)
			}
		})
	}
}

// TestFIFORunLeavesGroupsLockedByOthers: on a group-locking FIFO queue a
// peer holds the head of one group. The run delivers the other groups
// whole and in order and ends complete: it holds nothing that locks the
// fifth group (its holder drains it). A shared run reports the group's
// messages as locked by peers.
func TestFIFORunLeavesGroupsLockedByOthers(t *testing.T) {
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
			if !res.Complete || res.Blocked != 0 || res.Counts == nil || res.Counts.Visible != 19 || res.Counts.InFlight != 1 {
				t.Fatalf("result %+v (counts %+v); want complete, the counts noting 19 visible and 1 in flight", res, res.Counts)
			}
			if peers > 1 && (res.LockedByPeers != 19 || res.InFlightAtPeers != 1) {
				t.Fatalf("shared run: %+v; want 19 locked by peers, 1 in flight at peers", res)
			}
		})
	}
}

// TestSharedRunStillWaitsForItsOwnLostReceive: a shared run whose source
// reports that one of its own receives may have lost messages waits for
// them like a single run.
func TestSharedRunStillWaitsForItsOwnLostReceive(t *testing.T) {
	f, c := newFake(t)
	q := standardDLQ(t, f, c, 50)
	f.LoseReceives(300*time.Millisecond, 2)
	src := newUnknownSource(f, newSource(c, q), 300*time.Millisecond)
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

// unknownSource is a QueueSource on the in-memory SQS that reports the
// fake's lost receives as the real source reports what the SDK's retry
// metadata tells it (the fake has no retryer): up to 10 messages may be out
// until the lost receive's messages are back and an empty long poll begun
// after that. The real source's detection runs on the stack, through
// internal/faultproxy (cmd's TestLostReceivesAreWaitedForOrReported).
type unknownSource struct {
	*sqs.QueueSource
	f      *sqsfake.SQS
	hidden time.Duration

	mu        sync.Mutex
	lostAt    time.Time
	lastEmpty time.Time
}

func newUnknownSource(f *sqsfake.SQS, s *sqs.QueueSource, hidden time.Duration) *unknownSource {
	return &unknownSource{QueueSource: s, f: f, hidden: hidden}
}

func (s *unknownSource) Next(ctx context.Context, max int) ([]pipeline.Item, error) {
	start := time.Now()
	lost := s.f.LostMessages()
	items, err := s.QueueSource.Next(ctx, max)
	s.mu.Lock()
	if s.f.LostMessages() > lost && s.lostAt.IsZero() {
		s.lostAt = start
	}
	if err == nil && len(items) == 0 && start.After(s.lastEmpty) {
		s.lastEmpty = start
	}
	s.mu.Unlock()
	return items, err
}

func (s *unknownSource) End(ctx context.Context, run pipeline.RunState, final bool) (pipeline.EndState, error) {
	st, err := s.QueueSource.End(ctx, run, final)
	s.mu.Lock()
	defer s.mu.Unlock()
	if until := s.lostAt.Add(s.hidden + 2*time.Second); !s.lostAt.IsZero() && s.lastEmpty.Before(until) {
		st.Unknown, st.UnknownUntil = 10, until
	}
	return st, err
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
