package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Decision is what a run does with one record.
type Decision int

const (
	// Handle passes the record to the sink (replay, archive).
	Handle Decision = iota
	// Leave keeps the record pending: the committed offset never passes
	// it, and a later run sees it again.
	Leave
	// Discard drops the record explicitly: the commit moves past it.
	Discard
)

// DrainOptions describe one run over a topic as a member of Group.
type DrainOptions struct {
	Source Address
	Conn   Conn
	Group  string
	// Select decides per record (nil: Handle every record).
	Select func(*Message) Decision
	// Sink makes copies durable somewhere else and returns one result
	// per record (nil: durable, the record may be committed past). The
	// msgs slice is Drain's to reuse once Sink returns (the messages in it
	// stay valid).
	Sink func(ctx context.Context, msgs []*Message) []error
	// Batch bounds the records of one poll, sink call and commit (0: 500).
	Batch int
	// Limit stops after this many records were handled (0: no limit).
	Limit int
	// Wait blocks until n more records may be handled (rate, ramp,
	// guards); an error stops the run.
	Wait func(ctx context.Context, n int) error
	// OnBatch is called after each batch is settled (its commit is under
	// way; it has landed before the next batch is committed).
	OnBatch func(DrainStats)
	// OnRecord is called for every record with its outcome. Select,
	// Sink, OnRecord and OnBatch are called one at a time, from the
	// goroutine running Drain. The messages they are given are valid
	// until their batch is settled (the next batch is read into the same
	// memory): copy what must outlive it.
	OnRecord func(m *Message, outcome string, err error)
	// SessionTimeout of the group membership (0: 10 s).
	SessionTimeout time.Duration
	// StateDir, Tell and Warn keep the member ledger (ConsumerOptions):
	// a re-run waits for the members of killed runs the group still lists.
	StateDir   string
	Tell, Warn func(string)
	// RunID names the run in its intent log (intent.go), kept in
	// StateDir when both are set: each batch's offsets are recorded
	// before it is produced (fsynced in the background), and the records a killed run
	// recorded and this run produces again are passed to OnResent.
	RunID string
	// OnResent is called (from the goroutine running Drain, after the
	// record's OnRecord) for each handled record a killed run's intent
	// listed past the group's commit: produced by it, maybe twice.
	OnResent func(m *Message, killed KilledRun)
	// Txn, when set, is the transactional producer the Sink produces
	// with (--exactly-once): each batch's records and its offset commit
	// are one transaction, so read_committed consumers of the destination
	// see a batch only together with the commit that moves past it.
	Txn *Producer
}

// Outcomes passed to OnRecord.
const (
	OutcomeHandled   = "handled"
	OutcomeDiscarded = "discarded"
	OutcomeLeft      = "left"
	OutcomeFailed    = "failed"
)

// DrainStats count a run. Every record read lands in exactly one of
// Handled, Discarded, Left, Failed.
type DrainStats struct {
	Read      int `json:"read"`
	Handled   int `json:"handled"`
	Discarded int `json:"discarded"`
	Left      int `json:"left"`   // not picked by the selection, or past the limit: still pending
	Failed    int `json:"failed"` // the sink failed: still pending
	// JournalFull counts handled records the journal could not list
	// (they stay pending and will be handled again: at most this many
	// duplicates).
	JournalFull int `json:"journal_full,omitempty"`
	// Unacked counts handled records whose partition moved to another
	// process before the commit (it re-reads them: duplicates).
	Unacked int `json:"unacked,omitempty"`
	// Uncommitted counts handled records whose commit failed (a later
	// run re-sends them: duplicates).
	Uncommitted int `json:"uncommitted,omitempty"`
	Batches     int `json:"batches"`
	// Resent counts handled records a killed run's intent listed past
	// the group's commit (OnResent): produced before, by a run that died
	// before committing them.
	Resent int `json:"resent,omitempty"`
	// LeftToOthers counts pending records of partitions other members of
	// the group still held when this process ended (it waited two session
	// timeouts for them).
	LeftToOthers int64 `json:"left_to_others,omitempty"`
	// Unfinished counts records of partitions the group gave this process
	// that the group's commit (read back at the end) does not cover and
	// that no other count holds: never read (the partition came late), or
	// pending in a partition that moved to another member. Zero is what
	// lets a run be complete.
	Unfinished int64 `json:"unfinished,omitempty"`
}

// Drain reads the topic's pending records as a member of the group and
// settles each: the commit moves only past records the sink made durable
// or the selection discarded. On ctx cancellation it finishes the batch in
// flight (sink and commit), then returns ctx.Err().
func Drain(ctx context.Context, opt DrainOptions) (st DrainStats, runErr error) {
	batch := opt.Batch
	if batch <= 0 {
		batch = 500
	}
	c, err := OpenConsumer(ctx, opt.Source, opt.Conn, opt.Group, ConsumerOptions{MaxPollRecords: batch, SessionTimeout: opt.SessionTimeout,
		ReuseMessages: true, OriginTopicOnly: true, StateDir: opt.StateDir, Tell: opt.Tell, Warn: opt.Warn})
	if err != nil {
		return st, err
	}
	// Settling (sink, commit, close) finishes even after ctx is
	// cancelled: an interrupted run stops between batches, never inside one.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	settle := func() context.Context { return sctx }
	abandon := false
	var intents *intentLog
	if opt.StateDir != "" && opt.RunID != "" {
		var plan *Plan
		if dir := intentDir(opt.StateDir, opt.Group, opt.Source.Topic); hasDeadIntents(dir) {
			// What the group's commit covers, now that the killed runs'
			// members are gone (OpenConsumer waited for them).
			if plan, err = MakePlan(sctx, c.adm, opt.Source.Topic, opt.Group); err != nil {
				_ = c.Close(sctx)
				return st, err
			}
		}
		intents = openIntentLog(opt.StateDir, opt.Group, opt.Source.Topic, opt.RunID, opt.Txn != nil, plan, opt.Warn)
		if intents != nil && intents.prior != nil && opt.Tell != nil {
			opt.Tell(intents.prior.describe())
		}
	}
	defer func() {
		clean := !abandon && st.Uncommitted+st.Unacked+st.JournalFull == 0 &&
			(runErr == nil || errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded))
		intents.close(clean)
	}()
	defer func() {
		if abandon {
			c.abandon()
			return
		}
		cctx, cancel := context.WithTimeout(sctx, time.Minute)
		defer cancel()
		_ = c.Close(cctx)
	}()
	note := func(m *Message, outcome string, err error) {
		if opt.OnRecord != nil {
			opt.OnRecord(m, outcome, err)
		}
	}
	// The commit of a batch runs while the next batch is polled and
	// produced (commits are ordered by the consumer, and each covers only
	// records already produced and acknowledged); it is waited for before
	// the next commit and before the run returns. A failed commit stops the
	// run: the batch it covered stays pending (duplicates, never a loss).
	var inflight chan error
	var inflightN int
	waitCommit := func() error {
		if inflight == nil {
			return nil
		}
		err := <-inflight
		inflight = nil
		if err != nil {
			st.Uncommitted += inflightN
		}
		return err
	}
	defer func() { _ = waitCommit() }()
	// Reused from batch to batch.
	var (
		picked, sent []*Message
		acks         []ackResult
		resent       []resentRec
	)
	for {
		if err := ctx.Err(); err != nil {
			return st, errors.Join(err, waitCommit())
		}
		if opt.Limit > 0 && st.Handled >= opt.Limit {
			return st, waitCommit()
		}
		msgs, done, err := c.Poll(ctx, batch)
		if err != nil {
			return st, errors.Join(err, waitCommit())
		}
		if done {
			if err := waitCommit(); err != nil {
				return st, err
			}
			u, err := c.Unfinished(settle())
			if err != nil {
				return st, err
			}
			st.LeftToOthers, st.Unfinished = u.LeftToOthers, u.Unread+u.Moved
			return st, nil
		}
		st.Read += len(msgs)
		picked = picked[:0]
		for _, m := range msgs {
			d := Handle
			if opt.Select != nil {
				d = opt.Select(m)
			}
			if d == Handle && opt.Limit > 0 && st.Handled+len(picked) >= opt.Limit {
				d = Leave
			}
			switch d {
			case Leave:
				st.Left++
				note(m, OutcomeLeft, nil)
			case Discard:
				if ok, err := c.Ack(m); ok {
					st.Discarded++
					note(m, OutcomeDiscarded, nil)
				} else {
					st.Left++
					note(m, OutcomeLeft, err)
				}
			default:
				picked = append(picked, m)
			}
		}
		if len(picked) > 0 && opt.Wait != nil {
			if err := opt.Wait(ctx, len(picked)); err != nil {
				// Nothing of this batch was sent: it stays pending.
				st.Left += len(picked)
				for _, m := range picked {
					note(m, OutcomeLeft, nil)
				}
				_ = c.Commit(settle())
				return st, err
			}
		}
		inTxn := opt.Txn != nil && len(picked) > 0
		if inTxn {
			if err := opt.Txn.cl.BeginTransaction(); err != nil {
				st.Left += len(picked)
				return st, fmt.Errorf("beginning a transaction: %w", err)
			}
		}
		handledBefore, resentBefore := st.Handled, st.Resent
		if len(picked) > 0 {
			// Write-ahead: the offsets about to be produced are written
			// before the first of them can reach the destination (and
			// fsynced in the background).
			intents.record(picked)
			errs := opt.Sink(settle(), picked)
			// The records the sink made durable are acked under one lock.
			sent = sent[:0]
			for i, m := range picked {
				if i < len(errs) && errs[i] == nil {
					sent = append(sent, m)
				}
			}
			acks = c.ackAll(sent, acks)
			k := 0
			for i, m := range picked {
				var e error
				if i < len(errs) {
					e = errs[i]
				} else {
					e = errors.New("sink returned no result")
				}
				if e != nil {
					st.Failed++
					note(m, OutcomeFailed, e)
					continue
				}
				a := acks[k]
				k++
				st.Handled++
				switch {
				case errors.Is(a.err, ErrJournalFull):
					st.JournalFull++
				case !a.ok:
					st.Unacked++
				}
				note(m, OutcomeHandled, nil)
				if intents != nil && intents.prior != nil {
					if kr, ok := intents.prior.lookup(m.Partition, m.Offset); ok {
						st.Resent++
						intents.prior.found++
						resent = append(resent, resentRec{m, kr})
					}
				}
			}
			clear(sent)
		}
		// Records produced again are told once their batch stands (a
		// transaction that aborts takes them back).
		tellResent := func() {
			if opt.OnResent != nil {
				for _, r := range resent {
					opt.OnResent(r.m, r.run)
				}
			}
			clear(resent)
			resent = resent[:0]
		}
		if !inTxn {
			tellResent()
		}
		if inTxn {
			if err := endTxn(settle(), c, opt.Txn, st.Handled-handledBefore < len(picked)); err != nil {
				// Aborted: nothing of this batch is visible to read_committed
				// consumers and the offsets did not move; the journal in
				// memory is dropped, not committed.
				n := st.Handled - handledBefore
				st.Handled -= n
				st.Left += n
				if intents != nil && intents.prior != nil {
					intents.prior.found -= int64(st.Resent - resentBefore)
				}
				st.Resent = resentBefore
				resent = resent[:0]
				abandon = true
				return st, err
			}
			tellResent()
		}
		if err := waitCommit(); err != nil {
			return st, err
		}
		if inTxn {
			// The transaction committed the offsets; nothing is dirty.
			if err := c.Commit(settle()); err != nil {
				st.Uncommitted += len(picked)
				return st, err
			}
		} else {
			ch := make(chan error, 1)
			inflight, inflightN = ch, len(picked)
			go func() { ch <- c.Commit(settle()) }()
		}
		st.Batches++
		if opt.OnBatch != nil {
			opt.OnBatch(st)
		}
	}
}

// resentRec is a handled record a killed run's intent listed.
type resentRec struct {
	m   *Message
	run KilledRun
}

// Router picks the destination of a replayed record: To when set, else
// the original topic from the record's dead-letter headers.
type Router struct {
	To  string
	adm *kadm.Client

	mu     sync.Mutex
	exists map[string]*routeCheck
	// last is the last destination checked: records of a dead-letter
	// topic go to one or a few, so most look-ups end here without a lock.
	last atomic.Pointer[routeCheck]
}

// routeCheck is a destination and whether it exists (nil: it does).
type routeCheck struct {
	topic string
	err   error
}

// NewRouter returns a router checking destinations on adm's cluster.
func NewRouter(adm *kadm.Client, to string) *Router {
	return &Router{To: to, adm: adm, exists: map[string]*routeCheck{}}
}

// ErrNoOrigin is returned for a record without an original-topic header
// when no --to was given.
var ErrNoOrigin = errors.New("the record names no original topic in its headers (kafka_dlt-original-topic, __connect.errors.topic, __streams.errors.topic, x-original-topic, original_topic): pass --to kafka://…/TOPIC")

var errTopicMissing = errors.New("topic missing")

// Route returns m's destination topic, checked to exist.
func (r *Router) Route(ctx context.Context, m *Message) (string, error) {
	t := r.To
	if t == "" {
		t = m.Origin.Topic
	}
	if t == "" {
		return "", ErrNoOrigin
	}
	if t == m.Topic {
		return "", fmt.Errorf("the destination %s is the topic being read: a replay would loop", t)
	}
	if l := r.last.Load(); l != nil && l.topic == t {
		return t, l.err
	}
	r.mu.Lock()
	c := r.exists[t]
	r.mu.Unlock()
	if c == nil {
		ok, lerr := TopicExists(ctx, r.adm, t)
		c = &routeCheck{topic: t}
		switch {
		case lerr != nil:
			return "", lerr // not cached: transient
		case !ok:
			c.err = fmt.Errorf("destination topic %s does not exist (dlqctl never creates topics): %w", t, errTopicMissing)
		}
		r.mu.Lock()
		r.exists[t] = c
		r.mu.Unlock()
	}
	r.last.Store(c)
	return t, c.err
}

// ReplaySink returns a Drain sink producing each record's copy to its
// route: key kept (the partitioner keeps per-key placement), headers kept
// minus the dead-letter context, plus the dlqctl marker. The copies of a
// batch are built into memory the sink reuses for the next batch (the
// producer is done with them when Send returns); calls are serialized.
func ReplaySink(p *Producer, r *Router, runID string) func(ctx context.Context, msgs []*Message) []error {
	var (
		mu     sync.Mutex
		cp     copier
		routed []*Message
		topics []string
		idx    []int
	)
	return func(ctx context.Context, msgs []*Message) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(msgs)) // the caller keeps it
		routed, topics, idx = reuse(routed, len(msgs)), reuse(topics, len(msgs)), reuse(idx, len(msgs))
		for i, m := range msgs {
			t, err := r.Route(ctx, m)
			if err != nil {
				errs[i] = err
				continue
			}
			routed = append(routed, m)
			topics = append(topics, t)
			idx = append(idx, i)
		}
		if len(routed) > 0 {
			recs := cp.build(routed, topics, runID, time.Now())
			p.sendInto(ctx, recs, func(k int, e error) { errs[idx[k]] = e })
		}
		clear(routed) // drop the references to this batch's messages
		return errs
	}
}

// endTxn commits the batch's offsets in the producer's transaction and
// ends it: committed when every record of the batch was acknowledged and
// the offsets were added, aborted otherwise (then nothing of the batch is
// visible to read_committed consumers and the run stops: the next one
// starts from the last committed transaction).
func endTxn(ctx context.Context, c *Consumer, p *Producer, failed bool) error {
	var cerr error
	if failed {
		cerr = errors.New("a record of the batch was not acknowledged")
	} else {
		cerr = c.CommitInTxn(ctx, p)
	}
	commit := kgo.TransactionEndTry(cerr == nil)
	if err := p.cl.EndTransaction(ctx, commit); err != nil {
		return fmt.Errorf("ending the transaction: %w", errors.Join(cerr, err))
	}
	if cerr != nil {
		return fmt.Errorf("transaction aborted: %w", cerr)
	}
	return nil
}
