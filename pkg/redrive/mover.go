package redrive

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

// Selector decides which messages a run moves; *classify.Selector
// satisfies it. A nil Selector selects everything.
type Selector interface {
	Match(rec *queue.Record, parsed any) bool
	Describe() string
}

// Guard actions.
const (
	GuardPause = "pause"
	GuardAbort = "abort"
)

// Guards stop a run that is hurting the destination.
type Guards struct {
	// MaxReturns trips when more than this share (0..1] of the messages the
	// run moved came back to the source DLQ; 0 disables it.
	MaxReturns float64
	// MaxDestBacklog trips when a destination holds more than this many
	// visible messages; 0 disables it.
	MaxDestBacklog int
	// OnGuard is GuardPause (hold sending until the condition clears or
	// PauseTimeout passes, then abort) or GuardAbort (default).
	OnGuard      string
	PauseTimeout time.Duration
	// Every is the check interval (default 10s).
	Every time.Duration
}

// Snapshot is the progress of a run.
type Snapshot struct {
	Moved   int64
	Total   int64
	Skipped int64
	Failed  int64
	Rate    float64 // recent messages per second
	Target  float64 // current rate step; 0 = unlimited
	Elapsed time.Duration
	ETA     time.Duration
	Guard   string
}

// MessageEvent is what happened to one message.
type MessageEvent struct {
	MessageID   string
	Action      string // moved, resumed, skipped, failed, returned, would-move
	Destination string
	DestID      string
	Class       string
	Reason      string
}

// GuardEvent is a guard changing state (paused, cleared, tripped).
type GuardEvent struct {
	Name   string  `json:"name"`
	State  string  `json:"state"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Detail string  `json:"detail,omitempty"`
}

// Reporter receives progress; every field is optional. Calls come from
// several goroutines.
type Reporter struct {
	Progress func(Snapshot)
	Message  func(MessageEvent)
	Guard    func(GuardEvent)
}

// Options configure a mover run.
type Options struct {
	// Client sends copies and reads destination depths.
	Client *queue.Client
	// Journal is the run's journal; its Meta().ID is the run id.
	Journal *Journal
	Router  Router
	Select  Selector
	// Max moves at most this many messages (0 = all).
	Max int
	// MaxRedrives skips messages already redriven this many times (0 = no
	// limit).
	MaxRedrives int
	// Rate is the send rate in messages per second (0 = as fast as the
	// workers go). Ramp, when set, replaces it: the rate starts at Ramp[0]
	// and steps to the next value every RampEvery while guards hold.
	Rate      float64
	Ramp      []float64
	RampEvery time.Duration
	// Concurrency is the number of workers (default 8).
	Concurrency int
	Guards      Guards
	// EmptyReceives is how many consecutive empty batches end a worker
	// (default 2).
	EmptyReceives int
	// Total is the expected number of messages (for the ETA; 0 unknown).
	Total    int
	Reporter Reporter
}

// Result is the accounting of a run.
type Result struct {
	RunID string `json:"run_id"`
	// Moved: sent, journaled and removed from the source.
	Moved int `json:"moved"`
	// Resumed: removed without re-sending (an earlier attempt sent them).
	Resumed int `json:"resumed"`
	// SentNotDeleted: copies delivered but still in the source; a re-run
	// (or `redrive resume`) deletes them without sending again.
	SentNotDeleted int `json:"sent_not_deleted"`
	// Failed: the destination refused them; they stay in the source.
	Failed int `json:"failed"`
	// Unknown: the send call failed; the copies may or may not exist. They
	// stay in the source (a FIFO destination de-duplicates a re-send).
	Unknown int `json:"unknown_outcome"`
	// Returned: messages of this run seen back in the source.
	Returned int `json:"returned"`
	// ReturnedIDs are the DLQ message ids of those returns.
	ReturnedIDs []string       `json:"-"`
	Skipped     map[string]int `json:"skipped"`
	// Unmarked: moved without the marker attribute (10 attributes already).
	Unmarked       int            `json:"unmarked"`
	ByDestination  map[string]int `json:"by_destination"`
	ByClass        map[string]int `json:"by_class"`
	Interrupted    bool           `json:"interrupted"`
	Guard          *GuardEvent    `json:"guard,omitempty"`
	Errors         []string       `json:"errors,omitempty"`
	ElapsedSeconds float64        `json:"elapsed_seconds"`
	Rate           float64        `json:"rate"`
	// Destinations are the queues copies went to (for canary checks).
	Destinations []*queue.Queue `json:"-"`
}

// SkippedTotal is the number of skipped messages.
func (r *Result) SkippedTotal() int {
	n := 0
	for _, v := range r.Skipped {
		n += v
	}
	return n
}

// Err is the run's outcome as an error for the exit code: guard trip
// (verdict), interruption, or partial (something left to do).
func (r *Result) Err() error {
	switch {
	case r.Guard != nil:
		return errs.Verdictf("guard %s tripped: %s (limit %s); the run stopped, nothing was lost", r.Guard.Name, r.Guard.Detail, fmtNum(r.Guard.Limit))
	case r.Interrupted:
		return errs.ErrInterrupted
	case r.Unknown > 0 || r.Failed > 0 || r.SentNotDeleted > 0:
		return errs.Partialf("%d message(s) not moved (%d refused by the destination, %d with unknown send outcome, %d sent but not yet deleted); they are still in the DLQ — re-run to retry: %s",
			r.Unknown+r.Failed+r.SentNotDeleted, r.Failed, r.Unknown, r.SentNotDeleted, firstOr(r.Errors, "see the report"))
	}
	return nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

func fmtNum(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.2f", f)
}

type pending struct {
	it   Item
	dest *queue.Queue
	cp   Copy
}

type mover struct {
	opt   Options
	src   Source
	runID string
	j     *Journal
	start time.Time

	limiter *rate.Limiter
	target  atomic.Value // float64

	reserved atomic.Int64
	moved    atomic.Int64
	skipped  atomic.Int64
	failed   atomic.Int64
	returned atomic.Int64

	mu            sync.Mutex
	res           *Result
	dests         map[string]*queue.Queue
	notDeleted    map[string]bool
	paused        bool
	pauseCh       chan struct{} // closed when not paused
	stopErr       error
	guardTrip     *GuardEvent
	cancelRun     context.CancelFunc
	progressTimes []sample
	pausedSince   time.Time
}

type sample struct {
	t time.Time
	n int64
}

// Run moves messages from src according to opt and returns the accounting.
// It stops receiving when ctx is cancelled, finishes batches already being
// sent, and leaves releasing to src.Close (the caller closes the source).
// The error is non-nil only for failures that are not reflected in the
// Result (see Result.Err for the run's verdict).
func Run(ctx context.Context, src Source, opt Options) (*Result, error) {
	if opt.Client == nil || opt.Journal == nil || opt.Router == nil {
		return nil, errors.New("redrive.Run: Client, Journal and Router are required")
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 8
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
	m := &mover{opt: opt, src: src, j: opt.Journal, runID: opt.Journal.Meta().ID, start: time.Now(),
		res:   &Result{Skipped: map[string]int{}, ByDestination: map[string]int{}, ByClass: map[string]int{}},
		dests: map[string]*queue.Queue{}, notDeleted: map[string]bool{},
		pauseCh: make(chan struct{})}
	close(m.pauseCh)
	m.res.RunID = m.runID
	first := opt.Rate
	if len(opt.Ramp) > 0 {
		first = opt.Ramp[0]
	}
	m.target.Store(first)
	if first > 0 || len(opt.Ramp) > 0 {
		m.limiter = rate.NewLimiter(rate.Limit(first), queue.MaxBatchEntries)
		m.limiter.AllowN(time.Now(), queue.MaxBatchEntries) // start empty: no initial burst above the rate
	}
	runCtx, cancel := context.WithCancel(ctx)
	m.cancelRun = cancel
	defer cancel()

	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	bgWG.Add(2)
	go func() { defer bgWG.Done(); m.progressLoop(bg) }()
	go func() { defer bgWG.Done(); m.guardLoop(bg) }()
	if len(opt.Ramp) > 1 {
		bgWG.Add(1)
		go func() { defer bgWG.Done(); m.rampLoop(bg) }()
	}

	var wg sync.WaitGroup
	for w := 0; w < opt.Concurrency; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); m.worker(runCtx) }()
	}
	wg.Wait()
	stopBG()
	bgWG.Wait()
	m.checkGuards(context.WithoutCancel(ctx), true)
	m.report(true)

	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.res
	r.SentNotDeleted = len(m.notDeleted)
	r.Returned = int(m.returned.Load())
	r.Guard = m.guardTrip
	r.Interrupted = ctx.Err() != nil && r.Guard == nil
	r.ElapsedSeconds = time.Since(m.start).Seconds()
	if r.ElapsedSeconds > 0 {
		r.Rate = float64(r.Moved) / r.ElapsedSeconds
	}
	for _, q := range m.dests {
		r.Destinations = append(r.Destinations, q)
	}
	sort.Slice(r.Destinations, func(a, b int) bool { return r.Destinations[a].Name < r.Destinations[b].Name })
	return r, m.stopErr
}

// stop ends the run because of an error that is not per-message.
func (m *mover) stop(err error) {
	m.mu.Lock()
	if m.stopErr == nil {
		m.stopErr = err
	}
	m.addErrorLocked(err.Error())
	m.mu.Unlock()
	m.cancelRun()
}

func (m *mover) addErrorLocked(s string) {
	for _, e := range m.res.Errors {
		if e == s {
			return
		}
	}
	if len(m.res.Errors) < 10 {
		m.res.Errors = append(m.res.Errors, s)
	}
}

func (m *mover) waitGate(ctx context.Context) bool {
	m.mu.Lock()
	ch := m.pauseCh
	m.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// journalWrite is one batch's journal write (fsync) in progress.
type journalWrite struct {
	done chan struct{}
	err  error
}

// workerState is what one worker carries between its batches.
type workerState struct {
	acks chan<- func()
	// last is the journal write of the worker's previous sent batch. The
	// worker waits for it before sending again, so at any moment at most one
	// sent batch per worker is not yet durable in the journal: the bound on
	// duplicates after a kill -9.
	last *journalWrite
}

// awaitJournal waits until the worker's previous batch is journaled and
// returns the journal's error, if any.
func (ws *workerState) awaitJournal() error {
	if ws.last == nil {
		return nil
	}
	<-ws.last.done
	err := ws.last.err
	ws.last = nil
	return err
}

func (m *mover) worker(runCtx context.Context) {
	// Journal writes and deletes run behind the worker: after a send, the
	// batch's journal fsync starts at once and its delete waits for it in
	// the worker's own acker, while the worker already receives the next
	// batch. Before its next send the worker waits for that fsync (see
	// workerState.last). The acker finishes queued batches even when the
	// run is interrupted.
	acks := make(chan func(), 1)
	var ackWG sync.WaitGroup
	ackWG.Add(1)
	go func() {
		defer ackWG.Done()
		for f := range acks {
			f()
		}
	}()
	defer func() {
		close(acks)
		ackWG.Wait()
	}()
	ws := &workerState{acks: acks}
	empty := 0
	for runCtx.Err() == nil {
		if !m.waitGate(runCtx) {
			return
		}
		if m.opt.Max > 0 && m.reserved.Load() >= int64(m.opt.Max) {
			return
		}
		items, err := m.src.Next(runCtx, queue.MaxBatchEntries)
		if errors.Is(err, ErrSourceDone) {
			return
		}
		if err != nil {
			if runCtx.Err() != nil {
				return
			}
			m.stop(fmt.Errorf("reading %s: %w", m.src.Name(), err))
			return
		}
		if runCtx.Err() != nil {
			_ = m.src.Release(context.WithoutCancel(runCtx), items)
			return
		}
		if len(items) == 0 {
			empty++
			if empty >= m.opt.EmptyReceives {
				return
			}
			continue
		}
		empty = 0
		m.process(runCtx, items, ws)
	}
}

func (m *mover) event(ev MessageEvent) {
	if m.opt.Reporter.Message != nil {
		m.opt.Reporter.Message(ev)
	}
}

func classOf(rec *queue.Record) string {
	if rec.Class != "" {
		return rec.Class
	}
	return "unclassified"
}

// decide applies selection, loop guard, routing and the copy rules to one
// message: the shared logic of the plan and the mover.
func decide(ctx context.Context, it Item, runID string, sel Selector, router Router, maxRedrives int, now time.Time) (*queue.Queue, Copy, string, error) {
	rec := it.Record
	if sel != nil && !sel.Match(rec, it.Parsed) {
		return nil, Copy{}, SkipFiltered, nil
	}
	if maxRedrives > 0 && rec.Redrive != nil && rec.Redrive.Count >= maxRedrives {
		return nil, Copy{}, SkipLoop, nil
	}
	dest, skip, err := router.Route(ctx, rec)
	if err != nil || skip != "" {
		return nil, Copy{}, skip, err
	}
	cp, skip := BuildCopy(rec, runID, dest, now)
	return dest, cp, skip, nil
}

func (m *mover) skip(it Item, reason string) {
	m.skipped.Add(1)
	m.mu.Lock()
	m.res.Skipped[reason]++
	m.mu.Unlock()
	m.event(MessageEvent{MessageID: it.Record.MessageID, Action: "skipped", Reason: reason, Class: it.Record.Class})
}

func (m *mover) process(runCtx context.Context, items []Item, ws *workerState) {
	now := time.Now()
	fin := context.WithoutCancel(runCtx)
	var resume, release []Item
	var order []*queue.Queue
	groups := map[*queue.Queue][]pending{}
	for _, it := range items {
		rec := it.Record
		// A message the journal knows as sent (by this run, or by an
		// earlier attempt of it) is deleted without sending it again.
		if _, ok := m.j.WasSent(rec.MessageID); ok {
			resume = append(resume, it)
			continue
		}
		if rec.Redrive != nil && rec.Redrive.RunID == m.runID {
			m.returned.Add(1)
			m.mu.Lock()
			m.res.ReturnedIDs = append(m.res.ReturnedIDs, rec.MessageID)
			m.mu.Unlock()
			m.skip(it, SkipReturned)
			continue // held until the end so it is not received again
		}
		dest, cp, reason, err := decide(runCtx, it, m.runID, m.opt.Select, m.opt.Router, m.opt.MaxRedrives, now)
		if err != nil {
			release = append(release, it)
			if runCtx.Err() == nil {
				m.stop(fmt.Errorf("routing %s: %w", rec.MessageID, err))
			}
			continue
		}
		if reason != "" {
			m.skip(it, reason)
			continue
		}
		if m.opt.Max > 0 && m.reserved.Add(1) > int64(m.opt.Max) {
			release = append(release, it)
			continue
		} else if m.opt.Max <= 0 {
			m.reserved.Add(1)
		}
		if _, ok := groups[dest]; !ok {
			order = append(order, dest)
		}
		groups[dest] = append(groups[dest], pending{it: it, dest: dest, cp: cp})
	}
	if len(release) > 0 {
		_ = m.src.Release(fin, release)
	}
	if len(resume) > 0 {
		m.ackResumed(fin, resume)
	}
	for _, dest := range order {
		ps := groups[dest]
		for len(ps) > 0 {
			n, size := 0, 0
			for n < len(ps) && n < queue.MaxBatchEntries && (n == 0 || size+ps[n].cp.Entry.Size <= queue.MaxBatchBytes) {
				size += ps[n].cp.Entry.Size
				n++
			}
			m.sendBatch(runCtx, dest, ps[:n], ws)
			ps = ps[n:]
		}
	}
}

// waitTokens waits for guards and rate tokens; false means the run is
// stopping and the batch must be released unsent.
func (m *mover) waitTokens(ctx context.Context, n int) bool {
	if !m.waitGate(ctx) {
		return false
	}
	if m.limiter == nil {
		return ctx.Err() == nil
	}
	return m.limiter.WaitN(ctx, n) == nil
}

func (m *mover) sendBatch(runCtx context.Context, dest *queue.Queue, batch []pending, ws *workerState) {
	fin := context.WithoutCancel(runCtx)
	items := make([]Item, len(batch))
	for i, p := range batch {
		items[i] = p.it
	}
	if !m.waitTokens(runCtx, len(batch)) {
		_ = m.src.Release(fin, items)
		return
	}
	if err := ws.awaitJournal(); err != nil {
		_ = m.src.Release(fin, items)
		m.stop(err)
		return
	}
	// From here on the batch is finished even if the run is interrupted.
	bctx, cancel := context.WithTimeout(fin, 5*time.Minute)
	defer cancel()
	entries := make([]queue.SendEntry, len(batch))
	for i, p := range batch {
		entries[i] = p.cp.Entry
	}
	m.mu.Lock()
	m.dests[dest.URL] = dest
	m.mu.Unlock()
	results, callErr := m.opt.Client.SendBatch(bctx, dest, entries)
	var sent []pending
	var recs []SentRecord
	var unknown []Item
	for i, p := range batch {
		var r queue.SendResult
		if i < len(results) {
			r = results[i]
		}
		switch {
		case r.Err == nil && r.MessageID != "":
			sent = append(sent, p)
			recs = append(recs, SentRecord{Orig: p.it.Record.MessageID, Dest: dest.URL, DestID: r.MessageID, SHA: p.it.Record.BodySHA256})
		case callErr != nil:
			unknown = append(unknown, p.it)
		default:
			m.failed.Add(1)
			m.mu.Lock()
			m.res.Failed++
			m.addErrorLocked(fmt.Sprintf("%s refused a copy: %v", dest.Name, r.Err))
			m.mu.Unlock()
			m.event(MessageEvent{MessageID: p.it.Record.MessageID, Action: "failed", Destination: dest.Name, Reason: fmt.Sprint(r.Err), Class: p.it.Record.Class})
			// held until the end of the run, then released: it stays in the DLQ
		}
	}
	if len(unknown) > 0 {
		m.mu.Lock()
		m.res.Unknown += len(unknown)
		m.mu.Unlock()
		_ = m.src.Release(fin, unknown)
		m.stop(fmt.Errorf("sending to %s failed: %w", dest.Name, callErr))
	}
	if len(sent) == 0 {
		return
	}
	jw := &journalWrite{done: make(chan struct{})}
	go func() {
		jw.err = m.j.Sent(recs)
		close(jw.done)
	}()
	ws.last = jw
	ws.acks <- func() {
		<-jw.done
		if jw.err != nil {
			// Not journaled: do not delete. The copies exist; the originals
			// stay (held until the run ends, then released).
			m.mu.Lock()
			m.res.Unknown += len(sent)
			m.mu.Unlock()
			m.stop(jw.err)
			return
		}
		m.ackSent(fin, dest, sent, recs)
	}
}

// ackSent removes journaled messages from the source.
func (m *mover) ackSent(fin context.Context, dest *queue.Queue, sent []pending, recs []SentRecord) {
	bctx, cancel := context.WithTimeout(fin, 5*time.Minute)
	defer cancel()
	items := make([]Item, len(sent))
	for i, p := range sent {
		items[i] = p.it
	}
	ackErrs := m.src.Ack(bctx, items)
	var deleted []string
	m.mu.Lock()
	for i, p := range sent {
		id := p.it.Record.MessageID
		if ackErrs[i] != nil {
			m.notDeleted[id] = true
			m.addErrorLocked(fmt.Sprintf("deleting from %s after sending: %v", m.src.Name(), ackErrs[i]))
			continue
		}
		deleted = append(deleted, id)
		m.res.Moved++
		m.res.ByDestination[dest.Name]++
		m.res.ByClass[classOf(p.it.Record)]++
		if !p.cp.Marked {
			m.res.Unmarked++
		}
	}
	m.mu.Unlock()
	m.moved.Add(int64(len(deleted)))
	m.j.Deleted(deleted)
	if m.opt.Reporter.Message != nil {
		for i, p := range sent {
			if ackErrs[i] == nil {
				m.event(MessageEvent{MessageID: p.it.Record.MessageID, Action: "moved", Destination: dest.Name, DestID: recs[i].DestID, Class: p.it.Record.Class})
			}
		}
	}
}

// ackResumed deletes messages an earlier attempt already sent.
func (m *mover) ackResumed(ctx context.Context, items []Item) {
	ackErrs := m.src.Ack(ctx, items)
	var deleted []string
	m.mu.Lock()
	for i, it := range items {
		id := it.Record.MessageID
		if ackErrs[i] != nil {
			m.notDeleted[id] = true
			m.addErrorLocked(fmt.Sprintf("deleting an already-sent message from %s: %v", m.src.Name(), ackErrs[i]))
			continue
		}
		delete(m.notDeleted, id)
		deleted = append(deleted, id)
		m.res.Resumed++
	}
	m.mu.Unlock()
	m.j.Deleted(deleted)
	for i, it := range items {
		if ackErrs[i] == nil {
			m.event(MessageEvent{MessageID: it.Record.MessageID, Action: "resumed", Reason: "sent by an earlier attempt; deleted without re-sending"})
		}
	}
}

func (m *mover) currentTarget() float64 { v, _ := m.target.Load().(float64); return v }

func (m *mover) snapshot() Snapshot {
	now := time.Now()
	moved := m.moved.Load()
	m.mu.Lock()
	m.progressTimes = append(m.progressTimes, sample{now, moved})
	for len(m.progressTimes) > 2 && now.Sub(m.progressTimes[0].t) > 5*time.Second {
		m.progressTimes = m.progressTimes[1:]
	}
	first := m.progressTimes[0]
	guard := "ok"
	if m.paused {
		guard = "paused"
	}
	if m.guardTrip != nil {
		guard = "tripped"
	}
	m.mu.Unlock()
	s := Snapshot{Moved: moved, Total: int64(m.opt.Total), Skipped: m.skipped.Load(), Failed: m.failed.Load(),
		Target: m.currentTarget(), Elapsed: now.Sub(m.start), Guard: guard}
	if dt := now.Sub(first.t).Seconds(); dt > 0.5 {
		s.Rate = float64(moved-first.n) / dt
	} else if el := s.Elapsed.Seconds(); el > 0 {
		s.Rate = float64(moved) / el
	}
	if left := s.Total - s.Moved - s.Skipped; s.Total > 0 && left > 0 && s.Rate > 0 {
		s.ETA = time.Duration(float64(left) / s.Rate * float64(time.Second))
	}
	return s
}

func (m *mover) report(force bool) {
	if m.opt.Reporter.Progress != nil {
		m.opt.Reporter.Progress(m.snapshot())
	}
	_ = force
}

func (m *mover) progressLoop(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.report(false)
		}
	}
}

func (m *mover) rampLoop(ctx context.Context) {
	every := m.opt.RampEvery
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
			m.mu.Lock()
			paused := m.paused
			m.mu.Unlock()
			if paused || step+1 >= len(m.opt.Ramp) {
				continue // hold the last step while a guard pauses the run
			}
			step++
			r := m.opt.Ramp[step]
			m.target.Store(r)
			m.limiter.SetLimit(rate.Limit(r))
		}
	}
}

func (m *mover) guardLoop(ctx context.Context) {
	g := m.opt.Guards
	if g.MaxReturns <= 0 && g.MaxDestBacklog <= 0 {
		return
	}
	t := time.NewTicker(g.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.checkGuards(ctx, false)
		}
	}
}

// checkGuards evaluates the guards; final is the check after the workers
// stopped (only trips, never pauses).
func (m *mover) checkGuards(ctx context.Context, final bool) {
	g := m.opt.Guards
	var trip *GuardEvent
	if g.MaxReturns > 0 {
		moved, ret := m.moved.Load(), m.returned.Load()
		if moved > 0 && ret > 0 {
			share := float64(ret) / float64(moved)
			if share > g.MaxReturns {
				trip = &GuardEvent{Name: "max-returns", Value: share, Limit: g.MaxReturns,
					Detail: fmt.Sprintf("%d of %d moved messages came back to %s", ret, moved, m.src.Name())}
			}
		}
	}
	if trip == nil && g.MaxDestBacklog > 0 && !final {
		m.mu.Lock()
		dests := make([]*queue.Queue, 0, len(m.dests))
		for _, q := range m.dests {
			dests = append(dests, q)
		}
		m.mu.Unlock()
		for _, q := range dests {
			cp := *q
			if err := m.opt.Client.Refresh(ctx, &cp); err != nil {
				continue // a failed check is retried at the next tick
			}
			if v := cp.Counts().Visible; v > g.MaxDestBacklog {
				trip = &GuardEvent{Name: "max-dest-backlog", Value: float64(v), Limit: float64(g.MaxDestBacklog),
					Detail: fmt.Sprintf("%s has %d visible messages", q.Name, v)}
				break
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.guardTrip != nil {
		return
	}
	emit := func(ev GuardEvent) {
		if m.opt.Reporter.Guard != nil {
			m.opt.Reporter.Guard(ev)
		}
	}
	if trip == nil {
		if m.paused {
			m.paused = false
			close(m.pauseCh)
			emit(GuardEvent{Name: "all", State: "cleared", Detail: "resuming at the last rate step"})
		}
		return
	}
	if g.OnGuard == GuardPause && !final {
		if !m.paused {
			m.paused = true
			m.pauseCh = make(chan struct{})
			m.pausedSince = time.Now()
			trip.State = "paused"
			emit(*trip)
			return
		}
		if g.PauseTimeout <= 0 || time.Since(m.pausedSince) < g.PauseTimeout {
			return
		}
		trip.Detail += fmt.Sprintf("; still tripped after pausing %s", g.PauseTimeout)
	}
	trip.State = "tripped"
	m.guardTrip = trip
	emit(*trip)
	if m.paused {
		m.paused = false
		close(m.pauseCh)
	}
	m.cancelRun()
}
