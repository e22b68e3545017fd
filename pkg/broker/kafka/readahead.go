package kafka

import (
	"context"
	"errors"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// The read-ahead of a consuming read: a run's worker asks for a batch,
// decides it and waits for its produce; meanwhile nothing reads. So a
// consuming source polls the next batch, and builds its records, while the
// run handles the one it took (one batch ahead, never more: the poll
// starts when Next takes the batch read before). What it read is held like
// any record handed out (Consumer.Poll): a revoke of its partition waits
// for it, and what the run never takes is released when the source
// closes, so the group's commit never passes it.
//
// The rebalances a poll lets through (AllowRebalance at its top) come
// when the run took the previous batch, not when it asks for the next:
// the revoke waits for what the run holds either way (awaitHeld), as it
// does for a batch whose commit runs behind the next.
//
// A source with a transactional publisher (--exactly-once) reads without
// it: its polls wait for the transaction in flight (consumeSource.Next).

// polled is one read of the read-ahead: the batch, or the end, or the
// error that ends reading.
type polled struct {
	msgs []broker.Message
	err  error
}

type readAhead struct {
	// out hands over one read at a time (unbuffered: the next poll
	// starts when Next takes this one).
	out chan polled
	// over is closed when the reading goroutine has ended; last is then
	// the read that ended it (ErrSourceDone, an error, or the context's),
	// which Next returns from then on.
	over   chan struct{}
	last   polled
	cancel context.CancelFunc
}

// nextAhead is Next through the read-ahead, started by the first call
// (with that call's max and context: the run's).
func (s *consumeSource) nextAhead(ctx context.Context, max int) ([]broker.Message, error) {
	s.aheadOnce.Do(func() {
		rctx, cancel := context.WithCancel(ctx)
		ra := &readAhead{out: make(chan polled), over: make(chan struct{}), cancel: cancel}
		s.ahead.Store(ra)
		go s.readAheadLoop(rctx, ra, max)
	})
	ra := s.ahead.Load()
	if ra == nil {
		// A transactional publisher took the polls first.
		return s.poll(ctx, max)
	}
	select {
	case p := <-ra.out:
		return p.msgs, p.err
	case <-ra.over:
		return ra.last.msgs, ra.last.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *consumeSource) readAheadLoop(ctx context.Context, ra *readAhead, max int) {
	defer close(ra.over)
	for {
		msgs, err := s.poll(ctx, max)
		if err != nil {
			// The end (ErrSourceDone) or an error: handed to the next
			// Next, and to every one after it.
			ra.last = polled{err: err}
			select {
			case ra.out <- ra.last:
			case <-ctx.Done():
			}
			return
		}
		select {
		case ra.out <- polled{msgs: msgs}:
		case <-ctx.Done():
			// Read and never taken: not the run's.
			_ = s.Release(context.Background(), msgs)
			ra.last = polled{err: ctx.Err()}
			return
		}
	}
}

// stopAhead ends the read-ahead (if it ran) and waits for it: what it
// read and the run did not take is released.
func (s *consumeSource) stopAhead() {
	s.aheadOnce.Do(func() {}) // none starts after this
	if ra := s.ahead.Load(); ra != nil {
		ra.cancel()
		<-ra.over
	}
}

// errAheadStarted: a transactional publisher must own the source's polls
// from its first (OpenTxnPublisher).
var errAheadStarted = errors.New("kafka: the source was read before its transactional publisher was opened; open the publisher first")
