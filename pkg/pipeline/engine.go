package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ErrHeldLimit is returned (wrapped) by Source.Next when the source cannot
// hand out more without exceeding the queue's in-flight limit (the run's own
// cap, or SQS answering OverLimit). The engine ends the run as partial.
var ErrHeldLimit = broker.ErrHeldLimit

// Default batch bounds (Options.BatchEntries, BatchBytes).
const (
	DefaultBatchEntries = 10
	DefaultBatchBytes   = 1 << 20
)

// releasePatience is how long a run keeps reading for messages it gave back
// during the run (and that a continuing run must read again).
const releasePatience = 30 * time.Second

// Options configure a run.
type Options struct {
	// Workers receive, decide and deliver concurrently (default 8).
	Workers int
	// BatchEntries and BatchBytes bound one read and one delivery (default
	// 10 entries and 1 MiB of Decision.Size: SQS's batch limits, which the
	// other brokers' batches fit).
	BatchEntries int
	BatchBytes   int
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
	// WaitInFlight is how long the run waits, at its end, for messages a
	// call with an unknown outcome may have taken (an Ender's
	// EndState.Unknown: a receive whose answer was lost) to come back and
	// be processed. 0 does not wait: they are reported and the run is
	// partial. Nothing else makes a run wait.
	WaitInFlight time.Duration
	// EmptyReceives ends a worker after that many consecutive empty
	// batches from a source that is not an Ender (default 2).
	EmptyReceives int
	// Peers is the number of processes sharing the source (--rate-share
	// i/N; 0 or 1: this run is alone). A shared run ends like a single one:
	// what its peers hold is theirs to account for (InFlightAtPeers and
	// LockedByPeers come from the broker's advisory counts).
	Peers int
	// AckBeforeDeliver makes each worker wait until its previous batch was
	// removed from the source before it delivers the next, so at most one
	// batch per worker is durable at the sink and still at the source at
	// any moment (a redrive's duplicate bound after kill -9: a peer that
	// receives such a message again sends it again). Leave it off for sinks
	// that make a batch durable only later (archive parts).
	AckBeforeDeliver bool
	// AckBehind, with AckBeforeDeliver, lets a worker deliver while up to
	// this many of its earlier batches are still being removed (0: none):
	// a source that names, after a kill, every message a dead run may have
	// delivered twice (a broker.Intender) overlaps the removal (a Kafka
	// commit) with the next batch, at the cost of one more batch per
	// worker in that list. The batches behind keep their records (see
	// slimItems).
	AckBehind int
	Reporter  Reporter
}

// Result is the accounting of a run: every item received ends in exactly
// one of Delivered, Resumed, Skipped, Released, Refused, Unknown, NotAcked.
type Result struct {
	Received int `json:"received"`
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
	// Blocked: messages that could not be read because they wait behind
	// messages the run held to its end in their ordering group (a FIFO
	// group); an estimate (EndState.Blocked). BlockedGroups: how many
	// groups.
	Blocked       int `json:"blocked,omitempty"`
	BlockedGroups int `json:"-"`
	// OrderLost: messages the source handed out after a later message of
	// their ordering group (EndState.OrderLost): the run delivered those
	// groups out of order. The run is not complete.
	OrderLost       int      `json:"order_lost,omitempty"`
	OrderLostGroups []string `json:"-"`
	// InFlightElsewhere: at most this many messages were taken by calls
	// whose outcome is unknown (a receive whose answer was lost) and had
	// not come back when the run ended (they return after ReturnAfter).
	InFlightElsewhere int           `json:"in_flight_elsewhere,omitempty"`
	ReturnAfter       time.Duration `json:"-"`
	// InFlightAtPeers and LockedByPeers (a shared run, Options.Peers > 1;
	// advisory, from the broker's counts): messages in flight that the run
	// did not hold when it ended — its peers', whose runs account for them
	// — and, on a source with ordering groups, messages waiting behind
	// them. Not a failure.
	InFlightAtPeers int `json:"in_flight_at_peers,omitempty"`
	LockedByPeers   int `json:"locked_by_peers,omitempty"`
	// Counts is what the broker's approximate counts said at the end when
	// they disagreed with what the run saw (advisory; never a failure).
	Counts *CountsNote `json:"approximate_counts,omitempty"`
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
	ender Ender
	// handOver: the source waits for what the run holds before handing
	// it over (broker.HandOverer).
	handOver broker.HandOverer
	start    time.Time

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
	// quietSince is when processing+pendingAcks last became 0 (unix
	// nanoseconds; RunState.QuietSince).
	quietSince atomic.Int64

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
	drainedEnd    bool   // reading ended because the source was drained
	endNote       string // the source's sentence on what is left (EndState.Note)
	releasedSince time.Time
	waitSince     time.Time
	lastFlush     time.Time
	sourceDone    atomic.Bool
	heldLimit     atomic.Bool
	heldLimitWhy  atomic.Value // string: the source's explanation (ErrHeldLimit's wrap)
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
	if opt.BatchEntries <= 0 {
		opt.BatchEntries = DefaultBatchEntries
	}
	if opt.BatchBytes <= 0 {
		opt.BatchBytes = DefaultBatchBytes
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
	e.ender, _ = src.(Ender)
	if h, ok := src.(broker.HandOverer); ok {
		// A source that hands messages the run holds over waits for their
		// acks: what the sink holds not yet durable (an open archive
		// part) is flushed then, and what the run will neither ack nor
		// release is settled as soon as it is decided (settle).
		e.handOver = h
		h.OnHandOver(func(ctx context.Context) { _, _ = sink.Flush(context.WithoutCancel(ctx)) })
	}
	first := opt.Rate
	if len(opt.Ramp) > 0 {
		first = opt.Ramp[0]
	}
	e.target.Store(first)
	if first > 0 {
		e.limiter = rate.NewLimiter(rate.Limit(first), opt.BatchEntries)
		e.limiter.AllowN(time.Now(), opt.BatchEntries) // start empty: no burst above the rate
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
	e.finalEnd(fin, clean && ctx.Err() == nil)

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
	return r, e.stopErr
}

// finalEnd asks an Ender, once every worker and acker has stopped, for
// the report of its end: what waits behind messages the run held, calls
// whose outcome is still unknown, and what the broker's advisory counts say.
func (e *engine) finalEnd(ctx context.Context, clean bool) {
	e.endMu.Lock()
	drained := e.drainedEnd
	e.endMu.Unlock()
	// A source that says "nothing more" (ErrSourceDone: a Kafka read that
	// reached the ends taken at its start) is asked too, unless the run
	// stopped at --max or the in-flight limit: what it reports left (a
	// partition that changed hands, a commit that did not land) keeps the
	// run from being complete.
	drained = drained || (e.sourceDone.Load() && !e.stoppedAtMx.Load() && !e.heldLimit.Load())
	if e.ender == nil || !clean || !drained {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := e.ender.End(rctx, e.runState(), true)
	if err != nil {
		e.addError(fmt.Sprintf("reading the end of %s: %v", e.src.Name(), err))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.res
	r.Blocked, r.BlockedGroups = st.Blocked, st.BlockedGroups
	r.OrderLost, r.OrderLostGroups = st.OrderLost, st.OrderLostGroups
	e.endNote = st.Note
	r.InFlightElsewhere, r.ReturnAfter = 0, 0
	if !st.UnknownUntil.IsZero() {
		r.InFlightElsewhere = max(1, st.Unknown)
		r.ReturnAfter = max(0, time.Until(st.UnknownUntil))
	}
	r.Counts = st.Counts
	if e.opt.Peers > 1 && st.Counts != nil {
		r.InFlightAtPeers = st.Counts.InFlight
		if st.Ordered {
			r.LockedByPeers = st.Counts.Visible
		}
	}
}

// runState is what the engine still has in hand (RunState).
func (e *engine) runState() RunState {
	busy := e.processing.Load() + e.pendingAcks.Load()
	var quiet time.Time
	if n := e.quietSince.Load(); busy == 0 && n > 0 {
		quiet = time.Unix(0, n)
	}
	return RunState{Busy: busy, QuietSince: quiet}
}

// unbusy takes n items off one of the busy counters and notes when the run
// became quiet (RunState.QuietSince).
func (e *engine) unbusy(c *atomic.Int64, n int64) {
	if n == 0 {
		return
	}
	if c.Add(-n) == 0 && e.processing.Load()+e.pendingAcks.Load() == 0 {
		e.quietSince.Store(time.Now().UnixNano())
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
		why, _ := e.heldLimitWhy.Load().(string)
		r.Note = "stopped at a limit on held messages: " + why
	case r.StoppedAtMax:
		r.Note = "stopped at the requested maximum"
	case (r.Blocked > 0 || r.InFlightElsewhere > 0 || r.OrderLost > 0) && e.endNote != "":
		r.Note = e.endNote
	case r.OrderLost > 0:
		r.Note = fmt.Sprintf("%d message(s) of ordering group(s) %s were handed out after later messages of their group: those groups were delivered out of order", r.OrderLost, strings.Join(r.OrderLostGroups, ", "))
	case r.Blocked > 0:
		r.Note = fmt.Sprintf("%d message(s) could not be read: they wait behind messages the run held to its end in their ordering group", r.Blocked)
	case r.InFlightElsewhere > 0:
		r.Note = fmt.Sprintf("up to %d message(s) were in flight elsewhere when the run ended: a call whose outcome is unknown may have taken them, and nobody holds them; they are back within %s — re-run then (or wait for them)", r.InFlightElsewhere, r.ReturnAfter.Round(time.Second))
	case len(e.released) > 0:
		r.Note = fmt.Sprintf("%d message(s) were given back to the source during the run and not read again; re-run to process them", len(e.released))
	}
	r.Complete = r.Note == "" && r.Unknown == 0 && r.Refused == 0 && r.NotAcked == 0
	if r.Note == "" && !r.Complete {
		r.Note = fmt.Sprintf("%d message(s) were not processed (%d refused, %d with unknown outcome, %d durable but still in the source); re-run to retry", r.Refused+r.Unknown+r.NotAcked, r.Refused, r.Unknown, r.NotAcked)
	}
}

// heldLimitReason is what a source said of its limit on held messages
// (the text it wrapped ErrHeldLimit with), or a broker-neutral sentence
// when it said nothing more.
func heldLimitReason(err error) string {
	if why, ok := strings.CutPrefix(err.Error(), ErrHeldLimit.Error()+": "); ok && why != "" {
		return why
	}
	return "the source cannot hold more messages at once; run again (a run that removes what it processed continues where this one ended)"
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
		items, err := e.src.Next(runCtx, e.opt.BatchEntries)
		// From here until they are processed or given back, the items
		// count as busy (RunState.Busy).
		inHand := int64(len(items))
		e.processing.Add(inHand)
		if errors.Is(err, ErrSourceDone) {
			e.unbusy(&e.processing, inHand)
			e.sourceDone.Store(true)
			e.endWith(func() {})
			return
		}
		if errors.Is(err, ErrHeldLimit) {
			e.heldLimitWhy.CompareAndSwap(nil, heldLimitReason(err))
			e.heldLimit.Store(true)
			e.endWith(func() {})
			if len(items) == 0 {
				return
			}
			err = nil
		}
		if err != nil {
			_ = e.src.Release(context.WithoutCancel(runCtx), items)
			e.unbusy(&e.processing, inHand)
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
			e.releaseItems(context.WithoutCancel(runCtx), items)
			e.unbusy(&e.processing, inHand)
			return
		}
		if len(items) > 0 {
			e.process(runCtx, w, items, ack)
			e.unbusy(&e.processing, inHand)
		}
		if e.ender == nil {
			if len(items) == 0 {
				if empty++; empty >= e.opt.EmptyReceives {
					return
				}
			} else {
				empty = 0
			}
			continue
		}
		// Only an empty answer can end reading: a short batch says nothing
		// (SQS returns fewer than asked from a full queue).
		if len(items) == 0 && e.emptyReceive(runCtx) {
			return
		}
	}
}

// flushEvery spaces the flushes of a sink's buffered deliveries that empty
// receives ask for (endMu is held).
const flushEvery = 200 * time.Millisecond

func (e *engine) flushDue() bool {
	if time.Since(e.lastFlush) < flushEvery {
		return false
	}
	e.lastFlush = time.Now()
	return true
}

// endReading ends reading because the source is drained (endMu is held)
// and tells the source, which may end its pending receives early when no
// message can become visible that the run would not read again: the run
// gives nothing back at its end (nothing skipped or refused is held,
// nothing released, no failure), no peer shares the source, no call with
// an unknown outcome is pending. Then an abandoned receive can only take a
// message that arrived after the drain.
func (e *engine) endReading(unknownPending bool) {
	e.ended, e.drainedEnd = true, true
	e.mu.Lock()
	safe := e.stopErr == nil && e.res.Unknown == 0 && e.res.Released == 0
	e.mu.Unlock()
	// Peers' messages (a peer killed mid-run) and those of a lost receive
	// become visible at any moment: a poll abandoned then would hide them
	// for a visibility timeout with nobody holding them.
	mayAbandon := safe && e.skipped.Load() == 0 && e.failed.Load() == 0 && e.opt.Peers <= 1 && !unknownPending
	e.ender.EndReading(mayAbandon)
}

// awaitReleased reports whether messages the run gave back during the run
// (and that a continuing run must read again) have not come back yet; it
// waits for them at most releasePatience. endMu is held.
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
	return time.Since(e.releasedSince) < releasePatience
}

// endWith marks the run's reading as over.
func (e *engine) endWith(f func()) {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	e.ended = true
	f()
}

// emptyReceive runs after a receive from an Ender came back empty: it asks
// the source whether reading is over and reports true when the worker
// should stop.
func (e *engine) emptyReceive(ctx context.Context) bool {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	if e.ended {
		return true
	}
	if e.pendingAcks.Load() > 0 && e.flushDue() {
		// Deliveries a sink buffers (an open archive part) become durable
		// now, so their removals can land — on a FIFO queue, unlocking
		// their groups' next messages.
		if _, err := e.sink.Flush(context.WithoutCancel(ctx)); err != nil {
			e.ended = true
			e.stop(err)
			return true
		}
	}
	st, err := e.ender.End(ctx, e.runState(), false)
	if err != nil {
		if ctx.Err() != nil {
			return true
		}
		e.ended = true
		e.stop(fmt.Errorf("reading %s: %w", e.src.Name(), err))
		return true
	}
	if !st.Drained {
		return false
	}
	if !st.UnknownUntil.IsZero() {
		// A call whose outcome is unknown may have taken messages: nobody
		// holds them until they come back. Keep reading for them (the
		// source stops reporting them once they are surely back and read),
		// or end and report them.
		now := time.Now()
		if e.waitSince.IsZero() {
			e.waitSince = now
		}
		if e.opt.WaitInFlight > 0 && now.Sub(e.waitSince) < e.opt.WaitInFlight {
			return false
		}
		e.endReading(true)
		return true
	}
	if e.awaitReleased() {
		return false // a release of this run is landing: read it again
	}
	e.endReading(false)
	return true
}

func (e *engine) releaseItems(ctx context.Context, items []Item) {
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
	e.giveBack(ctx, items)
}

// giveBack returns items to the source without counting them Released
// (items counted elsewhere: a delivery whose outcome is unknown).
func (e *engine) giveBack(ctx context.Context, items []Item) {
	if err := e.src.Release(ctx, items); err != nil {
		e.addError(fmt.Sprintf("releasing %d message(s) failed (%v); they go back to the queue when the run's hold on them ends (SQS: their visibility timeout; RabbitMQ: when the run's connection closes)", len(items), err))
	}
}

// settle tells a source that hands held messages over (broker.HandOverer)
// that the run is done with items without acking or releasing them
// (skipped, refused): its hand-over need not wait for them.
func (e *engine) settle(items []Item) {
	if e.handOver != nil && len(items) > 0 {
		e.handOver.Settle(items)
	}
}

type pendingItem struct {
	it  Item
	dec Decision
}

func (e *engine) process(runCtx context.Context, w int, items []Item, ack *acker) {
	fin := context.WithoutCancel(runCtx)
	var release, ackOnly, settle []Item
	var order []string
	groups := map[string][]pendingItem{}
	for i, it := range items {
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
			settle = append(settle, it)
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
			ps, ok := groups[dec.Key]
			if !ok {
				order = append(order, dec.Key)
				if len(order) == 1 {
					// Most batches go to one destination: the first
					// key's items are held without growing.
					ps = make([]pendingItem, 0, len(items)-i)
				}
			}
			groups[dec.Key] = append(ps, pendingItem{it: it, dec: dec})
		}
	}
	e.releaseItems(fin, release)
	e.settle(settle)
	if len(ackOnly) > 0 {
		e.pendingAcks.Add(int64(len(ackOnly)))
		ack.push(ackJob{items: e.slimItems(ackOnly), resumed: true})
	}
	for _, key := range order {
		ps := groups[key]
		for len(ps) > 0 {
			n, size := 0, 0
			for n < len(ps) && n < e.opt.BatchEntries && (n == 0 || size+ps[n].dec.Size <= e.opt.BatchBytes) {
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
		e.releaseItems(fin, items)
		return
	}
	if e.opt.AckBeforeDeliver {
		ack.waitBelow(e.opt.AckBehind)
	}
	if e.handOver != nil {
		if err := e.handOver.Holding(items); err != nil {
			// Held past the source's hand-over wait (a long pause): they
			// went to another reader, which delivers them. The run ends
			// partial: what it did not deliver is the new reader's, or a
			// re-run's.
			e.releaseItems(fin, items)
			e.stop(errs.Partial(err))
			return
		}
	}
	outs, commit := e.sink.Deliver(fin, w, key, items, payloads)
	// accepted is items itself while every item so far was accepted (the
	// usual batch); it becomes a list of its own at the first that was not.
	accepted, own := items[:0], false
	details, labels := make([]string, 0, len(batch)), make([]string, 0, len(batch))
	var unknown, notSent, refusedItems []Item
	var unknownErr, notSentErr error
	// errors.As's targets, once per batch (they escape): each is read only
	// when errors.As has just set it.
	var refused *RefusedError
	var undelivered *UndeliveredError
	for i, p := range batch {
		var o Outcome
		if i < len(outs) {
			o = outs[i]
		} else {
			o.Err = errors.New("the sink gave no outcome for this message")
		}
		if o.Err != nil && !own {
			accepted, own = append(make([]Item, 0, len(batch)), items[:i]...), true
		}
		switch {
		case errors.As(o.Err, &undelivered):
			notSent = append(notSent, p.it)
			notSentErr = undelivered.Err
		case o.Err == nil:
			if own {
				accepted = append(accepted, p.it)
			} else {
				accepted = items[:i+1]
			}
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
			refusedItems = append(refusedItems, p.it)
		default:
			unknown = append(unknown, p.it)
			unknownErr = o.Err
			e.event(Event{MessageID: p.it.Record.MessageID, Action: "unknown", Dest: p.dec.Label, Reason: o.Err.Error(), Class: p.it.Record.Class})
		}
	}
	e.settle(refusedItems)
	if len(notSent) > 0 {
		e.releaseItems(fin, notSent)
		e.stop(notSentErr)
	}
	if len(unknown) > 0 {
		e.mu.Lock()
		e.res.Unknown += len(unknown)
		e.mu.Unlock()
		// Counted unknown, not released: back at the source, copies or
		// not (every item ends in one bucket of the Result).
		e.giveBack(fin, unknown)
		e.stop(fmt.Errorf("delivering to %s failed: %w", batch[0].dec.Label, unknownErr))
	}
	if len(accepted) > 0 {
		e.pendingAcks.Add(int64(len(accepted)))
		ack.push(ackJob{items: e.slimItems(accepted), commit: commit, details: details, labels: labels})
	}
}

// slimItems keeps what acking and reporting need, not the bodies: a batch
// can wait in an acker queue for a whole archive part.
// A batch's slim records are one allocation (they are acked together).
//
// With AckBehind the items are kept as they are: an acker then holds at
// most AckBehind+1 batches of a worker, and such a source's handles keep
// its messages (bodies included) until they are acked anyway.
func (e *engine) slimItems(items []Item) []Item {
	if e.opt.AckBeforeDeliver && e.opt.AckBehind > 0 {
		return items
	}
	out := make([]Item, len(items))
	recs := make([]record.Record, len(items))
	for i, it := range items {
		recs[i] = record.Record{MessageID: it.Record.MessageID, Class: it.Record.Class}
		out[i] = Item{Record: &recs[i], Handle: it.Handle}
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
	// busy: a job taken from q is being acked; idle is signalled when a
	// job is done (waitBelow).
	busy bool
	idle *sync.Cond
}

func newAcker() *acker {
	a := &acker{}
	a.cond = sync.NewCond(&a.mu)
	a.idle = sync.NewCond(&a.mu)
	return a
}

// waitBelow waits until at most n of the jobs pushed so far are still
// waiting or being acked (0: every one was acked, or failed).
func (a *acker) waitBelow(n int) {
	a.mu.Lock()
	for a.pendingLocked() > n {
		a.idle.Wait()
	}
	a.mu.Unlock()
}

func (a *acker) pendingLocked() int {
	n := len(a.q)
	if a.busy {
		n++
	}
	return n
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
		a.idle.Broadcast()
		a.mu.Unlock()
	}
}

func (e *engine) ack(j ackJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	defer e.unbusy(&e.pendingAcks, int64(len(j.items)))
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
	acked := make([]Item, 0, len(j.items))
	var ackedLabels []string
	if !j.resumed {
		ackedLabels = make([]string, 0, len(j.items))
	}
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
			e.notAcked[id] = notAckedItem{reason: err.Error(), leaseLost: errors.Is(err, broker.ErrLeaseLost)}
			e.addErrorLocked(fmt.Sprintf("removing a processed message from %s: %v", e.src.Name(), err))
			continue
		}
		if len(e.notAcked) > 0 {
			delete(e.notAcked, id)
		}
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
