package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	queue "github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// In-flight limits of SQS (120,000 per queue, standard and FIFO). A run
// stops short of them so the queue keeps serving its real consumers.
const (
	InFlightLimit    = 120_000
	InFlightHeadroom = 10_000
)

// QueueSourceOptions configure a QueueSource.
type QueueSourceOptions struct {
	// Visibility is how long received messages stay hidden between
	// heartbeats (default 60s).
	Visibility time.Duration
	// Wait is the long-poll wait of each receive (default 1s; SQS counts
	// whole seconds, 1 is the shortest long poll).
	Wait time.Duration
	// MaxHeld caps the messages held at once (default: the in-flight limit
	// less headroom).
	MaxHeld int
	// Decode decodes a received record (envelope, failure, marker) and
	// returns the parsed body; nil leaves records as received.
	Decode func(*queue.Record) any
}

// QueueSource is an SQS queue read through a lease: received messages are
// held invisible with a heartbeat until they are acked (deleted with their
// newest receipt handle) or released, and Close releases what is left. It
// is a Drainer: it reports what the queue holds beyond the run's lease.
type QueueSource struct {
	c     *queue.Client
	q     *queue.Queue
	lease *queue.Lease
	opt   QueueSourceOptions
	stop  context.CancelFunc
	dups  atomic.Int64
	// gate orders receives against Settle: a receive (and the lease taking
	// what it returned) holds it shared; Settle holds it exclusively, so the
	// queue's counts are read when no receive is half done (its messages
	// already invisible on the server, not yet held by the run).
	gate sync.RWMutex
	// polls ends long polls that can only come back empty (see
	// AbandonReceives).
	polls       context.Context
	abandonPoll context.CancelFunc
	// pollMu guards the start times of the receives under way and, once
	// they are abandoned, the moment the last of them has surely ended on
	// the server (quietAt): an abandoned long poll keeps claiming messages
	// there until its wait is over, so a release before then could hand
	// the released messages to a poll nobody reads (invisible for the
	// visibility timeout, with nobody holding them).
	// onReceived is called with the number of items a Next returns, while
	// it still holds gate (ReceiveCounter).
	onReceived func(int)

	pollMu  sync.Mutex
	pollSeq int
	pending map[int]time.Time
	quietAt time.Time
	// rc receives through recv, which notes receives the SDK retried
	// (lostUntil): the first attempt may have taken messages on the server
	// whose answer never arrived.
	rc   *queue.Client
	recv *receiveWatch
}

// abandonGrace is how long past its wait an abandoned long poll is assumed
// to still take messages on the server (local-aws-sqs: about 40 ms; AWS
// ends a poll at its wait; a slow link delays the request's arrival).
const abandonGrace = 500 * time.Millisecond

// NewQueueSource starts a lease heartbeat on q; call Close when done.
func NewQueueSource(c *queue.Client, q *queue.Queue, opt QueueSourceOptions) *QueueSource {
	if opt.Visibility <= 0 {
		opt.Visibility = 60 * time.Second
	}
	if opt.Wait <= 0 {
		opt.Wait = time.Second
	}
	if opt.MaxHeld <= 0 {
		opt.MaxHeld = InFlightLimit - InFlightHeadroom
	}
	s := &QueueSource{c: c, q: q, opt: opt, lease: queue.NewLease(c, q, opt.Visibility)}
	s.pending = map[int]time.Time{}
	s.recv = &receiveWatch{API: c.API, hidden: opt.Visibility}
	rc := *c
	rc.API = s.recv
	s.rc = &rc
	polls, abandon := context.WithCancel(context.Background())
	s.polls = polls
	s.abandonPoll = func() {
		s.pollMu.Lock()
		defer s.pollMu.Unlock()
		if polls.Err() != nil {
			return
		}
		for _, start := range s.pending {
			if end := start.Add(s.opt.Wait + abandonGrace); end.After(s.quietAt) {
				s.quietAt = end
			}
		}
		abandon()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.lease.Run(ctx)
	return s
}

// Queue is the queue read.
func (s *QueueSource) Queue() *queue.Queue { return s.q }

// Name is the queue name.
func (s *QueueSource) Name() string { return s.q.Name }

// Held is the number of messages currently held.
func (s *QueueSource) Held() int { return s.lease.Len() }

// Duplicates counts redeliveries of messages the run already held.
func (s *QueueSource) Duplicates() int { return int(s.dups.Load()) }

// LeasesLost counts messages whose lease the heartbeat could not keep.
func (s *QueueSource) LeasesLost() int { return s.lease.Lost() }

// Next receives up to max messages and holds them. The receive itself is
// not cut short by ctx: a long poll abandoned mid-flight could leave the
// messages it returned invisible with nobody holding them.
func (s *QueueSource) Next(ctx context.Context, max int) ([]Item, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.lease.Len()+max > s.opt.MaxHeld {
		return nil, fmt.Errorf("%w: %d messages held", ErrHeldLimit, s.lease.Len())
	}
	s.pollMu.Lock()
	if s.polls.Err() != nil {
		s.pollMu.Unlock()
		return nil, nil
	}
	s.pollSeq++
	seq := s.pollSeq
	s.pending[seq] = time.Now()
	s.pollMu.Unlock()
	rctx, cancel := context.WithTimeout(s.polls, s.opt.Wait+60*time.Second)
	msgs, err := s.rc.Receive(rctx, s.q, max, s.opt.Visibility, s.opt.Wait)
	cancel()
	s.pollMu.Lock()
	delete(s.pending, seq)
	s.pollMu.Unlock()
	if err != nil && s.polls.Err() != nil {
		return nil, nil // abandoned: the queue was drained
	}
	if err != nil {
		if isOverLimit(err) {
			return nil, fmt.Errorf("%w: %s answered OverLimit", ErrHeldLimit, s.q.Name)
		}
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	// The lease holds slim copies (id and receipt handle): held messages do
	// not keep their bodies in memory.
	slims := make([]*queue.Message, len(msgs))
	for i, m := range msgs {
		slims[i] = &queue.Message{Record: queue.Record{MessageID: m.MessageID}, ReceiptHandle: m.ReceiptHandle, ReceivedAt: m.ReceivedAt}
	}
	redelivered := s.lease.Add(slims...)
	var dup map[*queue.Message]bool
	if len(redelivered) > 0 {
		dup = make(map[*queue.Message]bool, len(redelivered))
		for _, m := range redelivered {
			dup[m] = true
		}
		s.dups.Add(int64(len(redelivered)))
	}
	items := make([]Item, 0, len(msgs))
	for i, m := range msgs {
		if dup[slims[i]] {
			// A redelivery of a message this run already holds (its lease
			// ran out and it was received again): the lease now has its
			// newest receipt handle; the run goes on with the one it has.
			continue
		}
		var parsed any
		if s.opt.Decode != nil {
			parsed = s.opt.Decode(&m.Record)
		}
		items = append(items, Item{Record: &m.Record, Parsed: parsed, Handle: slims[i]})
	}
	if s.onReceived != nil && len(items) > 0 {
		s.onReceived(len(items))
	}
	return items, nil
}

// CountReceived registers f, called with the number of items each Next
// returns before Settle can read the queue's counts again.
func (s *QueueSource) CountReceived(f func(n int)) { s.onReceived = f }

func handles(items []Item) []*queue.Message {
	msgs := make([]*queue.Message, 0, len(items))
	for _, it := range items {
		if m, ok := it.Handle.(*queue.Message); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// Ack deletes the items from the queue with their newest receipt handles.
// An item whose lease was lost is not deleted (deleting with a superseded
// handle can succeed without deleting); it fails with queue.ErrLeaseLost
// and is processed again when it is received again.
func (s *QueueSource) Ack(ctx context.Context, items []Item) []error {
	msgs := handles(items)
	failed := s.lease.Delete(ctx, msgs)
	// A message received again while its delete was in flight is held
	// under its new receipt handle: delete it once more with that one.
	var again []*queue.Message
	for m, err := range failed {
		if errors.Is(err, queue.ErrReceivedAgain) {
			again = append(again, m)
		}
	}
	if len(again) > 0 {
		retry := s.lease.Delete(ctx, again)
		for _, m := range again {
			if err, bad := retry[m]; bad {
				failed[m] = err
			} else {
				delete(failed, m)
			}
		}
	}
	out := make([]error, len(items))
	for i, it := range items {
		m, ok := it.Handle.(*queue.Message)
		if !ok {
			out[i] = errors.New("item was not received from this queue")
			continue
		}
		out[i] = failed[m]
	}
	return out
}

// Release makes the items visible again, once no abandoned long poll can
// take them on the server.
func (s *QueueSource) Release(ctx context.Context, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	s.waitQuiet(ctx)
	return s.lease.Release(ctx, handles(items))
}

// waitQuiet waits until every abandoned long poll has ended on the server.
func (s *QueueSource) waitQuiet(ctx context.Context) {
	s.pollMu.Lock()
	d := time.Until(s.quietAt)
	s.pollMu.Unlock()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// AbandonReceives ends the long polls under way and makes later receives
// return nothing. The engine calls it when the queue is drained and the run
// expects to release nothing: a poll abandoned mid-flight goes on at the
// server until its wait is over and may still take a message there (it
// stays invisible for the run's visibility timeout, then is back — nothing
// is lost). If the run releases after all (a guard trips, an interrupt),
// Release and Close first wait until those polls have surely ended, so
// they cannot take what is given back. It saves up to one long-poll wait at
// the end of every run.
func (s *QueueSource) AbandonReceives() { s.abandonPoll() }

// Close stops the heartbeat and releases every message still held.
func (s *QueueSource) Close(ctx context.Context) error {
	s.abandonPoll()
	s.stop()
	if s.lease.Len() > 0 {
		s.waitQuiet(ctx)
	}
	return s.lease.ReleaseAll(ctx)
}

// Remaining reads the queue's depths and subtracts what the run holds.
func (s *QueueSource) Remaining(ctx context.Context) (Remaining, error) {
	// What the run holds is read after the counts: a message deleted in
	// between may then look in flight elsewhere (the engine decides on that
	// only once no removal is under way), never the other way round — a
	// message in flight elsewhere is never hidden by one being deleted.
	cp := *s.q
	if err := s.c.Refresh(ctx, &cp); err != nil {
		return Remaining{}, err
	}
	n := cp.Counts()
	held := s.lease.Len()
	visible := n.Visible
	if s.c.CountsIncludeInFlight {
		visible -= n.InFlight
	}
	ret := s.opt.Visibility
	if v := cp.VisibilityTimeout(); v > ret {
		ret = v
	}
	return Remaining{
		Visible:           max(0, visible),
		InFlightElsewhere: max(0, n.InFlight-held),
		Held:              held,
		ReturnAfter:       ret,
		Groups:            cp.FIFO,
		LostUntil:         s.recv.until(),
	}, nil
}

// RetriedReceives counts the run's receives that the SDK sent more than
// once (or that failed after they may have reached SQS).
func (s *QueueSource) RetriedReceives() int { return int(s.recv.retried.Load()) }

// receiveWatch is the queue API with ReceiveMessage watched: a receive the
// SDK's retryer sent more than once may have been carried out by SQS
// without its answer arriving (internal/faultproxy LostReceives), leaving
// messages in flight that nobody holds until their visibility ends. It
// notes until when such messages may be out: a shared run (whose peers
// also hold messages) waits for them only then.
type receiveWatch struct {
	queue.API
	hidden  time.Duration
	retried atomic.Int64
	last    atomic.Int64 // unix nanoseconds until which lost messages may be in flight
}

// lostGrace is added to a receive's visibility before messages it may have
// lost are surely visible again.
const lostGrace = 2 * time.Second

func (w *receiveWatch) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	start := time.Now()
	out, err := w.API.ReceiveMessage(ctx, in, opts...)
	suspect := false
	if out != nil {
		if ar, ok := retry.GetAttemptResults(out.ResultMetadata); ok && len(ar.Results) > 1 {
			suspect = true
		}
	}
	if err != nil && ctx.Err() == nil {
		suspect = true // it may have reached SQS before it failed
	}
	if suspect {
		w.retried.Add(1)
		until := start.Add(w.hidden + lostGrace).UnixNano()
		for {
			cur := w.last.Load()
			if cur >= until || w.last.CompareAndSwap(cur, until) {
				break
			}
		}
	}
	return out, err
}

func (w *receiveWatch) until() time.Time {
	if n := w.last.Load(); n > 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Settle is Remaining read while no receive is in flight: it waits for the
// receives under way (at most one long poll) and holds new ones back until
// the counts are read.
func (s *QueueSource) Settle(ctx context.Context) (Remaining, error) {
	s.gate.Lock()
	defer s.gate.Unlock()
	return s.Remaining(ctx)
}

// isOverLimit reports whether err is SQS's OverLimit error (too many
// messages in flight).
func isOverLimit(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "OverLimit"
}

var (
	_ Source    = (*QueueSource)(nil)
	_ Drainer   = (*QueueSource)(nil)
	_ Settler   = (*QueueSource)(nil)
	_ Abandoner = (*QueueSource)(nil)
)
