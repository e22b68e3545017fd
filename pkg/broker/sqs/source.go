package sqs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/dlqctl/dlqctl/pkg/broker"
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
	// Wait is the long-poll wait of each receive (default and minimum 1s:
	// SQS counts whole seconds, 1 is the shortest long poll, and only a
	// long poll's empty answer ends a run).
	Wait time.Duration
	// MaxHeld caps the messages held at once (default: the in-flight limit
	// less headroom).
	MaxHeld int
	// Decode decodes a received record (envelope, failure, marker) and
	// returns the parsed body; nil leaves records as received.
	Decode func(*Record) any
	// StateDir, when set, keeps the hold ledger there (holds.go): this
	// process's file covers what it may hide, and DeadHolds (read from it
	// by the caller) are waited for or reported like lost receives.
	StateDir string
	// DeadHolds: what dead dlqctl processes may still hide in the queue.
	DeadHolds []DeadHold
	// Warn is told once when the ledger cannot be written.
	Warn func(string)
	// Tell is told what the run waits for (nil: nothing is said).
	Tell func(string)
}

// QueueSource is an SQS queue read through a lease: received messages are
// held invisible with a heartbeat until they are acked (deleted with their
// newest receipt handle) or released, and Close releases what is left. It
// is an broker.Ender: it decides the end of reading from what it saw, never from
// the queue's approximate counts (see End).
type QueueSource struct {
	c     *Client
	q     *Queue
	lease *Lease
	opt   QueueSourceOptions
	stop  context.CancelFunc
	dups  atomic.Int64
	// recvMu serializes the receives of a FIFO queue, and End with them:
	// SQS hands a message group to one receive at a time, and a server
	// that could split one between two concurrent receives (moto under
	// load) would lose the group's order; End then reads the receives'
	// outcomes with none half done. fifoDone (set once reading is over)
	// makes later receives return nothing.
	recvMu   prioLock
	fifoDone atomic.Bool
	// deadRechecked: lateDeadHolds asked the counts (once a run).
	deadRechecked atomic.Bool
	// gate orders a standard queue's receives against End: a receive holds
	// it shared for its whole call; End takes it exclusively (ahead of new
	// receives), so it decides with no receive under way — an empty answer
	// proves nothing while a concurrent receive may still bring the last
	// messages (the server may have handled that one first).
	gate sync.RWMutex
	// fifoBusy: the run last said it had messages in hand (End). Its own
	// messages then lock their groups and unlock them any moment: a FIFO
	// queue is polled briefly (WaitTimeSeconds 0, shortPollGap apart after
	// an empty answer) instead of long-polled, because a long poll may not
	// see a group unlocked while it waits (moto decides the locked groups
	// when the poll begins) and its empty answer would prove nothing while
	// the run holds messages. Once the run has nothing in hand, a long poll
	// decides the end. shortEmpty (recvMu): the last short poll was empty;
	// lastGot (recvMu): the last receive returned messages (the run has them
	// in hand now, though End has not said so yet).
	fifoBusy   atomic.Bool
	shortEmpty bool
	lastGot    bool
	// polls ends long polls that can only come back empty (see
	// EndReading).
	polls       context.Context
	abandonPoll context.CancelFunc
	// pollMu guards the start times of the receives under way and, once
	// they are abandoned, the moment the last of them has surely ended on
	// the server (quietAt): an abandoned long poll keeps claiming messages
	// there until its wait is over, so a release before then could hand
	// the released messages to a poll nobody reads (invisible for the
	// visibility timeout, with nobody holding them). It also guards what
	// the receives answered (lastItems, lastEmpty).
	pollMu  sync.Mutex
	pollSeq int
	pending map[int]time.Time
	quietAt time.Time
	// lastItems is when a receive last returned messages; lastEmpty is the
	// latest start of a long poll that came back empty.
	lastItems time.Time
	lastEmpty time.Time
	// rc receives through recv, which notes receives the SDK retried: the
	// first attempt may have taken messages on the server whose answer
	// never arrived.
	rc   *Client
	recv *receiveWatch

	// FIFO: the groups of the messages held (groupOf, held), and whether
	// the server handed out a message of a group while the run held an
	// earlier one (it does not lock groups: local-aws-sqs). leaving counts,
	// per group, held messages whose delete or release is under way: the
	// server may unlock the group, and hand out its next message to
	// another receive, before that call has returned.
	gmu     sync.Mutex
	groupOf map[*Message]string
	held    map[string]int
	leaving map[string]int
	noLock  bool
	// handedOut, lastSent, orderLost (gmu, FIFO): the ids handed to the
	// run, per group the latest send time handed out, and the messages
	// handed out after a later one of their group (noteOrderLocked).
	handedOut map[string]struct{}
	lastSent  map[string]time.Time
	orderLost map[string]int
	distinct  atomic.Int64
	startSeen Counts

	// ledger: this process's hold ledger file (created at the first
	// receive); ledgerMu guards its creation.
	ledgerMu  sync.Mutex
	ledger    *HoldLedger
	ledgerOff bool
}

// prioLock is a mutex whose priority holders (End) go ahead of the others
// waiting (the receives), so that End waits for the receive under way only,
// not for every worker's receive queued behind it.
type prioLock struct {
	mu   sync.Mutex
	cond *sync.Cond
	held bool
	prio int
}

func (l *prioLock) lock(prio bool) {
	l.mu.Lock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
	}
	if prio {
		l.prio++
	}
	for l.held || (!prio && l.prio > 0) {
		l.cond.Wait()
	}
	if prio {
		l.prio--
	}
	l.held = true
	l.mu.Unlock()
}

func (l *prioLock) unlock() {
	l.mu.Lock()
	l.held = false
	c := l.cond
	l.mu.Unlock()
	if c != nil {
		c.Broadcast()
	}
}

// shortPollGap spaces a FIFO queue's brief polls after an empty answer
// while the run has messages in hand (fifoBusy).
const shortPollGap = 50 * time.Millisecond

// abandonGrace is how long past its wait an abandoned long poll is assumed
// to still take messages on the server (local-aws-sqs: about 40 ms; AWS
// ends a poll at its wait; a slow link delays the request's arrival).
const abandonGrace = 500 * time.Millisecond

// NewQueueSource starts a lease heartbeat on q; call Close when done.
func NewQueueSource(c *Client, q *Queue, opt QueueSourceOptions) *QueueSource {
	if opt.Visibility <= 0 {
		opt.Visibility = 60 * time.Second
	}
	if opt.Wait < time.Second {
		opt.Wait = time.Second // only a long poll's empty answer is worth anything
	}
	if opt.MaxHeld <= 0 {
		opt.MaxHeld = InFlightLimit - InFlightHeadroom
	}
	s := &QueueSource{c: c, q: q, opt: opt, lease: NewLease(c, q, opt.Visibility)}
	s.pending = map[int]time.Time{}
	s.groupOf, s.held, s.leaving = map[*Message]string{}, map[string]int{}, map[string]int{}
	s.handedOut, s.lastSent, s.orderLost = map[string]struct{}{}, map[string]time.Time{}, map[string]int{}
	s.startSeen = q.Counts()
	s.recv = &receiveWatch{API: c.API, hidden: opt.Visibility}
	for _, h := range Waiting(opt.DeadHolds) {
		// A dead process's messages: like a lost receive's, they come
		// back when its hold ends, and nobody reads them before. (An
		// expired hold only makes the run ask the counts at its end:
		// lateDeadHolds.)
		s.recv.lost = append(s.recv.lost, lostWindow{until: h.Until.Add(lostGrace), n: max(1, h.Held), dead: true})
	}
	s.lease.BeforeExtend = func(until time.Time) { s.cover(until, 0) }
	if opt.StateDir != "" {
		s.recv.beforeAttempt = func(until time.Time, n int) { s.cover(until, n) }
	}
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
func (s *QueueSource) Queue() *Queue { return s.q }

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
func (s *QueueSource) Next(ctx context.Context, max int) ([]broker.Message, error) {
	if s.q.FIFO {
		s.recvMu.lock(false)
		defer s.recvMu.unlock()
		if s.fifoDone.Load() {
			return nil, nil
		}
	} else {
		s.gate.RLock()
		defer s.gate.RUnlock()
	}
	if s.lease.Len()+max > s.opt.MaxHeld {
		return nil, fmt.Errorf("%w: the run holds %d messages, as many as it may hold at once (SQS lets one queue have at most 120,000 in flight); run again (a run that removes what it processed continues where this one ended)", broker.ErrHeldLimit, s.lease.Len())
	}
	wait := s.opt.Wait
	if s.q.FIFO && (s.fifoBusy.Load() || s.lastGot) {
		wait = 0
		if s.shortEmpty {
			t := time.NewTimer(shortPollGap)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, nil
			}
		}
	}
	s.pollMu.Lock()
	if s.polls.Err() != nil {
		s.pollMu.Unlock()
		return nil, nil
	}
	s.pollSeq++
	seq := s.pollSeq
	start := time.Now()
	s.pending[seq] = start
	s.pollMu.Unlock()
	// Ledger first: should this process die during the receive, SQS may
	// still hand the messages out and hide them for the visibility.
	s.cover(start.Add(wait+s.opt.Visibility+holdReceiveSlack), max)
	rctx, cancel := context.WithTimeout(s.polls, wait+60*time.Second)
	msgs, err := s.rc.Receive(rctx, s.q, max, s.opt.Visibility, wait)
	cancel()
	if len(msgs) > 0 {
		s.cover(time.Now().Add(s.opt.Visibility), 0) // a slow answer: hidden from when SQS answered
	}
	s.pollMu.Lock()
	delete(s.pending, seq)
	abandoned := s.polls.Err() != nil
	if err == nil && !abandoned && len(msgs) == 0 && wait > 0 && start.After(s.lastEmpty) {
		s.lastEmpty = start // only a long poll's empty answer counts
	}
	s.pollMu.Unlock()
	if s.q.FIFO {
		s.shortEmpty = wait == 0 && err == nil && len(msgs) == 0
		s.lastGot = err == nil && len(msgs) > 0
	}
	if err != nil && abandoned {
		return nil, nil // abandoned: the queue was drained
	}
	if err != nil {
		if isOverLimit(err) {
			return nil, fmt.Errorf("%w: %s answered OverLimit: the queue has as many messages in flight as SQS allows (120,000); run again once they are released (a run that removes what it processed continues where this one ended)", broker.ErrHeldLimit, s.q.Name)
		}
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	// The lease holds slim copies (id and receipt handle): held messages do
	// not keep their bodies in memory.
	slims := make([]*Message, len(msgs))
	for i, m := range msgs {
		slims[i] = &Message{Record: Record{MessageID: m.MessageID}, ReceiptHandle: m.ReceiptHandle, ReceivedAt: m.ReceivedAt}
	}
	redelivered := s.lease.Add(slims...)
	var dup map[*Message]bool
	if len(redelivered) > 0 {
		dup = make(map[*Message]bool, len(redelivered))
		for _, m := range redelivered {
			dup[m] = true
		}
		s.dups.Add(int64(len(redelivered)))
	}
	items := make([]broker.Message, 0, len(msgs))
	var fresh []*Message
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
		items = append(items, broker.Message{Record: &m.Record, Parsed: parsed, Handle: slims[i]})
		fresh = append(fresh, m)
	}
	s.distinct.Add(int64(len(items)))
	if len(items) > 0 {
		// Handed out now (redeliveries of messages the run already holds
		// are not: the run has them in hand already).
		s.pollMu.Lock()
		s.lastItems = time.Now()
		s.pollMu.Unlock()
	}
	if s.q.FIFO && len(items) > 0 {
		s.gmu.Lock()
		for _, it := range items {
			if g := it.Record.System.MessageGroupID; s.held[g]-s.leaving[g] > 0 {
				// A later message of a group whose earlier one the run
				// still holds (and is not deleting or releasing): this
				// server does not lock groups.
				s.noLock = true
			}
		}
		for _, it := range items {
			g := it.Record.System.MessageGroupID
			s.groupOf[it.Handle.(*Message)] = g
			s.held[g]++
		}
		s.noteOrderLocked(items)
		s.gmu.Unlock()
	}
	return items, nil
}

// noteOrderLocked (gmu held) checks that each FIFO group is handed out in
// order: a message handed out for the first time that was sent before a
// message of its group already handed out came after it — the server gave
// the group's later messages out first. moto does so when a group's
// messages in flight together become visible at once (a receive whose
// answer was lost, a hold that ran out): it hands out the last of them and
// the group's later messages first (docs/emulators.md, row 27); AWS keeps
// a group's order. The run cannot undo it: it counts such messages and its
// end says which groups' copies are out of order (EndState.OrderLost).
// A message received again (its hold lost) is not counted. Send times
// (ms) are the order SQS reports on every server: SequenceNumber is
// random on moto.
func (s *QueueSource) noteOrderLocked(items []broker.Message) {
	for _, it := range items {
		r := it.Record
		if _, again := s.handedOut[r.MessageID]; again {
			continue
		}
		s.handedOut[r.MessageID] = struct{}{}
		g, sent := r.System.MessageGroupID, r.System.SentAt
		if sent.IsZero() {
			continue
		}
		if last, ok := s.lastSent[g]; ok && sent.Before(last) {
			s.orderLost[g]++
			continue
		}
		s.lastSent[g] = sent
	}
}

// leave counts msgs as leaving their groups (FIFO: their delete or
// release is under way) until the returned func is called.
func (s *QueueSource) leave(msgs []*Message) (done func()) {
	if !s.q.FIFO {
		return func() {}
	}
	s.gmu.Lock()
	defer s.gmu.Unlock()
	var groups []string
	for _, m := range msgs {
		if g, ok := s.groupOf[m]; ok {
			groups = append(groups, g)
			s.leaving[g]++
		}
	}
	return func() {
		s.gmu.Lock()
		defer s.gmu.Unlock()
		for _, g := range groups {
			if s.leaving[g]--; s.leaving[g] <= 0 {
				delete(s.leaving, g)
			}
		}
	}
}

// unhold notes that msgs are no longer held (removed or given back).
func (s *QueueSource) unhold(msgs []*Message) {
	if !s.q.FIFO {
		return
	}
	s.gmu.Lock()
	defer s.gmu.Unlock()
	for _, m := range msgs {
		g, ok := s.groupOf[m]
		if !ok {
			continue
		}
		delete(s.groupOf, m)
		if s.held[g]--; s.held[g] <= 0 {
			delete(s.held, g)
		}
	}
}

func handles(items []broker.Message) []*Message {
	msgs := make([]*Message, 0, len(items))
	for _, it := range items {
		if m, ok := it.Handle.(*Message); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// Ack deletes the items from the queue with their newest receipt handles.
// An item whose lease was lost is not deleted (deleting with a superseded
// handle can succeed without deleting); it fails with ErrLeaseLost
// and is processed again when it is received again.
func (s *QueueSource) Ack(ctx context.Context, items []broker.Message) []error {
	msgs := handles(items)
	defer s.leave(msgs)()
	failed := s.lease.Delete(ctx, msgs)
	// A message received again while its delete was in flight is held
	// under its new receipt handle: delete it once more with that one.
	var again []*Message
	for m, err := range failed {
		if errors.Is(err, ErrReceivedAgain) {
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
	var gone []*Message
	for i, it := range items {
		m, ok := it.Handle.(*Message)
		if !ok {
			out[i] = errors.New("item was not received from this queue")
			continue
		}
		out[i] = failed[m]
		if out[i] == nil {
			gone = append(gone, m)
		}
	}
	s.unhold(gone)
	s.lowerHold()
	return out
}

// Release makes the items visible again, once no abandoned long poll can
// take them on the server.
func (s *QueueSource) Release(ctx context.Context, items []broker.Message) error {
	if len(items) == 0 {
		return nil
	}
	s.waitQuiet(ctx)
	msgs := handles(items)
	defer s.leave(msgs)()
	err := s.lease.Release(ctx, msgs)
	s.unhold(msgs)
	s.lowerHold()
	return err
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

// EndReading makes later receives of a FIFO queue return nothing and,
// when mayAbandon, ends the long polls under way: a poll abandoned
// mid-flight goes on at the server until its wait is over and may still
// take a message there (it stays invisible for the run's visibility
// timeout, then is back — nothing is lost). If the run releases after all
// (a guard trips, an interrupt), Release and Close first wait until those
// polls have surely ended, so they cannot take what is given back. It
// saves up to one long-poll wait at the end of a run.
func (s *QueueSource) EndReading(mayAbandon bool) {
	s.fifoDone.Store(true)
	if mayAbandon {
		s.abandonPoll()
	}
}

// Close stops the heartbeat and releases every message still held. With
// nothing left hidden, this process's ledger file goes; the files of dead
// processes whose time has passed go too.
func (s *QueueSource) Close(ctx context.Context) error {
	s.abandonPoll()
	s.stop()
	if s.lease.Len() > 0 {
		s.waitQuiet(ctx)
	}
	err := s.lease.ReleaseAll(ctx)
	s.ledgerMu.Lock()
	s.ledger.Close(err == nil && s.lease.Len() == 0)
	s.ledgerMu.Unlock()
	ForgetDeadHolds(s.opt.DeadHolds)
	return err
}

// holdReceiveSlack: how long past its wait a receive's answer may still be
// decided at SQS (the ledger covers it).
const holdReceiveSlack = 2 * time.Second

// cover makes this process's ledger file (created on first use) say that
// messages may stay hidden until until, with up to more messages beyond
// those held now.
func (s *QueueSource) cover(until time.Time, more int) {
	if s.opt.StateDir == "" {
		return
	}
	s.ledgerMu.Lock()
	if s.ledger == nil && !s.ledgerOff {
		l, err := OpenHoldLedger(s.opt.StateDir, s.q.URL, s.opt.Warn)
		if err != nil {
			s.ledgerOff = true // no ledger for this run
			s.ledgerMu.Unlock()
			if s.opt.Warn != nil {
				s.opt.Warn(fmt.Sprintf("no hold ledger in %s (%v): if this process dies, a re-run cannot know which messages it still hides", s.opt.StateDir, err))
			}
			return
		}
		l.rec.Visibility = s.opt.Visibility // before its first write
		s.ledger = l
	}
	l := s.ledger
	s.ledgerMu.Unlock()
	l.Cover(until, s.lease.Len()+more, holdHeadroom(s.opt.Visibility))
}

// lowerHold tells the ledger file how many messages are held now (after
// deletes and releases).
func (s *QueueSource) lowerHold() {
	s.ledgerMu.Lock()
	l := s.ledger
	s.ledgerMu.Unlock()
	l.Lower(s.lease.Len())
}

// End decides the end of reading from what the receives answered.
//
// A long poll (WaitTimeSeconds ≥ 1, which every receive here is) asks
// every SQS server, so an empty answer means nothing was visible while it
// waited. On a standard queue one empty long poll that began after the last
// messages were handed out ends reading. On a FIFO queue a message the run
// holds locks its group: the empty answer counts only if it began after the
// run last had nothing in hand (run.QuietSince) — finishing a message
// unlocks the next of its group, so a run that consumes drains every group.
// What a run holds to its end (skipped, or a read that consumes nothing)
// keeps its groups locked: the final report estimates what waits behind
// them (Blocked). A receive the SDK retried after a lost answer may have
// taken messages nobody holds until their visibility ends: they are
// reported (Unknown, UnknownUntil) until an empty long poll that began
// after that proves them back and read. The queue's approximate counts
// (which trail by up to a minute on AWS, and count in-flight messages as
// visible on local-aws-sqs) are read only for the final report's advisory
// note.
func (s *QueueSource) End(ctx context.Context, run broker.RunState, final bool) (broker.EndState, error) {
	switch {
	case final:
	case s.q.FIFO:
		s.recvMu.lock(true) // ahead of the receives waiting: at most the one under way
		defer s.recvMu.unlock()
	default:
		s.gate.Lock() // waits for the receives under way (one long poll at most)
		defer s.gate.Unlock()
	}
	s.pollMu.Lock()
	lastItems, lastEmpty := s.lastItems, s.lastEmpty
	s.pollMu.Unlock()
	if s.q.FIFO && !final {
		s.fifoBusy.Store(run.Busy > 0)
	}
	st := broker.EndState{Ordered: s.q.FIFO}
	st.Drained = !lastEmpty.IsZero() && !lastEmpty.Before(lastItems)
	if s.q.FIFO && st.Drained && !final {
		st.Drained = run.Busy == 0 && !run.QuietSince.Before(lastItems) && !lastEmpty.Before(run.QuietSince)
	}
	st.Unknown, st.UnknownUntil, _ = s.recv.unknownAfter(lastEmpty)
	if st.Drained && st.UnknownUntil.IsZero() && !final && s.lateDeadHolds(ctx) {
		st.Unknown, st.UnknownUntil, _ = s.recv.unknownAfter(lastEmpty)
	}
	if st.Drained && st.UnknownUntil.IsZero() && !final {
		s.fifoDone.Store(true) // the engine ends reading now
	}
	if !final {
		return st, nil
	}
	return s.report(ctx, st)
}

// lateDeadHolds: a run that began with dead processes' holds (DeadHolds)
// and found the queue empty once their time had passed asks the queue's
// counts, once, whether messages are still in flight that it does not
// hold. The ledger covers a receive from the moment it was sent; a server
// that answered it later than that (slowed down, the process dead by
// then) hides what it handed out for a visibility from then. Those
// messages are then waited for like a lost receive's, up to the dead
// processes' visibility (this run's where the ledger does not say) from
// now, and read. On AWS the counts trail, so the wait may be for nothing:
// it is bounded, and happens only after a kill. It reports whether it
// added such a window.
func (s *QueueSource) lateDeadHolds(ctx context.Context) bool {
	if len(s.opt.DeadHolds) == 0 || !s.deadRechecked.CompareAndSwap(false, true) {
		return false
	}
	cp := *s.q
	if err := s.c.Refresh(ctx, &cp); err != nil {
		return false
	}
	other := cp.Counts().InFlight - s.lease.Len()
	if other <= 0 {
		return false
	}
	hidden := s.opt.Visibility
	for _, h := range s.opt.DeadHolds {
		hidden = max(hidden, h.Visibility)
	}
	until := time.Now().Add(hidden + lostGrace)
	s.recv.mu.Lock()
	s.recv.lost = append(s.recv.lost, lostWindow{until: until, n: other, dead: true})
	s.recv.mu.Unlock()
	if s.opt.Tell != nil {
		s.opt.Tell(fmt.Sprintf("the queue still shows %d message(s) in flight that no live run holds, after a dlqctl process ended without releasing its messages (a receive it sent may have been answered late): waiting until %s (in %s) for them",
			other, until.Format(time.TimeOnly), time.Until(until).Round(time.Second)))
	}
	return true
}

// report fills the final broker.EndState: what waits behind the FIFO groups the
// run held to its end, and the queue's counts where they disagree with
// what the run saw (advisory).
func (s *QueueSource) report(ctx context.Context, st broker.EndState) (broker.EndState, error) {
	cp := *s.q
	countsErr := s.c.Refresh(ctx, &cp)
	n := cp.Counts()
	held := s.lease.Len()
	// local-aws-sqs counts held messages as visible too; AWS and moto do
	// not. Held messages the counts show both ways are not "visible".
	visible := n.Visible
	if held > 0 && visible >= held && n.InFlight >= held {
		visible -= held
	}
	other := max(0, n.InFlight-held)
	if s.q.FIFO {
		s.gmu.Lock()
		groups, noLock := len(s.held), s.noLock
		s.gmu.Unlock()
		if groups > 0 && !noLock {
			// A read that holds a group's message to its end cannot see the
			// rest of that group: estimate what waits behind from the
			// counts seen when the run began and now.
			st.BlockedGroups = groups
			st.Blocked = max(0, s.startSeen.Visible-int(s.distinct.Load()))
			if countsErr == nil {
				st.Blocked = max(st.Blocked, visible)
			}
		}
	}
	if s.q.FIFO {
		s.gmu.Lock()
		for g, n := range s.orderLost {
			st.OrderLost += n
			st.OrderLostGroups = append(st.OrderLostGroups, g)
		}
		s.gmu.Unlock()
		sort.Strings(st.OrderLostGroups)
		st.OrderLostGroups = st.OrderLostGroups[:min(len(st.OrderLostGroups), 100)]
	}
	if !st.UnknownUntil.IsZero() && countsErr == nil && other > 0 {
		st.Unknown = min(st.Unknown, other)
	}
	var notes []string
	if st.Blocked > 0 {
		notes = append(notes, fmt.Sprintf("%d message(s) could not be read: a FIFO group's later messages cannot be received while an earlier message of the group is held", st.Blocked))
	}
	if st.OrderLost > 0 {
		notes = append(notes, fmt.Sprintf("%d message(s) of FIFO group(s) %s were handed out by the queue after later messages of their group (a receive's answer or a hold was lost, and the queue then gave the group's later messages out first): those groups' copies are out of order",
			st.OrderLost, strings.Join(st.OrderLostGroups, ", ")))
	}
	if !st.UnknownUntil.IsZero() {
		lost, lostUntil, dead, deadUntil := s.recv.outstanding()
		if lost > 0 {
			notes = append(notes, fmt.Sprintf("up to %d message(s) were in flight elsewhere when the run ended: a receive whose answer was lost may have taken them, and nobody holds them; they become visible again within %s — re-run then (or run with --wait-inflight)",
				lost, max(0, time.Until(lostUntil)).Round(time.Second)))
		}
		if dead > 0 {
			notes = append(notes, fmt.Sprintf("up to %d message(s) are still hidden by a dlqctl process that ended without releasing them (killed or crashed; its hold ledger says so); they become visible again within %s — re-run then (or run with --wait-inflight)",
				dead, max(0, time.Until(deadUntil)).Round(time.Second)))
		}
	}
	st.Note = strings.Join(notes, "; ")
	if countsErr != nil {
		return st, nil // the counts only add a note
	}
	shownVisible := visible
	if st.Blocked > 0 {
		shownVisible = 0 // already reported as blocked
	}
	if shownVisible > 0 || other > 0 || n.Delayed > 0 {
		var parts []string
		if shownVisible > 0 {
			parts = append(parts, fmt.Sprintf("%d visible", shownVisible))
		}
		if other > 0 {
			parts = append(parts, fmt.Sprintf("%d in flight that this run did not hold", other))
		}
		if n.Delayed > 0 {
			parts = append(parts, fmt.Sprintf("%d delayed (not yet receivable)", n.Delayed))
		}
		st.Counts = &broker.CountsNote{Visible: shownVisible, InFlight: other, Note: fmt.Sprintf(
			"the queue's approximate counts still show %s, although this run's receives found it empty; SQS's counts can trail by up to a minute%s",
			strings.Join(parts, " and "), otherNote(other))}
	} else if st.BlockedGroups > 0 && st.Blocked == 0 {
		st.Counts = &broker.CountsNote{Note: fmt.Sprintf(
			"this run held messages of %d FIFO group(s) to its end, and SQS hands out nothing more of a group while one of its messages is held; the queue's approximate counts show nothing waiting behind them, but they can trail by up to a minute — to be sure to see every message, archive with --delete and work from the archive", st.BlockedGroups)}
	}
	return st, nil
}

func otherNote(other int) string {
	if other == 0 {
		return ""
	}
	return ", and messages in flight may be held by another consumer (or a peer of a shared run)"
}

// RetriedReceives counts the run's receives that the SDK sent more than
// once (or that failed after they may have reached SQS).
func (s *QueueSource) RetriedReceives() int { return int(s.recv.retried.Load()) }

// receiveWatch is the queue API with ReceiveMessage watched: a receive the
// SDK's retryer sent more than once may have been carried out by SQS
// without its answer arriving (internal/faultproxy LostReceives), leaving
// messages in flight that nobody holds until their visibility ends. It
// notes until when such messages may be out, and how many at most.
type receiveWatch struct {
	API
	hidden  time.Duration
	retried atomic.Int64
	mu      sync.Mutex
	lost    []lostWindow
	// beforeAttempt, when set, is told before every attempt of a receive
	// (the SDK's retries included) until when the messages that attempt
	// may take can stay hidden, and how many: the hold ledger is written
	// per attempt, since a retry starts later than the call.
	beforeAttempt func(until time.Time, n int)
}

// lostWindow: up to n messages may be in flight with nobody holding them
// until until. dead: a dead dlqctl process's hold (its ledger file), not a
// lost receive of this run.
type lostWindow struct {
	until time.Time
	n     int
	dead  bool
}

// lostGrace is added to a receive's visibility before messages it may have
// lost are surely visible again.
const lostGrace = 2 * time.Second

func (w *receiveWatch) ReceiveMessage(ctx context.Context, in *awssqs.ReceiveMessageInput, opts ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error) {
	if w.beforeAttempt != nil {
		opts = append(opts, w.coverEachAttempt(in))
	}
	out, err := w.API.ReceiveMessage(ctx, in, opts...)
	lost := 0
	if out != nil {
		lost = AttemptsThatMayHaveActed(out.ResultMetadata)
	}
	if err != nil && ctx.Err() == nil && MayHaveActed(err) {
		lost++ // the last attempt may have reached SQS before it failed
	}
	if lost > 0 {
		w.retried.Add(1)
		per := int(in.MaxNumberOfMessages)
		if per <= 0 {
			per = 1
		}
		hidden := w.hidden
		if in.VisibilityTimeout > 0 {
			hidden = time.Duration(in.VisibilityTimeout) * time.Second
		}
		// The window runs from the end of the call, not its start: the
		// attempt that may have acted can be a retry sent seconds later
		// (after the SDK's backoff), and SQS hides what it takes from when
		// it acts, which is before the attempt's failure reached us. From
		// the start, the window closed while the messages were still
		// hidden, and a FIFO archive exited 0 with them in flight.
		w.mu.Lock()
		w.lost = append(w.lost, lostWindow{until: time.Now().Add(hidden + lostGrace), n: lost * per})
		w.mu.Unlock()
	}
	return out, err
}

// coverEachAttempt is a client option that calls beforeAttempt before each
// attempt of the receive in: the middleware sits after the SDK's retry
// step, so it runs once per attempt, retries included.
func (w *receiveWatch) coverEachAttempt(in *awssqs.ReceiveMessageInput) func(*awssqs.Options) {
	hidden := w.hidden
	if in.VisibilityTimeout > 0 {
		hidden = time.Duration(in.VisibilityTimeout) * time.Second
	}
	wait := time.Duration(in.WaitTimeSeconds) * time.Second
	n := max(int(in.MaxNumberOfMessages), 1)
	cover := middleware.FinalizeMiddlewareFunc("dlqctlHoldLedgerCover", func(ctx context.Context, fin middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		w.beforeAttempt(time.Now().Add(wait+hidden+holdReceiveSlack), n)
		return next.HandleFinalize(ctx, fin)
	})
	return func(o *awssqs.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(cover, middleware.After)
		})
	}
}

// unknownAfter returns how many messages at most lost receives may still
// hold out, and until when: the windows no empty long poll begun after
// their end (emptySince) has closed.
func (w *receiveWatch) unknownAfter(emptySince time.Time) (int, time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, until, dead := 0, time.Time{}, 0
	keep := w.lost[:0]
	for _, l := range w.lost {
		if !emptySince.Before(l.until) {
			continue // back by then, and an empty long poll came after
		}
		keep = append(keep, l)
		n += l.n
		if l.dead {
			dead += l.n
		}
		if l.until.After(until) {
			until = l.until
		}
	}
	w.lost = keep
	return n, until, dead
}

// outstanding splits the windows still open (as unknownAfter last left
// them) into lost receives and dead processes' holds.
func (w *receiveWatch) outstanding() (lost int, lostUntil time.Time, dead int, deadUntil time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lost {
		if l.dead {
			dead += l.n
			if l.until.After(deadUntil) {
				deadUntil = l.until
			}
		} else {
			lost += l.n
			if l.until.After(lostUntil) {
				lostUntil = l.until
			}
		}
	}
	return
}

// isOverLimit reports whether err is SQS's OverLimit error (too many
// messages in flight).
func isOverLimit(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "OverLimit"
}

var (
	_ broker.Source = (*QueueSource)(nil)
	_ broker.Ender  = (*QueueSource)(nil)
)
