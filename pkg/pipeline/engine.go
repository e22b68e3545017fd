package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	queue "github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// ErrHeldLimit is returned (wrapped) by Source.Next when the source cannot
// hand out more without exceeding the queue's in-flight limit (the run's own
// cap, or SQS answering OverLimit). The engine ends the run as partial.
var ErrHeldLimit = errors.New("in-flight limit reached")

// stuckPatience is how long a run keeps polling a standard queue whose
// counts show visible messages that no receive returns.
const stuckPatience = 30 * time.Second

// Options configure a run.
type Options struct {
	// Workers receive, decide and deliver concurrently (default 8).
	Workers int
	// Rate is the delivery rate in messages per second (0 = unlimited).
	// Ramp, when set, replaces it: the rate starts at Ramp[0] and steps to
	// the next value every RampEvery (default 1m) while no guard pauses.
	Rate      float64
	Ramp      []float64
	RampEvery time.Duration
	// Max delivers at most this many items (0 = no limit); items beyond it
	// are released.
	Max int
	// StopWhen, when set, is asked before every receive; true ends the run
	// (a sample that has read enough).
	StopWhen func() bool
	// Total is the expected number of items (for the ETA; 0 unknown).
	Total  int
	Guards Guards
	// WaitInFlight is how long the run waits, at its end, for messages in
	// flight that it does not hold (a receive whose answer was lost,
	// another consumer) to become visible again and be processed. 0 does
	// not wait: such messages are reported and the run is partial.
	WaitInFlight time.Duration
	// EmptyReceives ends a worker after that many consecutive empty
	// batches from a source that is not a Drainer (default 2).
	EmptyReceives int
	// Peers is the number of processes sharing the source (--rate-share
	// i/N; 0 or 1: this run is alone). A shared run ends when nothing is
	// visible for it: messages in flight that it does not hold are its
	// peers' (InFlightAtPeers), not waited for and not a failure — unless
	// one of its own receives may have lost its answer (the source reports
	// Remaining.LostUntil), which it then waits out like a single run.
	Peers int
	// AckBeforeDeliver makes each worker wait until its previous batch was
	// removed from the source before it delivers the next, so at most one
	// batch per worker is durable at the sink and still at the source at
	// any moment (a redrive's duplicate bound after kill -9: a peer that
	// receives such a message again sends it again). Leave it off for sinks
	// that make a batch durable only later (archive parts).
	AckBeforeDeliver bool
	Reporter         Reporter
}

// Result is the accounting of a run: every item received ends in exactly
// one of Delivered, Resumed, Skipped, Released, Refused, Unknown, NotAcked.
type Result struct {
	Received   int `json:"received"`
	Duplicates int `json:"duplicates"`
	// Delivered: durable at the sink and removed from the source.
	Delivered int `json:"delivered"`
	// Resumed: already durable (an earlier attempt), removed from the source.
	Resumed int            `json:"resumed"`
	Skipped map[string]int `json:"skipped"`
	// Released: given back unprocessed (beyond --max, or the run stopped).
	Released int `json:"released"`
	// Refused: the destination refused them; they stay at the source.
	Refused int `json:"refused"`
	// Unknown: the delivery call failed; the copies may or may not exist.
	Unknown int `json:"unknown_outcome"`
	// NotAcked: durable at the sink but still at the source (the removal
	// failed, or the lease was lost: LeaseLost of them); a re-run removes
	// them without delivering again.
	NotAcked  int `json:"not_acked"`
	LeaseLost int `json:"lease_lost"`
	// NotAckedIDs lists (up to 1000) the ids of NotAcked items with reasons.
	NotAckedIDs []FailedItem `json:"not_acked_ids,omitempty"`

	Interrupted bool        `json:"interrupted"`
	Guard       *GuardEvent `json:"guard,omitempty"`
	Errors      []string    `json:"errors,omitempty"`

	// Complete: the source was read to its end and the reconciliation
	// found nothing left that the run did not account for.
	Complete bool `json:"complete"`
	// Blocked: visible messages that could not be received because their
	// FIFO group is locked behind a message the run holds.
	Blocked int `json:"blocked,omitempty"`
	// InFlightElsewhere: messages in flight that the run did not hold when
	// it ended (they return after ReturnAfter).
	InFlightElsewhere int           `json:"in_flight_elsewhere,omitempty"`
	ReturnAfter       time.Duration `json:"-"`
	// InFlightAtPeers (a shared run, Options.Peers > 1): messages in flight
	// that the run did not hold when it ended, and that no receive of its
	// own can have lost: its peers hold them, and their runs account for
	// them. Not a failure.
	InFlightAtPeers int `json:"in_flight_at_peers,omitempty"`
	// LockedByPeers (a shared run on a FIFO queue): visible messages no
	// receive returned because their groups are locked behind messages its
	// peers hold; the peers read them once those are removed.
	LockedByPeers int `json:"locked_by_peers,omitempty"`
	// VisibleLeft: visible messages the run could not receive (standard
	// queue; approximate).
	VisibleLeft int `json:"visible_left,omitempty"`
	// HeldLimit: the run stopped at the queue's in-flight limit.
	HeldLimit bool `json:"held_limit,omitempty"`
	// StoppedAtMax: the run stopped at Options.Max or StopWhen.
	StoppedAtMax bool `json:"stopped_at_max,omitempty"`
	// Note says in one sentence why the run is not complete.
	Note string `json:"note,omitempty"`

	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Rate           float64 `json:"rate"`
}

// FailedItem is an item that could not be processed, and why.
type FailedItem struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
}

// SkippedTotal is the number of skipped items.
func (r *Result) SkippedTotal() int {
	n := 0
	for _, v := range r.Skipped {
		n += v
	}
	return n
}

// AckObserver is an optional Sink interface: Acked is called with the ids of
// items removed from the source after a durable delivery (or AckOnly).
type AckObserver interface {
	// Acked gets the removed items (slim records: id and class) and, for
	// delivered ones, their decisions' labels (nil for AckOnly items).
	Acked(items []Item, labels []string)
}

// Discarder is an optional Sink interface: Discard drops buffered
// deliveries when the run stops early (their commits resolve with an error,
// so their items are released, not acked).
type Discarder interface {
	Discard()
}

type engine struct {
	opt   Options
	src   Source
	sink  Sink
	drain Drainer
	start time.Time

	limiter *rate.Limiter
	target  atomic.Value // float64

	received  atomic.Int64
	delivered atomic.Int64
	resumed   atomic.Int64
	skipped   atomic.Int64
	failed    atomic.Int64
	reserved  atomic.Int64
	// pendingAcks counts delivered items whose commit or removal is still
	// under way: on a FIFO queue they lock their groups until removed.
	pendingAcks atomic.Int64
	// processing counts items received and still being decided or
	// delivered by their worker (they hold their FIFO groups too).
	processing atomic.Int64
	// lastDrainCheck is when a full batch last checked the queue's counts
	// (unix nanoseconds).
	lastDrainCheck atomic.Int64

	// srcCounts: the source adds received items to processing itself
	// (ReceiveCounter).
	srcCounts bool

	mu  sync.Mutex
	res *Result
	// notAcked: durable at the sink but not removed from the source (yet).
	notAcked map[string]notAckedItem
	// released: ids given back to the source during the run and not
	// received again since (a continuing run reads them again).
	released    map[string]struct{}
	paused      bool
	pauseCh     chan struct{}
	pausedSince time.Time
	guardTrip   *GuardEvent
	stopErr     error
	cancelRun   context.CancelFunc
	samples     []sample

	// end detection
	endMu         sync.Mutex
	ended         bool
	stuck         int
	stuckSince    time.Time
	releasedSince time.Time
	waitSince     time.Time
	sourceDone    atomic.Bool
	heldLimit     atomic.Bool
	stoppedAtMx   atomic.Bool
}

type sample struct {
	t time.Time
	n int64
}

// Run reads src until it is drained (or Max, StopWhen, a guard, an error or
// ctx ends it), delivering to sink. It finishes batches already handed to
// the sink when ctx is cancelled, acks what became durable, releases the
// rest through src.Close (which the caller calls), and reconciles. The error
// is non-nil only for failures not reflected in the Result.
func Run(ctx context.Context, src Source, sink Sink, opt Options) (*Result, error) {
	if opt.Workers <= 0 {
		opt.Workers = 8
	}
	if opt.EmptyReceives <= 0 {
		opt.EmptyReceives = 2
	}
	if opt.Guards.Every <= 0 {
		opt.Guards.Every = 10 * time.Second
	}
	if opt.Guards.OnGuard == "" {
		opt.Guards.OnGuard = GuardAbort
	}
	e := &engine{opt: opt, src: src, sink: sink, start: time.Now(),
		res: &Result{Skipped: map[string]int{}}, pauseCh: make(chan struct{})}
	close(e.pauseCh)
	e.drain, _ = src.(Drainer)
	if rc, ok := src.(ReceiveCounter); ok {
		rc.CountReceived(func(n int) { e.processing.Add(int64(n)) })
		e.srcCounts = true
	}
	first := opt.Rate
	if len(opt.Ramp) > 0 {
		first = opt.Ramp[0]
	}
	e.target.Store(first)
	if first > 0 {
		e.limiter = rate.NewLimiter(rate.Limit(first), queue.MaxBatchEntries)
		e.limiter.AllowN(time.Now(), queue.MaxBatchEntries) // start empty: no burst above the rate
	}
	runCtx, cancel := context.WithCancel(ctx)
	e.cancelRun = cancel
	defer cancel()

	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	bgWG.Add(2)
	go func() { defer bgWG.Done(); e.progressLoop(bg) }()
	go func() { defer bgWG.Done(); e.guardLoop(bg) }()
	if len(opt.Ramp) > 1 {
		bgWG.Add(1)
		go func() { defer bgWG.Done(); e.rampLoop(bg) }()
	}

	ackers := make([]*acker, opt.Workers)
	var ackWG sync.WaitGroup
	for w := range ackers {
		ackers[w] = newAcker()
		ackWG.Add(1)
		go func(a *acker) { defer ackWG.Done(); a.run(e) }(ackers[w])
	}
	var wg sync.WaitGroup
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func(w int) { defer wg.Done(); e.worker(runCtx, w, ackers[w]) }(w)
	}
	wg.Wait()

	fin := context.WithoutCancel(ctx)
	clean := ctx.Err() == nil && e.failedStop() == nil && e.tripped() == nil
	if clean {
		if _, err := sink.Flush(fin); err != nil {
			e.stop(err)
		}
	} else if d, ok := sink.(Discarder); ok {
		d.Discard()
	}
	for _, a := range ackers {
		a.close()
	}
	ackWG.Wait()
	stopBG()
	bgWG.Wait()
	e.checkGuards(fin, true)
	e.report()
	e.recount(fin)
	leftover, left := askLeftover(fin, src, clean && !e.stoppedAtMx.Load() && !e.heldLimit.Load())

	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.res
	r.Received = int(e.received.Load())
	r.Delivered = int(e.delivered.Load())
	r.Resumed = int(e.resumed.Load())
	r.Guard = e.guardTrip
	r.Interrupted = ctx.Err() != nil && r.Guard == nil
	r.HeldLimit = e.heldLimit.Load()
	r.StoppedAtMax = e.stoppedAtMx.Load()
	r.ElapsedSeconds = time.Since(e.start).Seconds()
	if r.ElapsedSeconds > 0 {
		r.Rate = float64(r.Delivered) / r.ElapsedSeconds
	}
	e.settleNotAckedLocked(r)
	e.reconcileLocked(r)
	if left {
		applyLeftoverLocked(r, leftover)
	}
	return r, e.stopErr
}

// recount replaces the end decision's snapshot of what was left (blocked,
// visible, in flight elsewhere) with the queue's counts once every worker
// and acker has stopped: workers that were mid-receive when reading ended
// may have delivered more, and removals may have unlocked FIFO groups.
func (e *engine) recount(ctx context.Context) {
	e.mu.Lock()
	r := e.res
	left := r.Blocked > 0 || r.VisibleLeft > 0 || r.InFlightElsewhere > 0 || r.InFlightAtPeers > 0 || r.LockedByPeers > 0
	e.mu.Unlock()
	if !left || e.drain == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var rem Remaining
	var err error
	if st, ok := e.drain.(Settler); ok {
		rem, err = st.Settle(rctx)
	} else {
		rem, err = e.drain.Remaining(rctx)
	}
	if err != nil {
		return // keep the snapshot
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.Blocked > 0 || r.VisibleLeft > 0 {
		r.Blocked, r.VisibleLeft = 0, 0
		if rem.Groups {
			r.Blocked = rem.Visible
		} else {
			r.VisibleLeft = rem.Visible
		}
	}
	if r.InFlightElsewhere > 0 {
		r.InFlightElsewhere = rem.InFlightElsewhere
	}
	if r.InFlightAtPeers > 0 || r.LockedByPeers > 0 {
		r.InFlightAtPeers = rem.InFlightElsewhere
		if r.LockedByPeers > 0 {
			r.LockedByPeers = rem.Visible
		}
	}
}

type notAckedItem struct {
	reason    string
	leaseLost bool
}

// settleNotAckedLocked turns what is still durable-but-not-removed into
// the result's counts.
func (e *engine) settleNotAckedLocked(r *Result) {
	r.NotAcked, r.LeaseLost, r.NotAckedIDs = len(e.notAcked), 0, nil
	ids := make([]string, 0, len(e.notAcked))
	for id, n := range e.notAcked {
		ids = append(ids, id)
		if n.leaseLost {
			r.LeaseLost++
		}
	}
	sort.Strings(ids)
	for _, id := range ids[:min(len(ids), 1000)] {
		r.NotAckedIDs = append(r.NotAckedIDs, FailedItem{MessageID: id, Reason: e.notAcked[id].reason})
	}
}

// reconcileLocked decides whether the run is complete and says why not.
func (e *engine) reconcileLocked(r *Result) {
	switch {
	case r.Guard != nil, r.Interrupted, e.stopErr != nil:
		r.Note = "the run stopped before the source was drained"
	case r.HeldLimit:
		r.Note = "stopped at the queue's in-flight limit: the run holds as many messages as SQS lets one queue have in flight; run again (a run that removes what it processed continues where this one ended)"
	case r.StoppedAtMax:
		r.Note = "stopped at the requested maximum"
	case r.Blocked > 0:
		r.Note = fmt.Sprintf("%d message(s) could not be read: a FIFO group's later messages cannot be received while an earlier message of the group is held", r.Blocked)
	case r.InFlightElsewhere > 0:
		r.Note = fmt.Sprintf("%d message(s) were in flight elsewhere (a receive whose answer was lost, or another consumer) and did not come back; they become visible again within %s — re-run then", r.InFlightElsewhere, r.ReturnAfter.Round(time.Second))
	case r.VisibleLeft > 0:
		r.Note = fmt.Sprintf("the queue still reports %d visible message(s) that no receive returned; re-run to process them", r.VisibleLeft)
	case len(e.released) > 0:
		r.Note = fmt.Sprintf("%d message(s) were given back to the source during the run and not read again; re-run to process them", len(e.released))
	}
	r.Complete = r.Note == "" && r.Unknown == 0 && r.Refused == 0 && r.NotAcked == 0
	if r.Note == "" && !r.Complete {
		r.Note = fmt.Sprintf("%d message(s) were not processed (%d refused, %d with unknown outcome, %d durable but still in the source); re-run to retry", r.Refused+r.Unknown+r.NotAcked, r.Refused, r.Unknown, r.NotAcked)
	}
}

func (e *engine) failedStop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopErr
}

func (e *engine) tripped() *GuardEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.guardTrip
}

// stop ends the run because of an error that is not per-item.
func (e *engine) stop(err error) {
	e.mu.Lock()
	if e.stopErr == nil {
		e.stopErr = err
	}
	e.addErrorLocked(err.Error())
	e.mu.Unlock()
	e.cancelRun()
}

func (e *engine) addError(s string) {
	e.mu.Lock()
	e.addErrorLocked(s)
	e.mu.Unlock()
}

func (e *engine) addErrorLocked(s string) {
	for _, x := range e.res.Errors {
		if x == s {
			return
		}
	}
	if len(e.res.Errors) < 10 {
		e.res.Errors = append(e.res.Errors, s)
	}
}

func (e *engine) event(ev Event) {
	if e.opt.Reporter.Event != nil {
		e.opt.Reporter.Event(ev)
	}
}

func (e *engine) waitGate(ctx context.Context) bool {
	e.mu.Lock()
	ch := e.pauseCh
	e.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *engine) maxReached() bool {
	if e.opt.Max > 0 && e.reserved.Load() >= int64(e.opt.Max) {
		e.stoppedAtMx.Store(true)
		return true
	}
	if e.opt.StopWhen != nil && e.opt.StopWhen() {
		e.stoppedAtMx.Store(true)
		return true
	}
	return false
}

func (e *engine) isEnded() bool {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	return e.ended
}

func (e *engine) worker(runCtx context.Context, w int, ack *acker) {
	empty := 0
	for runCtx.Err() == nil && !e.isEnded() {
		if !e.waitGate(runCtx) {
			return
		}
		if e.maxReached() {
			return
		}
		items, err := e.src.Next(runCtx, queue.MaxBatchEntries)
		// From here until they are processed or given back, the items
		// count as processing: a source that counts them itself does so
		// before the queue's counts can be read again (ReceiveCounter).
		if len(items) > 0 && !e.srcCounts {
			e.processing.Add(int64(len(items)))
		}
		inHand := int64(len(items))
		if errors.Is(err, ErrSourceDone) {
			e.processing.Add(-inHand)
			e.sourceDone.Store(true)
			e.endWith(func() {})
			return
		}
		if errors.Is(err, ErrHeldLimit) {
			e.heldLimit.Store(true)
			e.endWith(func() {})
			if len(items) == 0 {
				return
			}
			err = nil
		}
		if err != nil {
			_ = e.src.Release(context.WithoutCancel(runCtx), items)
			e.processing.Add(-inHand)
			if runCtx.Err() != nil {
				return
			}
			e.stop(fmt.Errorf("reading %s: %w", e.src.Name(), err))
			return
		}
		e.received.Add(int64(len(items)))
		e.mu.Lock()
		if len(e.released) > 0 {
			for _, it := range items {
				delete(e.released, it.Record.MessageID)
			}
		}
		e.mu.Unlock()
		if runCtx.Err() != nil {
			e.releaseItems(context.WithoutCancel(runCtx), items, "")
			e.processing.Add(-inHand)
			return
		}
		if len(items) > 0 {
			e.process(runCtx, w, items, ack)
			e.processing.Add(-inHand)
		}
		if e.drain == nil {
			if len(items) == 0 {
				if empty++; empty >= e.opt.EmptyReceives {
					return
				}
			} else {
				empty = 0
			}
			continue
		}
		// A short batch may mean the end; so may a full one, which is
		// checked at most every drainCheckEvery across all workers (a queue
		// holding a multiple of ten messages gives no short batch).
		if (len(items) < queue.MaxBatchEntries || e.drainCheckDue()) && e.shortReceive(runCtx, len(items)) {
			return
		}
	}
}

// abandonIfSafe ends the other workers' pending long polls once the queue
// is drained, when the run will give nothing back at its end (nothing
// skipped or refused is held, nothing released, no failure): then an
// abandoned poll can only take a message that arrived after the drain.
func (e *engine) abandonIfSafe() {
	a, ok := e.src.(Abandoner)
	if !ok || e.skipped.Load() > 0 || e.failed.Load() > 0 {
		return
	}
	e.mu.Lock()
	safe := e.stopErr == nil && e.res.Unknown == 0 && e.res.Released == 0
	e.mu.Unlock()
	if safe {
		a.AbandonReceives()
	}
}

// idleCheck runs when the run has nothing in process and nothing being
// removed — the moment the queue's counts are exact for it: if the queue is
// drained, reading ends now instead of after the workers' next empty long
// polls (which are abandoned when that is safe).
func (e *engine) idleCheck() {
	if e.drain == nil || e.isEnded() {
		return
	}
	e.endMu.Lock()
	defer e.endMu.Unlock()
	if e.ended {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rem, err := e.drain.Remaining(ctx)
	if err != nil || rem.Visible > 0 || rem.InFlightElsewhere > 0 || e.processing.Load() > 0 {
		return
	}
	e.mu.Lock()
	released := len(e.released)
	e.mu.Unlock()
	if released > 0 {
		return
	}
	e.ended = true
	e.abandonIfSafe()
}

// drainCheckEvery spaces the queue-count checks after full batches.
const drainCheckEvery = 100 * time.Millisecond

// drainCheckDue reports whether a full batch should check the queue's
// counts now (at most once per drainCheckEvery, across all workers).
func (e *engine) drainCheckDue() bool {
	now := time.Now().UnixNano()
	last := e.lastDrainCheck.Load()
	if now-last < int64(drainCheckEvery) {
		return false
	}
	return e.lastDrainCheck.CompareAndSwap(last, now)
}

// awaitReleased reports whether messages the run gave back during the run
// (and that a continuing run must read again) have not come back yet; it
// waits for them at most stuckPatience. endMu is held.
func (e *engine) awaitReleased() bool {
	e.mu.Lock()
	n := len(e.released)
	e.mu.Unlock()
	if n == 0 || e.maxReached() {
		return false
	}
	if e.releasedSince.IsZero() {
		e.releasedSince = time.Now()
	}
	return time.Since(e.releasedSince) < stuckPatience
}

// endWith marks the run's reading as over.
func (e *engine) endWith(f func()) {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	e.ended = true
	f()
}

// shortReceive runs after a receive that returned fewer items than asked:
// it asks the source what is left and decides whether reading is over. It
// reports true when the worker should stop.
func (e *engine) shortReceive(ctx context.Context, n int) bool {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	if e.ended {
		return true
	}
	rem, err := e.drain.Remaining(ctx)
	if err == nil && n > 0 && (rem.Visible > 0 || rem.InFlightElsewhere > 0) {
		// Messages are still coming (or being received by other workers
		// right now); the empty receives that follow decide the rest.
		e.stuck, e.stuckSince = 0, time.Time{}
		return false
	}
	// Nothing visible and nothing in flight beyond what the run holds: no
	// receive can be half done with messages either (they would count as
	// in flight and not held), so the queue is drained. Otherwise decide on
	// counts read while no other receive is half done, or messages another
	// worker is receiving right now would look like messages in flight
	// elsewhere.
	// While removals are under way the lease may still count a message the
	// server already deleted, which would hide a message in flight
	// elsewhere: the end is decided once they landed (the acker that lands
	// the last one checks again, see idleCheck).
	if err == nil && e.pendingAcks.Load() > 0 && rem.Visible <= 0 {
		// Deliveries a sink buffers (an open archive part) become durable
		// now, so their removals can land.
		if _, ferr := e.sink.Flush(context.WithoutCancel(ctx)); ferr != nil {
			e.ended = true
			e.stop(ferr)
			return true
		}
		return false
	}
	drained := err == nil && rem.Visible <= 0 && rem.InFlightElsewhere <= 0
	if st, ok := e.drain.(Settler); ok && err == nil && !drained {
		rem, err = st.Settle(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return true
		}
		// Counts unavailable: fall back to an empty receive as the end.
		if n == 0 {
			e.ended = true
			return true
		}
		return false
	}
	if rem.Visible <= 0 && rem.InFlightElsewhere <= 0 {
		if e.awaitReleased() {
			return false // a release of this run is landing: read it again
		}
		e.ended = true
		e.abandonIfSafe()
		return true
	}
	if n > 0 {
		e.stuck, e.stuckSince = 0, time.Time{}
		return false // messages are still coming; keep reading
	}
	if rem.Visible > 0 {
		// Nothing came back although the queue has visible messages: on a
		// FIFO queue their groups are locked behind messages we hold. A
		// buffered delivery (an open archive part) is made durable so its
		// messages can be removed and their groups unlocked.
		if flushed, ferr := e.sink.Flush(context.WithoutCancel(ctx)); ferr != nil {
			e.ended = true
			e.stop(ferr)
			return true
		} else if flushed {
			e.stuck, e.stuckSince = 0, time.Time{}
			return false
		}
		// A FIFO queue whose groups are locked stays stuck; on a standard
		// queue, counts that lag behind deletes (AWS) or a server too busy
		// to answer within the long poll (the emulator) settle: keep
		// polling for a while before calling the messages unreadable.
		if rem.Groups && e.pendingAcks.Load()+e.processing.Load() > 0 {
			// Groups locked behind messages this run is still processing or
			// removing (a part being verified, a journal write, a delete):
			// they unlock when the removal lands.
			e.stuck, e.stuckSince = 0, time.Time{}
			return false
		}
		if e.stuckSince.IsZero() {
			e.stuckSince = time.Now()
		}
		e.stuck++
		if rem.Groups && e.stuck < 3 || !rem.Groups && time.Since(e.stuckSince) < stuckPatience {
			return false
		}
		e.ended = true
		e.mu.Lock()
		switch {
		case rem.Groups && e.peersHold(rem, time.Now()):
			// A shared run that holds nothing of these groups itself: its
			// peers hold their heads and read the rest once those are
			// removed.
			e.res.LockedByPeers = rem.Visible
			e.res.InFlightAtPeers = rem.InFlightElsewhere
		case rem.Groups:
			e.res.Blocked = rem.Visible
		default:
			e.res.VisibleLeft = rem.Visible
		}
		e.mu.Unlock()
		return true
	}
	// Only messages in flight elsewhere are left — unless removals of this
	// run are still under way (a message being deleted can look in flight
	// and not held): decide once they landed.
	if e.pendingAcks.Load() > 0 {
		return false
	}
	now := time.Now()
	if e.peersHold(rem, now) {
		// A shared run: what it does not hold, its peers do (no receive of
		// its own can have lost messages). They account for those; this
		// run is done with what was visible for it.
		e.ended = true
		e.mu.Lock()
		e.res.InFlightAtPeers = rem.InFlightElsewhere
		e.mu.Unlock()
		return true
	}
	if e.waitSince.IsZero() {
		e.waitSince = now
	}
	limit := e.opt.WaitInFlight
	if rem.ReturnAfter > 0 && limit > rem.ReturnAfter+5*time.Second {
		limit = rem.ReturnAfter + 5*time.Second
	}
	if limit > 0 && now.Sub(e.waitSince) < limit {
		return false // keep polling: they come back when their visibility ends
	}
	e.ended = true
	e.mu.Lock()
	e.res.InFlightElsewhere = rem.InFlightElsewhere
	e.res.ReturnAfter = rem.ReturnAfter
	e.mu.Unlock()
	return true
}

// peersHold reports whether, in a shared run, the messages in flight that
// the run does not hold are surely its peers': none of its own receives
// can have lost its answer (or those messages are back by now), and — for
// locked FIFO groups — the run holds no skipped message that could be
// locking them itself.
func (e *engine) peersHold(rem Remaining, now time.Time) bool {
	if e.opt.Peers <= 1 || rem.InFlightElsewhere <= 0 || now.Before(rem.LostUntil) {
		return false
	}
	return !rem.Groups || e.skipped.Load() == 0
}

func (e *engine) releaseItems(ctx context.Context, items []Item, reason string) {
	if len(items) == 0 {
		return
	}
	// Noted before the release: a worker may receive them again before
	// Release returns.
	e.mu.Lock()
	e.res.Released += len(items)
	if e.released == nil {
		e.released = map[string]struct{}{}
	}
	for _, it := range items {
		e.released[it.Record.MessageID] = struct{}{}
	}
	e.mu.Unlock()
	if err := e.src.Release(ctx, items); err != nil {
		e.addError(fmt.Sprintf("releasing %d message(s) failed (%v); they become visible again when their visibility timeout ends", len(items), err))
	}
	_ = reason
}

type pendingItem struct {
	it  Item
	dec Decision
}

func (e *engine) process(runCtx context.Context, w int, items []Item, ack *acker) {
	fin := context.WithoutCancel(runCtx)
	var release, ackOnly []Item
	var order []string
	groups := map[string][]pendingItem{}
	for _, it := range items {
		dec, err := e.sink.Prepare(runCtx, it)
		if err != nil {
			release = append(release, it)
			if runCtx.Err() == nil {
				e.stop(err)
			}
			continue
		}
		switch dec.Verb {
		case Skip:
			e.skipped.Add(1)
			e.mu.Lock()
			e.res.Skipped[dec.Reason]++
			e.mu.Unlock()
			e.event(Event{MessageID: it.Record.MessageID, Action: "skipped", Reason: dec.Reason, Class: it.Record.Class})
		case AckOnly:
			ackOnly = append(ackOnly, it)
		case Release:
			release = append(release, it)
		case Deliver:
			if e.opt.Max > 0 && e.reserved.Add(1) > int64(e.opt.Max) {
				e.stoppedAtMx.Store(true)
				release = append(release, it)
				continue
			} else if e.opt.Max <= 0 {
				e.reserved.Add(1)
			}
			if _, ok := groups[dec.Key]; !ok {
				order = append(order, dec.Key)
			}
			groups[dec.Key] = append(groups[dec.Key], pendingItem{it: it, dec: dec})
		}
	}
	e.releaseItems(fin, release, "")
	if len(ackOnly) > 0 {
		e.pendingAcks.Add(int64(len(ackOnly)))
		ack.push(ackJob{items: slimItems(ackOnly), resumed: true})
	}
	for _, key := range order {
		ps := groups[key]
		for len(ps) > 0 {
			n, size := 0, 0
			for n < len(ps) && n < queue.MaxBatchEntries && (n == 0 || size+ps[n].dec.Size <= queue.MaxBatchBytes) {
				size += ps[n].dec.Size
				n++
			}
			e.deliver(runCtx, w, key, ps[:n], ack)
			ps = ps[n:]
		}
	}
}

// waitTokens waits for guards and rate tokens; false means the run is
// stopping and the batch must be released undelivered.
func (e *engine) waitTokens(ctx context.Context, n int) bool {
	if !e.waitGate(ctx) {
		return false
	}
	if e.limiter == nil {
		return ctx.Err() == nil
	}
	return e.limiter.WaitN(ctx, n) == nil
}

func (e *engine) deliver(runCtx context.Context, w int, key string, batch []pendingItem, ack *acker) {
	fin := context.WithoutCancel(runCtx)
	items := make([]Item, len(batch))
	payloads := make([]any, len(batch))
	for i, p := range batch {
		items[i] = p.it
		payloads[i] = p.dec.Payload
	}
	if !e.waitTokens(runCtx, len(batch)) {
		e.releaseItems(fin, items, "stopping")
		return
	}
	if e.opt.AckBeforeDeliver {
		ack.waitIdle()
	}
	outs, commit := e.sink.Deliver(fin, w, key, items, payloads)
	var accepted []Item
	var details, labels []string
	var unknown, notSent []Item
	var unknownErr, notSentErr error
	for i, p := range batch {
		var o Outcome
		if i < len(outs) {
			o = outs[i]
		} else {
			o.Err = errors.New("the sink gave no outcome for this message")
		}
		var refused *RefusedError
		var undelivered *UndeliveredError
		switch {
		case errors.As(o.Err, &undelivered):
			notSent = append(notSent, p.it)
			notSentErr = undelivered.Err
		case o.Err == nil:
			accepted = append(accepted, p.it)
			details = append(details, o.Detail)
			labels = append(labels, p.dec.Label)
		case errors.As(o.Err, &refused):
			e.failed.Add(1)
			e.mu.Lock()
			e.res.Refused++
			e.addErrorLocked(fmt.Sprintf("%s refused a message: %v", p.dec.Label, refused.Err))
			e.mu.Unlock()
			e.event(Event{MessageID: p.it.Record.MessageID, Action: "failed", Dest: p.dec.Label, Reason: refused.Err.Error(), Class: p.it.Record.Class})
			// held until the end of the run, then released: it stays at the source
		default:
			unknown = append(unknown, p.it)
			unknownErr = o.Err
			e.event(Event{MessageID: p.it.Record.MessageID, Action: "unknown", Dest: p.dec.Label, Reason: o.Err.Error(), Class: p.it.Record.Class})
		}
	}
	if len(notSent) > 0 {
		e.releaseItems(fin, notSent, "not sent")
		e.stop(notSentErr)
	}
	if len(unknown) > 0 {
		e.mu.Lock()
		e.res.Unknown += len(unknown)
		e.mu.Unlock()
		e.releaseItems(fin, unknown, "unknown")
		e.stop(fmt.Errorf("delivering to %s failed: %w", batch[0].dec.Label, unknownErr))
	}
	if len(accepted) > 0 {
		e.pendingAcks.Add(int64(len(accepted)))
		ack.push(ackJob{items: slimItems(accepted), commit: commit, details: details, labels: labels})
	}
}

// slimItems keeps what acking and reporting need, not the bodies: a batch
// can wait in an acker queue for a whole archive part.
func slimItems(items []Item) []Item {
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = Item{Record: &queue.Record{MessageID: it.Record.MessageID, Class: it.Record.Class}, Handle: it.Handle}
	}
	return out
}

// ackJob is one batch waiting for its commit, then removed from the source.
type ackJob struct {
	items   []Item
	commit  Commit
	details []string
	labels  []string
	resumed bool
}

// acker removes a worker's durable batches from the source in order, behind
// the worker (its queue is unbounded: a batch may wait for a whole archive
// part to be verified while the worker goes on).
type acker struct {
	mu     sync.Mutex
	cond   *sync.Cond
	q      []ackJob
	closed bool
	// busy: a job taken from q is being acked; idle is signalled when q is
	// empty and no job is busy (waitIdle).
	busy bool
	idle *sync.Cond
}

func newAcker() *acker {
	a := &acker{}
	a.cond = sync.NewCond(&a.mu)
	a.idle = sync.NewCond(&a.mu)
	return a
}

// waitIdle waits until every job pushed so far was acked (or failed).
func (a *acker) waitIdle() {
	a.mu.Lock()
	for len(a.q) > 0 || a.busy {
		a.idle.Wait()
	}
	a.mu.Unlock()
}

func (a *acker) push(j ackJob) {
	a.mu.Lock()
	a.q = append(a.q, j)
	a.mu.Unlock()
	a.cond.Signal()
}

func (a *acker) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cond.Signal()
}

func (a *acker) run(e *engine) {
	for {
		a.mu.Lock()
		for len(a.q) == 0 && !a.closed {
			a.cond.Wait()
		}
		if len(a.q) == 0 && a.closed {
			a.mu.Unlock()
			return
		}
		j := a.q[0]
		a.q[0] = ackJob{}
		a.q = a.q[1:]
		a.busy = true
		a.mu.Unlock()
		e.ack(j)
		a.mu.Lock()
		a.busy = false
		if len(a.q) == 0 {
			a.idle.Broadcast()
		}
		a.mu.Unlock()
	}
}

func (e *engine) ack(j ackJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	defer func() {
		if e.pendingAcks.Add(-int64(len(j.items))) == 0 && e.processing.Load() == 0 {
			e.idleCheck()
		}
	}()
	if j.commit != nil {
		<-j.commit.Done()
		if err := j.commit.Err(); err != nil {
			// Not durable: do not remove. The items stay held until the run
			// ends, then are released.
			e.mu.Lock()
			e.res.Unknown += len(j.items)
			e.mu.Unlock()
			e.stop(err)
			return
		}
	}
	errs := e.src.Ack(ctx, j.items)
	var acked []Item
	var ackedLabels []string
	e.mu.Lock()
	for i, it := range j.items {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		id := it.Record.MessageID
		if err != nil {
			// Durable at the sink, still at the source. Received again later
			// in the run (a lost lease, a retryable failure), it is removed
			// as AckOnly and leaves this list.
			if e.notAcked == nil {
				e.notAcked = map[string]notAckedItem{}
			}
			e.notAcked[id] = notAckedItem{reason: err.Error(), leaseLost: errors.Is(err, queue.ErrLeaseLost)}
			e.addErrorLocked(fmt.Sprintf("removing a processed message from %s: %v", e.src.Name(), err))
			continue
		}
		delete(e.notAcked, id)
		acked = append(acked, it)
		if !j.resumed {
			ackedLabels = append(ackedLabels, j.labels[i])
		}
	}
	e.mu.Unlock()
	if len(acked) > 0 {
		if o, ok := e.sink.(AckObserver); ok {
			o.Acked(acked, ackedLabels)
		}
	}
	if j.resumed {
		e.resumed.Add(int64(len(acked)))
	} else {
		e.delivered.Add(int64(len(acked)))
	}
	if e.opt.Reporter.Event == nil {
		return
	}
	for i, it := range j.items {
		if i < len(errs) && errs[i] != nil {
			e.event(Event{MessageID: it.Record.MessageID, Action: "not-acked", Reason: errs[i].Error(), Class: it.Record.Class})
			continue
		}
		if j.resumed {
			e.event(Event{MessageID: it.Record.MessageID, Action: "resumed", Reason: "durable from an earlier attempt; removed without delivering again", Class: it.Record.Class})
			continue
		}
		e.event(Event{MessageID: it.Record.MessageID, Action: "delivered", Dest: j.labels[i], Detail: j.details[i], Class: it.Record.Class})
	}
}

func (e *engine) currentTarget() float64 { v, _ := e.target.Load().(float64); return v }

// Snapshot returns the run's progress now.
func (e *engine) snapshot() Snapshot {
	now := time.Now()
	done := e.delivered.Load()
	e.mu.Lock()
	e.samples = append(e.samples, sample{now, done})
	for len(e.samples) > 2 && now.Sub(e.samples[0].t) > 5*time.Second {
		e.samples = e.samples[1:]
	}
	first := e.samples[0]
	guard := "ok"
	if e.paused {
		guard = "paused"
	}
	if e.guardTrip != nil {
		guard = "tripped"
	}
	e.mu.Unlock()
	s := Snapshot{Received: e.received.Load(), Delivered: done, Resumed: e.resumed.Load(), Total: int64(e.opt.Total),
		Skipped: e.skipped.Load(), Failed: e.failed.Load(), Target: e.currentTarget(), Elapsed: now.Sub(e.start), Guard: guard}
	if dt := now.Sub(first.t).Seconds(); dt > 0.5 {
		s.Rate = float64(done-first.n) / dt
	} else if el := s.Elapsed.Seconds(); el > 0 {
		s.Rate = float64(done) / el
	}
	if left := s.Total - s.Delivered - s.Skipped; s.Total > 0 && left > 0 && s.Rate > 0 {
		s.ETA = time.Duration(float64(left) / s.Rate * float64(time.Second))
	}
	return s
}

func (e *engine) report() {
	if e.opt.Reporter.Progress != nil {
		e.opt.Reporter.Progress(e.snapshot())
	}
}

func (e *engine) progressLoop(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.report()
		}
	}
}

func (e *engine) rampLoop(ctx context.Context) {
	every := e.opt.RampEvery
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	step := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.mu.Lock()
			paused := e.paused
			e.mu.Unlock()
			if paused || step+1 >= len(e.opt.Ramp) {
				continue // hold the step while a guard pauses the run
			}
			step++
			r := e.opt.Ramp[step]
			e.target.Store(r)
			if e.limiter != nil {
				e.limiter.SetLimit(rate.Limit(r))
			}
		}
	}
}

func (e *engine) guardLoop(ctx context.Context) {
	if len(e.opt.Guards.Check) == 0 {
		return
	}
	t := time.NewTicker(e.opt.Guards.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.checkGuards(ctx, false)
		}
	}
}

// checkGuards evaluates the guards; final is the check after the workers
// stopped (only trips, never pauses).
func (e *engine) checkGuards(ctx context.Context, final bool) {
	g := e.opt.Guards
	if len(g.Check) == 0 {
		return
	}
	snap := e.snapshot()
	var trip *GuardEvent
	for _, check := range g.Check {
		if trip = check(ctx, snap, final); trip != nil {
			break
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.guardTrip != nil {
		return
	}
	emit := func(ev GuardEvent) {
		if e.opt.Reporter.Guard != nil {
			e.opt.Reporter.Guard(ev)
		}
	}
	if trip == nil {
		if e.paused {
			e.paused = false
			close(e.pauseCh)
			emit(GuardEvent{Name: "all", State: "cleared", Detail: "resuming at the last rate step"})
		}
		return
	}
	if g.OnGuard == GuardPause && !final {
		if !e.paused {
			e.paused = true
			e.pauseCh = make(chan struct{})
			e.pausedSince = time.Now()
			trip.State = "paused"
			emit(*trip)
			return
		}
		if g.PauseTimeout <= 0 || time.Since(e.pausedSince) < g.PauseTimeout {
			return
		}
		trip.Detail += fmt.Sprintf("; still tripped after pausing %s", g.PauseTimeout)
	}
	trip.State = "tripped"
	e.guardTrip = trip
	emit(*trip)
	if e.paused {
		e.paused = false
		close(e.pauseCh)
	}
	e.cancelRun()
}
