package sqs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// leaseMargin keeps extensions clear of SQS's 12 h visibility ceiling.
const leaseMargin = 2 * time.Minute

// minHeartbeatWait is the shortest pause between two extension passes.
const minHeartbeatWait = 500 * time.Millisecond

// ErrReceivedAgain means a message was received again (a new receipt
// handle) while a delete with its previous handle was on its way: SQS may
// have accepted that delete without deleting the message. It is still held
// under its new handle; delete it again.
var ErrReceivedAgain = errors.New("message was received again while being deleted; it may not have been deleted (still held under its new receipt handle: delete it again)")

// Lease keeps received messages invisible while dlqctl holds them: a
// heartbeat extends their visibility before it runs out (never past 12 h from
// receipt), and ReleaseAll makes everything still held visible again. Every
// code path that receives messages hands them to a Lease and releases it on
// exit, so nothing is left invisible behind a crash of the program logic.
//
// Messages are held by MessageID. When a message is received again, SQS
// gives it a new receipt handle and the old one goes stale (AWS may accept a
// delete with a stale handle without deleting anything), so the lease keeps
// only the newest handle of each message and every Delete, Release and
// extension uses it, whatever *Message the caller passes. A message without
// a MessageID is keyed by its receipt handle.
//
// A heartbeat extension already sent to SQS never lands after a Release or
// Delete of the same message: those wait for the extension calls in flight
// for their messages, and an extension never includes a message being
// deleted or already released.
type Lease struct {
	c          *Client
	q          *Queue
	visibility time.Duration

	mu   sync.Mutex
	idle *sync.Cond // on mu: an extension or delete of some entry finished
	held map[string]*leaseEntry
	lost map[string]struct{} // ids whose lease was lost, until received again or forgotten
	// lostN counts lease losses found by extensions (cumulative).
	lostN int

	extMu sync.Mutex // one extension pass at a time

	// OnLost, when set, is called for messages whose lease could not be
	// extended (receipt handle invalid, message not in flight, the 12 h limit
	// or another permanent failure). The message is then marked lost: no
	// longer held, never deleted or released with its dead handle.
	OnLost func(m *Message, err error)
	// OnSlowExtend, when set, is called after an extension pass that took
	// longer than a third of the visibility (the pass extended n messages);
	// Run then starts the next pass sooner.
	OnSlowExtend func(took time.Duration, n int)
	// BeforeExtend, when set, is told until when an extension about to be
	// sent hides its messages (the hold ledger is written first).
	BeforeExtend func(until time.Time)
}

// leaseEntry is what a Lease keeps of one message.
type leaseEntry struct {
	msg        *Message // the newest delivery handed to Add
	handle     string   // its receipt handle
	receivedAt time.Time
	expires    time.Time // when its visibility ends, as far as the lease knows
	extending  bool      // an extension call carrying handle is in flight
	deleting   bool      // a Delete carrying handle is in flight
}

func (e *leaseEntry) busy() bool { return e.extending || e.deleting }

// NewLease returns a lease on q that holds messages for visibility at a time.
func NewLease(c *Client, q *Queue, visibility time.Duration) *Lease {
	if visibility < 5*time.Second {
		visibility = 5 * time.Second
	}
	l := &Lease{c: c, q: q, visibility: visibility, held: map[string]*leaseEntry{}, lost: map[string]struct{}{}}
	l.idle = sync.NewCond(&l.mu)
	return l
}

func leaseKey(m *Message) string {
	if m.MessageID != "" {
		return m.MessageID
	}
	return "\x00rh:" + m.ReceiptHandle
}

// Add starts holding msgs (received with the lease's visibility). A message
// whose id is already held is a redelivery: its new receipt handle and
// ReceivedAt replace the held ones, and it is returned in redelivered (the
// caller is already processing it; this delivery is a duplicate). So is a
// message whose lease was lost and that nobody has tried to delete or
// release since (its lost mark is still set): the caller still has the
// first delivery in hand (its copy may be in an archive part not yet
// verified, or a send not yet confirmed), so it is held again under its new
// handle — the caller's Delete or Release of the first delivery then uses
// it — and returned in redelivered, never processed a second time. Once a
// Delete or Release has been refused for the lost lease (the caller was
// told ErrLeaseLost), the message is held again normally: the caller
// processes it again (removing it without a second copy when its copy is
// already durable). Adding a message with the handle already held changes
// nothing.
func (l *Lease) Add(msgs ...*Message) (redelivered []*Message) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		if m == nil {
			continue
		}
		k := leaseKey(m)
		_, wasLost := l.lost[k]
		delete(l.lost, k)
		at := m.ReceivedAt
		if at.IsZero() {
			at = now
		}
		if e, ok := l.held[k]; ok {
			if e.handle == m.ReceiptHandle {
				e.msg = m
				continue
			}
			e.msg, e.handle, e.receivedAt, e.expires = m, m.ReceiptHandle, at, at.Add(l.visibility)
			redelivered = append(redelivered, m)
			continue
		}
		l.held[k] = &leaseEntry{msg: m, handle: m.ReceiptHandle, receivedAt: at, expires: at.Add(l.visibility)}
		if wasLost {
			redelivered = append(redelivered, m)
		}
	}
	return redelivered
}

// Len is the number of messages held.
func (l *Lease) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// Lost is the number of lease losses the heartbeat found (cumulative; a
// message received again after its loss still counts).
func (l *Lease) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostN
}

// waitIdle waits (mu held) until none of keys has an extension or delete in
// flight.
func (l *Lease) waitIdle(keys []string) {
	for {
		busy := false
		for _, k := range keys {
			if e, ok := l.held[k]; ok && e.busy() {
				busy = true
				break
			}
		}
		if !busy {
			return
		}
		l.idle.Wait()
	}
}

// Delete deletes msgs (by id) with the newest receipt handle held for each
// and returns the outcome of every message that was not deleted:
//
//   - lease lost, or not held (never added, already deleted, released or
//     forgotten): not sent to SQS, an error wrapping ErrLeaseLost; the id is
//     forgotten. SQS answering that the handle is invalid is reported the
//     same way.
//   - received again while the delete was on its way: ErrReceivedAgain; the
//     message stays held under its new handle.
//   - any other failure (a per-entry error, or a *CallError when the call
//     failed: "may or may not have been deleted"): the message stays held,
//     so it is released at the end unless deleted again.
//
// Deleted messages are forgotten. Delete waits for an extension in flight
// for the same messages. It is not cut short by ctx ending (deletes are
// asked for once the messages are safe elsewhere; an abandoned call could
// still be applied): it has its own deadline, scaled to len(msgs).
func (l *Lease) Delete(ctx context.Context, msgs []*Message) map[*Message]error {
	res := map[*Message]error{}
	if len(msgs) == 0 {
		return res
	}
	// One entry per id, whatever number of *Message carry it.
	byKey := map[string][]*Message{}
	var keys []string
	for _, m := range msgs {
		if m == nil {
			continue
		}
		k := leaseKey(m)
		if _, seen := byKey[k]; !seen {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], m)
	}
	set := func(k string, err error) {
		for _, m := range byKey[k] {
			res[m] = err
		}
	}

	l.mu.Lock()
	l.waitIdle(keys)
	var (
		sendKeys []string
		handles  []string
		entries  []*leaseEntry
	)
	for _, k := range keys {
		if _, lost := l.lost[k]; lost {
			delete(l.lost, k)
			set(k, fmt.Errorf("%w: its lease was lost before the delete; not deleted (it must be received again)", ErrLeaseLost))
			continue
		}
		e, ok := l.held[k]
		if !ok {
			set(k, fmt.Errorf("%w: not held (never received, or already deleted or released); not deleted", ErrLeaseLost))
			continue
		}
		e.deleting = true
		sendKeys = append(sendKeys, k)
		handles = append(handles, e.handle)
		entries = append(entries, e)
	}
	l.mu.Unlock()
	if len(handles) == 0 {
		return res
	}

	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.BatchDeadline(len(handles)))
	defer cancel()
	errs, _ := l.c.deleteHandles(dctx, l.q, handles, batchRun{})

	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.idle.Broadcast()
	for i, k := range sendKeys {
		e := entries[i]
		e.deleting = false
		cur, still := l.held[k]
		mine := still && cur == e
		err := errs[i]
		switch {
		case mine && e.handle != handles[i]:
			// Received again while the delete was on its way: whether
			// the old handle deleted anything is unknown.
			set(k, ErrReceivedAgain)
		case err == nil:
			if mine {
				delete(l.held, k)
			}
		case errors.Is(err, ErrLeaseLost):
			if mine {
				delete(l.held, k)
			}
			set(k, err)
		default:
			set(k, err) // stays held: released at the end unless deleted again
		}
	}
	return res
}

// ReleaseAll makes every held message visible again (visibility 0) and
// stops holding them. It uses its own deadline (scaled to what is held) so
// it still works after ctx was cancelled, and it waits for extensions and
// deletes in flight so an extension cannot hide the messages again
// afterwards. Messages whose lease was lost are not sent. The error reports
// messages that could not be released (they become visible when their
// visibility timeout ends).
func (l *Lease) ReleaseAll(ctx context.Context) error {
	l.mu.Lock()
	for {
		busy := false
		for _, e := range l.held {
			if e.busy() {
				busy = true
				break
			}
		}
		if !busy {
			break
		}
		l.idle.Wait()
	}
	handles := make([]string, 0, len(l.held))
	for _, e := range l.held {
		handles = append(handles, e.handle)
	}
	l.held = map[string]*leaseEntry{}
	l.lost = map[string]struct{}{}
	l.mu.Unlock()
	return l.c.releaseHandles(ctx, l.q, handles)
}

// Release stops holding msgs (by id) and makes them visible again with
// their newest receipt handles, after any extension or delete in flight for
// them (see ReleaseAll). Messages not held or whose lease was lost are not
// sent (their lost mark is cleared).
func (l *Lease) Release(ctx context.Context, msgs []*Message) error {
	keys := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if m != nil {
			keys = append(keys, leaseKey(m))
		}
	}
	l.mu.Lock()
	l.waitIdle(keys)
	var handles []string
	for _, k := range keys {
		delete(l.lost, k)
		if e, ok := l.held[k]; ok {
			handles = append(handles, e.handle)
			delete(l.held, k)
		}
	}
	l.mu.Unlock()
	return l.c.releaseHandles(ctx, l.q, handles)
}

// Run extends the visibility of held messages until ctx ends, about every
// third of the visibility: the pause after a pass is shortened by the time
// the pass took, and by how close the earliest expiry is, so a slow pass
// (many messages, a slow link) still keeps up. Run it in its own goroutine.
func (l *Lease) Run(ctx context.Context) {
	period := l.visibility / 3
	wait := period
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		// Messages received or extended in the last sixth of the
		// visibility are left for the next pass.
		n, earliest := l.extend(ctx, l.visibility/6)
		took := time.Since(start)
		if took > period && l.OnSlowExtend != nil {
			l.OnSlowExtend(took, n)
		}
		wait = period - took
		if !earliest.IsZero() {
			// Start early enough that a pass as slow as this one reaches
			// the earliest expiry with a sixth of the visibility to spare.
			wait = min(wait, time.Until(earliest)-took-l.visibility/6)
		}
		wait = max(wait, minHeartbeatWait, l.visibility/12)
	}
}

// extend runs one extension pass over the messages held for at least
// minAge since their last receive or extension (0: all): it pushes their
// visibility out by the lease visibility, capped below the 12 h limit from
// receipt, the messages closest to expiry first, in concurrent batches. Its
// calls are not abandoned when ctx ends (an abandoned call may still be
// applied by SQS after a release); ctx ending only stops further calls.
// Messages SQS says are no longer in flight under their handle are marked
// lost (see OnLost); call-level failures are retried on the next pass. It
// returns how many it extended and the earliest expiry among the held
// messages that can still be extended.
func (l *Lease) extend(ctx context.Context, minAge time.Duration) (extended int, earliest time.Time) {
	l.extMu.Lock()
	defer l.extMu.Unlock()
	if ctx.Err() != nil {
		return 0, time.Time{}
	}
	l.mu.Lock()
	type cand struct {
		key     string
		expires time.Time
	}
	cands := make([]cand, 0, len(l.held))
	for k, e := range l.held {
		cands = append(cands, cand{k, e.expires})
	}
	l.mu.Unlock()
	sort.Slice(cands, func(i, j int) bool { return cands[i].expires.Before(cands[j].expires) })

	n := len(cands)
	handles := make([]string, n)
	secs := make([]int32, n)
	sentAt := make([]time.Time, n)
	ents := make([]*leaseEntry, n)
	var lost []lostMsg

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.BatchDeadline(n))
	defer cancel()
	r := batchRun{
		stop: func() bool { return ctx.Err() != nil },
		// Pick the chunk's messages as it is sent: those released, deleted
		// or being deleted meanwhile are left out.
		start: func(lo, hi int) []int {
			now := time.Now()
			if l.BeforeExtend != nil {
				l.BeforeExtend(now.Add(l.visibility))
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			idx := make([]int, 0, hi-lo)
			for i := lo; i < hi; i++ {
				e, ok := l.held[cands[i].key]
				if !ok || e.busy() || minAge > 0 && e.expires.After(now.Add(l.visibility-minAge)) {
					continue
				}
				d := min(l.visibility, MaxVisibility-leaseMargin-now.Sub(e.receivedAt)).Truncate(time.Second)
				if d <= 0 {
					continue // the lease ends on its own; nothing more can be done
				}
				e.extending = true
				ents[i], handles[i], secs[i], sentAt[i] = e, e.handle, int32(d/time.Second), now
				idx = append(idx, i)
			}
			return idx
		},
		done: func(idx []int, errs []error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			defer l.idle.Broadcast()
			for _, i := range idx {
				e := ents[i]
				e.extending = false
				err := errs[i]
				cur, still := l.held[cands[i].key]
				if !still || cur != e || e.handle != handles[i] {
					continue // deleted, released or received again meanwhile
				}
				switch {
				case err == nil:
					e.expires = sentAt[i].Add(time.Duration(secs[i]) * time.Second)
					extended++
				case errors.Is(err, ErrLeaseLost) || !retryable(err) && !isCallError(err):
					delete(l.held, cands[i].key)
					l.lost[cands[i].key] = struct{}{}
					l.lostN++
					lost = append(lost, lostMsg{e.msg, err})
				}
			}
		},
	}
	_, _ = l.c.changeVisibility(cctx, l.q, handles, func(i int) int32 { return secs[i] }, r)

	if l.OnLost != nil {
		for _, lm := range lost {
			l.OnLost(lm.m, lm.err)
		}
	}
	now := time.Now()
	l.mu.Lock()
	for _, e := range l.held {
		if now.Sub(e.receivedAt) >= MaxVisibility-leaseMargin {
			continue // past the 12 h limit: its lease ends on its own
		}
		if earliest.IsZero() || e.expires.Before(earliest) {
			earliest = e.expires
		}
	}
	l.mu.Unlock()
	return extended, earliest
}

type lostMsg struct {
	m   *Message
	err error
}

func isCallError(err error) bool {
	var ce *CallError
	return errors.As(err, &ce)
}

// releaseHandles makes the messages of handles visible again (visibility 0)
// in concurrent batches, retrying call-level failures a few times, under its
// own deadline scaled to their number so it works during shutdown. Handles
// SQS no longer accepts (deleted, or received by someone else) are not an
// error: the message is not ours to release.
func (c *Client) releaseHandles(ctx context.Context, q *Queue, handles []string) error {
	if len(handles) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.BatchDeadline(len(handles))+10*time.Second)
	defer cancel()
	pending := handles
	var failed []error
	for attempt := 0; attempt < 4 && len(pending) > 0; attempt++ {
		errs, _ := c.changeVisibility(rctx, q, pending, func(int) int32 { return 0 }, batchRun{})
		var retry []string
		failed = failed[:0]
		for i, err := range errs {
			switch {
			case err == nil, errors.Is(err, ErrLeaseLost):
			case isCallError(err):
				retry = append(retry, pending[i])
				failed = append(failed, err)
			default:
				failed = append(failed, err)
			}
		}
		if len(retry) == 0 {
			break
		}
		pending = retry
		if attempt < 3 && backoff(rctx, attempt+2) != nil {
			break
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d messages could not be released (%w); they become visible again when their visibility timeout ends", len(failed), len(handles), failed[0])
	}
	return nil
}

// Release makes msgs visible again with their own receipt handles, in
// concurrent batches, retrying call-level errors a few times under its own
// deadline so it works during shutdown. Messages held in a Lease should be
// released with Lease.Release, which uses their newest handles.
func (c *Client) Release(ctx context.Context, q *Queue, msgs []*Message) error {
	return c.releaseHandles(ctx, q, handlesOf(msgs))
}
