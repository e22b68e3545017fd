package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer reads a topic as a member of dlqctl's consumer group: Kafka's
// own group assignment shares the partitions between every process of the
// group (no home-made split), and the group's committed offsets are the
// journal (see journal.go). Each partition is read up to the last stable
// offset taken when the consumer opened: records arriving later (a
// canary's copy coming back, new failures) wait for the next run.
//
// Use: Poll a batch, settle each record (Ack when its copy is durable,
// Discard when explicitly dropped, nothing when it stays pending), then
// Commit; the next Poll lets a pending rebalance proceed, so a partition
// changes hands only between polls. A record Poll handed out keeps its
// partition until an Ack or a Release settles it: a revoke waits for it
// (handOverWait), so a batch whose commit runs behind the next poll (or
// another worker's batch, or an archive part not yet verified) is
// committed by this member before the partition's new owner reads from
// the group's commit.
type Consumer struct {
	addr    Address
	group   string
	cl      *kgo.Client
	adm     *kadm.Client
	admCl   *kgo.Client // nil: adm is the caller's (ConsumerOptions.Admin)
	ends    map[int32]int64
	total   int32
	topicID [16]byte

	// commitMu orders commits: one OffsetCommit in flight at a time, so a
	// later commit (a revoke's, the run's next batch's) never lands before
	// an earlier one and sets a partition's offset back.
	commitMu sync.Mutex
	// fenced: a transaction of the run aborted after its records were
	// marked handled here; nothing may be committed any more (the marks
	// would move the group past records whose copies were aborted).
	fenced atomic.Bool

	mu    sync.Mutex
	parts map[int32]*partState
	// settled is signalled when a hold ends (awaitHeld); closing is
	// set once the run is over (Close, abandon): what is still held
	// then is never acked, and a revoke no longer waits for it.
	settled chan struct{}
	closing atomic.Bool
	// handOver is the run's flush (broker.HandOverer.OnHandOver), called by a
	// revoke that waits for held records.
	handOver  atomic.Pointer[func(context.Context)]
	assigned  bool // the group assigned us something at least once (or settled with nothing)
	joinedAt  time.Time
	lostAcks  int // acks of records whose partition moved before the commit
	assignErr error

	session time.Duration
	// ledger is this process's entry in the member ledger (members.go);
	// deadUntil is how long members of killed runs may still hold
	// partitions after the wait before the join (othersDone waits that
	// long for them at least).
	ledger    *memberLedger
	deadUntil time.Time
	// waitingSince is when this member first had nothing left of its own
	// while other partitions still had pending records.
	waitingSince time.Time
	// LeftToOthers counts the pending records of partitions other members
	// still held when this member gave up waiting for them.
	leftToOthers int64
	// everAssigned lists every partition the group gave this member during
	// the run (also those that moved away since): the end-of-run check
	// (Unfinished) holds the run to each of them.
	everAssigned map[int32]bool
	// out lists the records Poll handed out that no Ack recorded yet, per
	// partition: what the caller's own accounting covers (left pending by
	// a selection, failed, in flight) at the end of the run.
	out map[int32]*offsetSet
	// intern shares the origin strings decoded from the headers between
	// records (Poll holds mu).
	intern interner
	// originTopicOnly: Poll decodes only the origin's topic and format.
	originTopicOnly bool
}

type partState struct {
	j     *PartitionJournal
	end   int64
	pos   int64 // next offset to read
	dirty bool
	full  bool // journal full: later records stay pending
	// holding counts records of this assignment handed out and not yet
	// settled (acked or released): a revoke waits for them.
	holding int
}

// ConsumerOptions tune a Consumer.
type ConsumerOptions struct {
	// SessionTimeout of the group membership (0: 10 s). Kafka's consumer
	// default is 45 s; a dlqctl run killed with -9 keeps its partitions
	// until the session times out, so a resumed run would wait that long.
	SessionTimeout time.Duration
	// OriginTopicOnly decodes only the topic and format of each
	// message's origin (Message.FullOrigin decodes the rest on demand).
	OriginTopicOnly bool
	// Admin, when set, is the admin client the consumer reads offsets and
	// group state with (the endpoint's: one client, one set of connections
	// and metadata for the run); the caller closes it after the consumer.
	// nil opens one of the consumer's own.
	Admin *kadm.Client
	// StateDir keeps the member ledger (members.go): before joining, the
	// consumer waits for members of killed runs of the same state dir
	// that the group still lists (Tell says so), and records its own
	// member id while it runs (Warn: the ledger cannot be written). ""
	// keeps no ledger.
	StateDir   string
	Tell, Warn func(string)
}

// OpenConsumer joins group on addr.Topic. The ends of every partition are
// read first (read_committed), so the run's scope is fixed at its start.
func OpenConsumer(ctx context.Context, addr Address, conn Conn, group string, opt ConsumerOptions) (*Consumer, error) {
	adm, admCl := opt.Admin, (*kgo.Client)(nil)
	if adm == nil {
		cl, err := NewClient(addr, conn)
		if err != nil {
			return nil, err
		}
		adm, admCl = kadm.NewClient(cl), cl
	}
	closeAdm := func() {
		if admCl != nil {
			admCl.Close()
		}
	}
	plan, err := MakePlan(ctx, adm, addr.Topic, "")
	if err != nil {
		closeAdm()
		return nil, err
	}
	c := &Consumer{addr: addr, group: group, adm: adm, admCl: admCl, ends: map[int32]int64{}, parts: map[int32]*partState{}, joinedAt: time.Now(),
		everAssigned: map[int32]bool{}, out: map[int32]*offsetSet{}, settled: make(chan struct{}, 1)}
	for _, r := range plan.Partitions {
		c.ends[r.Partition] = r.End
	}
	c.total = int32(len(plan.Partitions))
	c.topicID = plan.TopicID
	st := opt.SessionTimeout
	if st <= 0 {
		st = 10 * time.Second
	}
	c.session = st
	c.originTopicOnly = opt.OriginTopicOnly
	if opt.StateDir != "" {
		left, err := waitDeadMembers(ctx, adm, opt.StateDir, group, opt.Tell)
		if err != nil {
			closeAdm()
			return nil, err
		}
		if left > 0 {
			// Still listed: a member killed in the middle of a rebalance
			// is held up to the group's rebalance timeout.
			c.deadUntil = time.Now().Add(rebalanceTimeout + st)
			warnf(opt.Tell, "group %s still lists %d member(s) of killed runs; this run takes their partitions when the group drops them", group, left)
		}
		c.ledger = openMemberLedger(opt.StateDir, group, addr.Topic, st, opt.Warn)
	}
	cl, err := NewClient(addr, conn,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(addr.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(fetchMaxWait),
		// Bound what franz-go buffers ahead of the run (its default
		// fetch is 50 MiB): memory stays flat however large the topic.
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchMaxPartitionBytes),
		NoFetchSessions(),
		kgo.SessionTimeout(st),
		kgo.RebalanceTimeout(rebalanceTimeout),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	)
	if err != nil {
		c.ledger.close()
		closeAdm()
		return nil, err
	}
	if afterConsumerClient != nil {
		afterConsumerClient(c)
	}
	c.cl = cl
	return c, nil
}

// rebalanceTimeout bounds a rebalance of dlqctl's group (franz-go's
// default, Kafka's 60 s): a member killed while the group rebalances can
// be held that long.
const rebalanceTimeout = 60 * time.Second

// afterConsumerClient, when set (tests), runs between the creation of a
// consumer's client and the end of OpenConsumer.
var afterConsumerClient func(*Consumer)

// Client is the consumer's franz-go client (for transactions sharing it).
func (c *Consumer) Client() *kgo.Client { return c.cl }

// The group callbacks use the client they are given, never c.cl: the
// group can assign partitions before OpenConsumer has stored its client
// (the join starts inside kgo.NewClient; on a loaded machine it can finish
// before NewClient's caller runs again).
func (c *Consumer) onAssigned(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	ps := m[c.addr.Topic]
	if member, _ := cl.GroupMetadata(); member != "" {
		c.ledger.setMember(member)
	}
	c.mu.Lock()
	c.assigned = true
	c.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	commits, err := fetchCommits(ctx, c.adm, c.group, c.addr.Topic)
	starts, serr := c.adm.ListStartOffsets(ctx, c.addr.Topic)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || serr != nil {
		c.assignErr = fmt.Errorf("reading the group's commits on assignment: %w", errors.Join(err, serr))
		return
	}
	for _, p := range ps {
		committed, md := int64(-1), ""
		if r, ok := commits.Lookup(c.addr.Topic, p); ok && r.Err == nil && r.At >= 0 {
			committed, md = r.At, r.Metadata
		}
		logStart := int64(0)
		if s, ok := starts.Lookup(c.addr.Topic, p); ok && s.Err == nil {
			logStart = s.Offset
		}
		start := max(committed, logStart)
		j := NewPartitionJournal(max(committed, 0), md)
		for o := j.Committed(); o < start; o++ { // expired below the log start
			_ = j.Mark(o)
		}
		end, ok := c.ends[p]
		if !ok { // a partition added after the start: not in this run
			end = start
		}
		c.parts[p] = &partState{j: j, end: end, pos: start}
		c.everAssigned[p] = true
	}
	// A partition paused at its end before it moved away stays paused in
	// the client when it comes back: resume it (its records from the
	// committed offset on are read again, skipping those the journal lists).
	cl.ResumeFetchPartitions(map[string][]int32{c.addr.Topic: ps})
}

func (c *Consumer) onRevoked(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	// BlockRebalanceOnPoll: we get here only from Poll. Records handed
	// out earlier may still be on their way (the engine commits a batch
	// behind the next poll; other workers hold theirs; an archive part
	// waits for its upload): wait until every one of the partitions going
	// away is acked or released, then commit what is settled, so their
	// new owner starts past them.
	ps := m[c.addr.Topic]
	c.awaitHeld(ctx, ps)
	_ = c.commit(ctx, cl)
	c.drop(ps)
}

// handOverWait bounds how long a revoke waits for held records of the
// partitions going away (well inside the group's rebalance timeout, which
// the revoke callback must not exceed; franz-go heartbeats meanwhile). A
// record still held after it lets the partition go anyway: a record not
// yet delivered then (a guard's pause) is refused delivery (StillHeld,
// the source's Holding); an ack that comes later (a destination that
// stalled) is refused (LostAcks) and the run reports those records as
// sent and not removed.
var handOverWait = 30 * time.Second

// setHandOver registers the run's flush (awaitHeld).
func (c *Consumer) setHandOver(flush func(context.Context)) { c.handOver.Store(&flush) }

// awaitHeld waits until no record of partitions ps is held and
// unsettled, for up to handOverWait (or until ctx ends or a transaction
// of the run aborted: nothing more is committed then). While holds
// remain it asks the run, every second, to make what it delivered durable
// (the run's flush: an archive part is uploaded, so its records' acks can
// land; other workers may take more of ps meanwhile).
func (c *Consumer) awaitHeld(ctx context.Context, ps []int32) {
	deadline := time.Now().Add(handOverWait)
	var flushed time.Time
	for {
		c.mu.Lock()
		n := 0
		for _, p := range ps {
			if st := c.parts[p]; st != nil {
				n += st.holding
			}
		}
		c.mu.Unlock()
		if n == 0 || c.fenced.Load() || c.closing.Load() || ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		if f := c.handOver.Load(); f != nil && time.Since(flushed) >= time.Second {
			(*f)(ctx)
			flushed = time.Now()
			continue
		}
		select {
		case <-ctx.Done():
		case <-c.settled:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StillHeld reports, for each of msgs, whether this member still holds
// its partition under the assignment whose poll handed it out (false: the
// partition moved, or moved and came back, since).
func (c *Consumer) StillHeld(msgs []*Message) []bool {
	out := make([]bool, len(msgs))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range msgs {
		out[i] = m.from != nil && c.parts[m.Partition] == m.from
	}
	return out
}

// settleLocked ends m's hold (mu held).
func (c *Consumer) settleLocked(m *Message) {
	if !m.held {
		return
	}
	m.held = false
	m.from.holding--
	select {
	case c.settled <- struct{}{}:
	default:
	}
}

// Release ends the hold on msgs, which the run will not ack (left
// pending: skipped, refused, a failed or stopped delivery): a revoke of
// their partition no longer waits for them.
func (c *Consumer) Release(msgs []*Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.settleLocked(m)
	}
}

func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.drop(m[c.addr.Topic])
}

func (c *Consumer) drop(ps []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ps {
		delete(c.parts, p)
	}
}

// Poll returns the next pending records (never one a previous run
// handled). done is true when every partition this process holds reached
// the end taken at the start (and the group has assigned something).
func (c *Consumer) Poll(ctx context.Context, max int) (msgs []*Message, done bool, err error) {
	if max <= 0 {
		max = 500
	}
	c.cl.AllowRebalance()
	var slab []Message
	for len(msgs) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		c.mu.Lock()
		if c.assignErr != nil {
			err := c.assignErr
			c.mu.Unlock()
			return nil, false, err
		}
		if c.allDoneLocked() {
			c.mu.Unlock()
			if c.othersDone(ctx) && c.blockAndRecheck(ctx) {
				return nil, true, nil
			}
		} else {
			c.mu.Unlock()
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := c.cl.PollRecords(pctx, max)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || ferr != nil {
				return
			}
			ferr = fmt.Errorf("fetching %s partition %d: %w", t, p, err)
		})
		if ferr != nil {
			return nil, false, ferr
		}
		c.mu.Lock()
		var pause []int32
		// One allocation for the messages of the poll, not one per record.
		// A poll's records come partition by partition: the partition's
		// state is looked up when it changes, not for every record.
		lastP, ps, o := int32(-1), (*partState)(nil), (*offsetSet)(nil)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition != lastP {
				lastP, ps, o = r.Partition, c.parts[r.Partition], c.out[r.Partition]
			}
			if ps == nil || r.Offset < ps.pos {
				return
			}
			if r.Offset >= ps.end {
				if ps.pos < ps.end {
					ps.pos = ps.end
				}
				pause = append(pause, r.Partition)
				return
			}
			if r.Offset+1 > ps.pos {
				ps.pos = r.Offset + 1
			}
			if ps.pos >= ps.end {
				pause = append(pause, r.Partition)
			}
			if r.Attrs.IsControl() {
				// A transaction marker is no record: commit past it,
				// or the committed offset would stop at it forever.
				if ps.j.Mark(r.Offset) == nil {
					ps.dirty = true
				}
				return
			}
			if ps.j.Handled(r.Offset) {
				return
			}
			if o == nil {
				o = new(offsetSet)
				c.out[r.Partition] = o
			}
			o.add(r.Offset)
			if len(slab) == 0 {
				slab = make([]Message, fs.NumRecords())
				if msgs == nil {
					msgs = make([]*Message, 0, len(slab))
				}
			}
			m := &slab[0]
			slab = slab[1:]
			fillFromKgo(m, r, &c.intern, !c.originTopicOnly)
			// Held for the run until it acks, releases or settles it: a
			// revoke of the partition waits for it (awaitHeld).
			m.from, m.held = ps, true
			ps.holding++
			msgs = append(msgs, m)
		})
		c.mu.Unlock()
		if len(pause) > 0 {
			c.cl.PauseFetchPartitions(map[string][]int32{c.addr.Topic: pause})
		}
		if len(msgs) == 0 {
			c.cl.AllowRebalance()
		}
	}
	return msgs, false, nil
}

// blockAndRecheck runs when this member has read every partition it holds
// to its end: it blocks rebalances again (AllowRebalance at the top of Poll
// let them through) so that no partition changes hands while the caller
// settles the records it still has in hand (an archive part not yet
// verified), then checks that the group did not hand it more in between.
// Without the block, a partition assigned (or moved away and back) after
// the last poll was never read, and the run ended "done" with its records
// pending.
func (c *Consumer) blockAndRecheck(ctx context.Context) bool {
	// A cancelled poll returns no records but registers a poller, which
	// holds off rebalances until the next AllowRebalance (or Close).
	done, cancel := context.WithCancel(ctx)
	cancel()
	c.cl.PollRecords(done, 1)
	c.mu.Lock()
	ok := c.allDoneLocked()
	c.mu.Unlock()
	if !ok {
		c.cl.AllowRebalance()
	}
	return ok
}

func (c *Consumer) allDoneLocked() bool {
	if !c.assigned {
		// Nothing assigned yet: the group is still forming. A process
		// that stays without partitions for a whole session timeout
		// (more processes than partitions) has nothing to do.
		return false
	}
	for _, ps := range c.parts {
		if ps.pos < ps.end {
			return false
		}
	}
	return true
}

// Ack records that m is handled (its copy is durable, or it was
// explicitly discarded): the next Commit may move past it. ErrJournalFull
// means it could not be recorded: it stays pending. A record whose
// partition moved to another process is not recorded (ok false): the
// other process will read it again (a duplicate the run reports).
func (c *Consumer) Ack(m *Message) (ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ackLocked(m)
}

// ackAll acks msgs under one lock; res[i] is msgs[i]'s result (res is
// reused when it is large enough).
func (c *Consumer) ackAll(msgs []*Message, res []ackResult) []ackResult {
	res = reuse(res, len(msgs))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		ok, err := c.ackLocked(m)
		res = append(res, ackResult{ok, err})
	}
	return res
}

type ackResult struct {
	ok  bool
	err error
}

func (c *Consumer) ackLocked(m *Message) (ok bool, err error) {
	c.settleLocked(m)
	ps := c.parts[m.Partition]
	if ps == nil {
		c.lostAcks++
		return false, nil
	}
	if ps.full && m.Offset > ps.j.Committed() {
		return false, ErrJournalFull
	}
	if err := ps.j.Mark(m.Offset); err != nil {
		ps.full = true
		return false, err
	}
	ps.dirty = true
	if o := c.out[m.Partition]; o != nil {
		o.remove(m.Offset)
	}
	return true, nil
}

// LostAcks counts acks that came after their partition moved.
func (c *Consumer) LostAcks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostAcks
}

// commitItem is one changed partition's journal to commit: its offset and
// metadata as of the snapshot, and the state to mark clean once written.
type commitItem struct {
	p      int32
	off    int64
	md     string
	target *partState
}

// dirtyParts snapshots the journals of the changed partitions, in
// partition order (what Commit and CommitInTxn write).
func (c *Consumer) dirtyParts() []commitItem {
	c.mu.Lock()
	var items []commitItem
	for p, ps := range c.parts {
		if ps.dirty {
			items = append(items, commitItem{p, ps.j.Committed(), ps.j.Metadata(), ps})
		}
	}
	c.mu.Unlock()
	sort.Slice(items, func(i, k int) bool { return items[i].p < items[k].p })
	return items
}

// Commit writes the journal of every changed partition: the committed
// offset and the list of records handled past it, as this group member.
//
// A commit that races a rebalance of the group — the coordinator answers
// ILLEGAL_GENERATION (the group moved to a generation this member has not
// learned yet) or REBALANCE_IN_PROGRESS (the new generation is being
// synced) — is tried again once the member has the new generation, for up
// to the group's session timeout: this member is still in the group, and
// under the cooperative protocol none of the partitions it holds is given
// to another member before this member lets it go, so its progress is
// still its to commit. Another member joining mid-run (a second dlqctl on
// the same group) must not fail the run's batch.
func (c *Consumer) Commit(ctx context.Context) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	return c.untilGenerationSettles(ctx, func() (bool, error) { return c.commitOnce(ctx, c.cl) })
}

// untilGenerationSettles runs try until it passes or fails for another
// reason than a group between generations, waiting a little longer each
// time, for up to the session timeout (or until ctx ends).
func (c *Consumer) untilGenerationSettles(ctx context.Context, try func() (rebalancing bool, err error)) error {
	deadline := time.Now().Add(c.session)
	backoff := 20 * time.Millisecond
	for {
		rebalancing, err := try()
		if err == nil || !rebalancing || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// commit is the one-try commit of a rebalance callback: franz-go waits for
// the callback, so waiting there for the group's next generation would
// only hold the rebalance up.
func (c *Consumer) commit(ctx context.Context, cl *kgo.Client) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	_, err := c.commitOnce(ctx, cl)
	return err
}

// staleGeneration, when set (tests), changes the generation a commit
// sends: what a commit that raced a generation change carries.
var staleGeneration func(int32) int32

// commitOnce sends one OffsetCommit of the settled progress (commitMu
// held). rebalancing is true when every partition failed with an error of
// a group in a rebalance (a later try may pass).
func (c *Consumer) commitOnce(ctx context.Context, cl *kgo.Client) (rebalancing bool, err error) {
	if c.fenced.Load() {
		return false, errFenced
	}
	items := c.dirtyParts()
	if len(items) == 0 {
		return false, nil
	}
	member, gen := cl.GroupMetadata()
	if staleGeneration != nil {
		gen = staleGeneration(gen)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = c.group
	req.Generation = gen
	req.MemberID = member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = c.addr.Topic
	rt.TopicID = c.topicID // OffsetCommit v10+ names topics by ID
	for _, it := range items {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = it.p
		rp.Offset = it.off
		rp.LeaderEpoch = -1
		md := it.md
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, fmt.Errorf("committing offsets of group %s: %w", c.group, err)
	}
	var errs []error
	failed := map[int32]bool{}
	rebalancing = true
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				failed[p.Partition] = true
				errs = append(errs, fmt.Errorf("partition %d: %w", p.Partition, e))
				rebalancing = rebalancing && (errors.Is(e, kerr.IllegalGeneration) || errors.Is(e, kerr.RebalanceInProgress))
			}
		}
	}
	c.mu.Lock()
	for _, it := range items {
		if !failed[it.p] && c.parts[it.p] == it.target && it.target.j.Committed() == it.off && it.target.j.Metadata() == it.md {
			it.target.dirty = false
		}
	}
	c.mu.Unlock()
	if len(errs) > 0 {
		return rebalancing, fmt.Errorf("committing offsets of group %s: %w", c.group, errors.Join(errs...))
	}
	return false, nil
}

// Close commits what is settled and leaves the group (its partitions go to
// the other members at once).
func (c *Consumer) Close(ctx context.Context) error {
	err := c.Commit(ctx)
	c.closing.Store(true)
	c.cl.CloseAllowingRebalance()
	c.ledger.close()
	c.closeAdmin()
	return err
}

// errFenced is what a commit answers after a transaction of the run
// aborted (fence).
var errFenced = errors.New("a transaction of this run was aborted: nothing more is committed; run the same command again to read its records again")

// fence stops every later commit: a transaction aborted after its records
// were marked handled in the partition journals.
func (c *Consumer) fence() { c.fenced.Store(true) }

// Held lists the partitions this process holds with their journal.
func (c *Consumer) Held() map[int32]PartitionRange {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int32]PartitionRange{}
	for p, ps := range c.parts {
		out[p] = PartitionRange{Partition: p, Committed: ps.j.Committed(), Start: ps.j.Committed(), End: ps.end, HandledAbove: ps.j.HandledAbove()}
	}
	return out
}

// abandon closes the client without committing (the revoke callback
// finds nothing dirty that was not committed by Ack already; a kill -9
// does not even leave the group, which only makes the next member wait
// for the session timeout).
func (c *Consumer) abandon() {
	c.mu.Lock()
	for _, ps := range c.parts {
		ps.dirty = false
	}
	c.parts = map[int32]*partState{}
	c.mu.Unlock()
	c.closing.Store(true)
	c.cl.CloseAllowingRebalance()
	c.ledger.close()
	c.closeAdmin()
}

// closeAdmin closes the consumer's own admin client (not the caller's).
func (c *Consumer) closeAdmin() {
	if c.admCl != nil {
		c.admCl.Close()
	}
}

// CommitInTxn writes the journal of every changed partition inside the
// open transaction of p (AddOffsetsToTxn, then TxnOffsetCommit as this
// group member): the offsets become visible exactly when p's transaction
// commits, together with the records p produced in it.
func (c *Consumer) CommitInTxn(ctx context.Context, p *Producer) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if c.fenced.Load() {
		return errFenced
	}
	items := c.dirtyParts()
	if len(items) == 0 {
		return nil
	}
	txnID, _ := p.cl.OptValue(kgo.TransactionalID).(string)
	if txnID == "" {
		return errors.New("CommitInTxn: the producer is not transactional")
	}
	pid, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id: %w", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, c.group
	aresp, err := add.RequestWith(ctx, p.cl)
	if err == nil {
		err = kerr.ErrorForCode(aresp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("adding group %s's offsets to the transaction: %w", c.group, err)
	}
	// A group between generations is waited for as in Commit.
	if err := c.untilGenerationSettles(ctx, func() (bool, error) { return c.txnOffsetCommit(ctx, txnID, pid, epoch, items) }); err != nil {
		return err
	}
	c.mu.Lock()
	for _, it := range items {
		if c.parts[it.p] == it.target && it.target.j.Committed() == it.off && it.target.j.Metadata() == it.md {
			it.target.dirty = false
		}
	}
	c.mu.Unlock()
	return nil
}

// txnOffsetCommit sends one TxnOffsetCommit of items in p's transaction.
func (c *Consumer) txnOffsetCommit(ctx context.Context, txnID string, pid int64, epoch int16, items []commitItem) (rebalancing bool, err error) {
	member, gen := c.cl.GroupMetadata()
	if staleGeneration != nil {
		gen = staleGeneration(gen)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, c.group, pid, epoch
	req.Generation, req.MemberID = gen, member
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = c.addr.Topic, c.topicID
	for _, it := range items {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = it.p, it.off, -1
		md := it.md
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return false, fmt.Errorf("committing offsets of group %s in the transaction: %w", c.group, err)
	}
	for _, t := range resp.Topics {
		for _, pr := range t.Partitions {
			if e := kerr.ErrorForCode(pr.ErrorCode); e != nil {
				return errors.Is(e, kerr.IllegalGeneration) || errors.Is(e, kerr.RebalanceInProgress),
					fmt.Errorf("committing offsets of group %s in the transaction: partition %d: %w", c.group, pr.Partition, e)
			}
		}
	}
	return false, nil
}

// othersDone reports whether this member may end: every partition it
// does not hold has nothing pending for the group, or it waited two session
// timeouts for them. A member killed with -9 keeps its partitions until its
// session times out; then the group hands them to this member, which reads
// them. Partitions a live peer still works on are its to finish; records a
// peer's selection leaves pending keep its partitions from ever reaching
// the end, hence the bound (then LeftToOthers says how many were left).
func (c *Consumer) othersDone(ctx context.Context) bool {
	plan, err := MakePlan(ctx, c.adm, c.addr.Topic, c.group)
	if err != nil {
		return true // reported by the caller's next step; never spin on it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var pending int64
	for _, pr := range plan.Partitions {
		if _, mine := c.parts[pr.Partition]; mine {
			continue
		}
		pending += pr.Pending()
	}
	if pending == 0 {
		c.waitingSince, c.leftToOthers = time.Time{}, 0
		return true
	}
	if c.waitingSince.IsZero() {
		c.waitingSince = time.Now()
	}
	if time.Since(c.waitingSince) > 2*c.session+5*time.Second && time.Now().After(c.deadUntil) {
		// Partitions this member held earlier in the run are counted by
		// Unfinished (as moved); these are the ones it never held.
		var never int64
		for _, pr := range plan.Partitions {
			if _, mine := c.parts[pr.Partition]; !mine && !c.everAssigned[pr.Partition] {
				never += pr.Pending()
			}
		}
		c.leftToOthers = never
		return true
	}
	return false
}

// LeftToOthers counts the pending records of partitions other members
// held when this member ended.
func (c *Consumer) LeftToOthers() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leftToOthers
}

// Unfinished is the end-of-run account of what this member leaves pending
// that the caller did not see: records of a partition the group gave it
// that were never read, or read and settled but not committed past, or
// that moved to another member first. Records Poll handed out and no Ack
// recorded are the caller's to count (left by a selection, failed, in
// flight) and are not in it.
type Unfinished struct {
	// Unread counts records of held partitions not read to their end, or
	// read and handled but not committed past (the group's commit lags).
	Unread int64
	// Moved counts pending records of partitions that moved to another
	// member during the run; LeftToOthers those of partitions other
	// members held when this one stopped waiting for them.
	Moved, LeftToOthers int64
	// Partitions lists the partitions with something left.
	Partitions []int32
}

// Total is every record Unfinished counts.
func (u Unfinished) Total() int64 { return u.Unread + u.Moved + u.LeftToOthers }

// Unfinished commits what is settled, then reads the group's commits
// back from the coordinator and holds every partition this member was
// assigned to them: a partition is finished only when its commit (offset
// plus the handled list in its metadata) covers every record up to the end
// taken at the start, except the ones the caller still accounts for. The
// broker's word decides, never this member's memory of what it did.
func (c *Consumer) Unfinished(ctx context.Context) (Unfinished, error) {
	var u Unfinished
	if err := c.Commit(ctx); err != nil {
		return u, err
	}
	commits, err := fetchCommits(ctx, c.adm, c.group, c.addr.Topic)
	if err != nil {
		return u, fmt.Errorf("reading back the commits of group %s: %w", c.group, err)
	}
	starts, err := c.adm.ListStartOffsets(ctx, c.addr.Topic)
	if err != nil {
		return u, fmt.Errorf("reading the log start offsets of %s: %w", c.addr.Topic, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u.LeftToOthers = c.leftToOthers
	ps := make([]int32, 0, len(c.everAssigned))
	for p := range c.everAssigned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, k int) bool { return ps[i] < ps[k] })
	for _, p := range ps {
		end, ok := c.ends[p]
		if !ok {
			continue // added after the start: not in this run
		}
		committed, md := int64(-1), ""
		if r, ok := commits.Lookup(c.addr.Topic, p); ok && r.Err == nil && r.At >= 0 {
			committed, md = r.At, r.Metadata
		}
		logStart := int64(0)
		if s, ok := starts.Lookup(c.addr.Topic, p); ok && s.Err == nil {
			logStart = s.Offset
		}
		j := NewPartitionJournal(max(committed, 0), md)
		var left int64
		for o := max(committed, logStart, 0); o < end; o++ {
			if j.Handled(o) {
				continue
			}
			if c.out[p].has(o) {
				continue
			}
			if held := c.parts[p]; held != nil && o >= held.pos {
				// Not read: a transaction marker or an aborted record
				// is never handed out, so only offsets up to the read
				// position are known records.
				left++
				continue
			}
			if held := c.parts[p]; held != nil && held.j.Handled(o) {
				left++ // handled here, not (yet) in the group's commit
				continue
			}
			if c.parts[p] == nil {
				left++
			}
			// Held, read past and never handed out: a control record
			// or an aborted transaction's record (read_committed).
		}
		if left == 0 {
			continue
		}
		u.Partitions = append(u.Partitions, p)
		if c.parts[p] == nil {
			u.Moved += left
		} else {
			u.Unread += left
		}
	}
	return u, nil
}
