package queue

import (
	"context"
	"sync"
	"time"
)

// leaseMargin keeps extensions clear of SQS's 12 h visibility ceiling.
const leaseMargin = 2 * time.Minute

// Lease keeps received messages invisible while dlqctl holds them: a
// heartbeat extends their visibility before it runs out (never past 12 h from
// receipt), and ReleaseAll makes everything still held visible again. Every
// code path that receives messages hands them to a Lease and releases it on
// exit, so nothing is left invisible behind a crash of the program logic.
type Lease struct {
	c          *Client
	q          *Queue
	visibility time.Duration

	mu   sync.Mutex
	held map[string]*Message // by receipt handle
	lost int

	// extMu serialises heartbeat extensions with releases: an extension
	// already sent to SQS must not land after a release of the same
	// messages (it would hide them again with nobody holding them), so a
	// release waits for an in-flight extension, and an extension never
	// includes messages released before it started.
	extMu sync.Mutex

	// OnLost, when set, is called for messages whose lease could not be
	// extended (receipt handle invalid, or the 12 h limit reached).
	OnLost func(m *Message, err error)
}

// NewLease returns a lease on q that holds messages for visibility at a time.
func NewLease(c *Client, q *Queue, visibility time.Duration) *Lease {
	if visibility < 5*time.Second {
		visibility = 5 * time.Second
	}
	return &Lease{c: c, q: q, visibility: visibility, held: map[string]*Message{}}
}

// Visibility is the visibility the lease receives and extends with.
func (l *Lease) Visibility() time.Duration { return l.visibility }

// Add starts holding msgs.
func (l *Lease) Add(msgs ...*Message) {
	l.mu.Lock()
	for _, m := range msgs {
		l.held[m.ReceiptHandle] = m
	}
	l.mu.Unlock()
}

// Forget stops holding msgs without releasing them (they were deleted).
func (l *Lease) Forget(msgs ...*Message) {
	l.mu.Lock()
	for _, m := range msgs {
		delete(l.held, m.ReceiptHandle)
	}
	l.mu.Unlock()
}

// Len is the number of messages held.
func (l *Lease) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// Lost is the number of messages whose lease could not be kept.
func (l *Lease) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Run extends the visibility of held messages every third of the
// visibility until ctx ends. Run it in its own goroutine.
func (l *Lease) Run(ctx context.Context) {
	t := time.NewTicker(l.visibility / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Extend(ctx)
		}
	}
}

// Extend pushes the visibility of every held message out by the lease
// visibility, capped below the 12 h limit from receipt. Its calls are not
// abandoned when ctx ends (an abandoned call may still be applied by SQS
// after a release); they finish within their own deadline.
func (l *Lease) Extend(ctx context.Context) {
	l.extMu.Lock()
	defer l.extMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	now := time.Now()
	l.mu.Lock()
	groups := map[time.Duration][]*Message{}
	for _, m := range l.held {
		left := MaxVisibility - leaseMargin - now.Sub(m.ReceivedAt)
		d := min(l.visibility, left)
		if d <= 0 {
			continue // the lease ends on its own; nothing more can be done
		}
		groups[d.Truncate(time.Second)] = append(groups[d.Truncate(time.Second)], m)
	}
	l.mu.Unlock()
	for d, msgs := range groups {
		failed, err := l.c.ChangeVisibility(ctx, l.q, msgs, d)
		l.mu.Lock()
		for m, ferr := range failed {
			if _, still := l.held[m.ReceiptHandle]; !still {
				continue // deleted or released meanwhile: not a lost lease
			}
			if err == nil || ferr != err { // call-level errors are retried next tick
				delete(l.held, m.ReceiptHandle)
				l.lost++
				if l.OnLost != nil {
					l.OnLost(m, ferr)
				}
			}
		}
		l.mu.Unlock()
	}
}

// ReleaseAll makes every held message visible again (visibility 0). It uses
// its own short deadline so it still works after ctx was cancelled, and it
// waits for an extension in flight so that extension cannot hide the
// messages again afterwards.
func (l *Lease) ReleaseAll(ctx context.Context) error {
	l.extMu.Lock()
	defer l.extMu.Unlock()
	l.mu.Lock()
	msgs := make([]*Message, 0, len(l.held))
	for _, m := range l.held {
		msgs = append(msgs, m)
	}
	l.held = map[string]*Message{}
	l.mu.Unlock()
	return l.c.Release(ctx, l.q, msgs)
}

// Release stops holding msgs and makes them visible again, after any
// extension in flight (see ReleaseAll).
func (l *Lease) Release(ctx context.Context, msgs []*Message) error {
	l.extMu.Lock()
	defer l.extMu.Unlock()
	l.Forget(msgs...)
	return l.c.Release(ctx, l.q, msgs)
}

// Release makes msgs visible again, retrying call-level errors a few times
// with a fresh deadline so it works during shutdown.
func (c *Client) Release(ctx context.Context, q *Queue, msgs []*Message) error {
	if len(msgs) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	pending := msgs
	var lastErr error
	for attempt := 0; attempt < 4 && len(pending) > 0; attempt++ {
		failed, err := c.ChangeVisibility(rctx, q, pending, 0)
		lastErr = err
		var retry []*Message
		for m, ferr := range failed {
			if ferr == err && err != nil {
				retry = append(retry, m)
			}
		}
		pending = retry
		if len(pending) > 0 {
			_ = backoff(rctx, attempt+2)
		}
	}
	if len(pending) > 0 {
		return lastErr
	}
	return nil
}
