package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// OpenSource reads the topic. Peek reads from the group's committed
// offsets (or the earliest) to the ends taken now, joining no group and
// committing nothing. Consume joins the group: Kafka assigns the
// partitions among every process of the run, and Ack commits.
func (e *Endpoint) OpenSource(ctx context.Context, opt broker.SourceOptions) (broker.Source, error) {
	if opt.Mode == broker.Peek {
		plan, err := e.Plan(ctx)
		if err != nil {
			return nil, err
		}
		r, err := newPeekReader(e.addr, e.conn, plan, 0)
		if err != nil {
			return nil, e.wrap(err)
		}
		return &peekSource{e: e, r: r, decode: opt.Decode}, nil
	}
	// A lean read (a redrive without a selection) needs only the origin's
	// topic and format of each record (the route).
	adm, err := e.Admin()
	if err != nil {
		return nil, e.wrap(err)
	}
	c, err := OpenConsumer(ctx, e.addr, e.conn, e.group, ConsumerOptions{StateDir: e.members.StateDir, Tell: e.members.Tell, Warn: e.members.Warn,
		OriginTopicOnly: opt.Lean, Admin: adm})
	if err != nil {
		return nil, e.wrap(err)
	}
	return &consumeSource{e: e, id: e.ID(), c: c, decode: opt.Decode, lean: opt.Lean}, nil
}

func (e *Endpoint) message(m *Message, decode func(*record.Record) any) broker.Message {
	return messageAs(m, e.ID(), decode, false)
}

// messageAs is message with the endpoint's id id, with a lean record
// (broker.SourceOptions.Lean).
func messageAs(m *Message, id string, decode func(*record.Record) any, lean bool) broker.Message {
	var rec *record.Record
	if lean {
		rec = leanRecord(m, id)
	} else {
		rec = ToRecord(m, id, time.Now())
	}
	var parsed any
	if decode != nil {
		parsed = decode(rec)
	}
	return broker.Message{Record: rec, Parsed: parsed, Handle: m}
}

// peekSource is a read that leaves the group's offsets as they are.
type peekSource struct {
	e      *Endpoint
	r      *peekReader
	decode func(*record.Record) any
	mu     sync.Mutex
}

func (s *peekSource) Name() string { return s.e.String() }

func (s *peekSource) Next(ctx context.Context, max int) ([]broker.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, done, err := s.r.next(ctx, max)
	if err != nil {
		return nil, s.e.wrap(err)
	}
	if done {
		return nil, broker.ErrSourceDone
	}
	out := make([]broker.Message, len(ms))
	for i, m := range ms {
		out[i] = s.e.message(m, s.decode)
	}
	return out, nil
}

// Ack on a peek removes nothing (broker.Peek): no offset is committed.
func (s *peekSource) Ack(_ context.Context, msgs []broker.Message) []error {
	return make([]error, len(msgs))
}

// Release gives nothing back: a peek held nothing (reads are free).
func (s *peekSource) Release(context.Context, []broker.Message) error { return nil }

func (s *peekSource) Close(context.Context) error { s.r.close(); return nil }

// TruncatedNote says which partitions the read gave up on before their
// end (empty: none).
func (s *peekSource) TruncatedNote() string {
	if n := len(s.r.stats.Truncated); n > 0 {
		return fmt.Sprintf("%d partition(s) made no progress before their end offset: %v", n, s.r.stats.Truncated)
	}
	return ""
}

// consumeSource reads as a member of the group; Ack commits. Next is
// serialised: one poll at a time, so the rebalance a poll lets through
// never runs between another worker's poll and the records it hands out.
type consumeSource struct {
	e      *Endpoint
	id     string // e.ID(), the records' queue
	c      *Consumer
	decode func(*record.Record) any
	lean   bool
	next   sync.Mutex
	// txn is set once a transactional publisher removes this source's
	// messages (OpenTxnPublisher): Ack then only confirms what its
	// transactions removed, and polls wait for the transaction in flight.
	txn atomic.Pointer[txnPublisher]
	// intents is the run's write-ahead intent log (broker.Intender).
	intents sourceIntents
	// The read-ahead (readahead.go), started by the first Next of a
	// source without a transactional publisher.
	aheadOnce sync.Once
	ahead     atomic.Pointer[readAhead]
}

func (s *consumeSource) Name() string { return s.e.String() }

func (s *consumeSource) Next(ctx context.Context, max int) ([]broker.Message, error) {
	if s.txn.Load() == nil {
		return s.nextAhead(ctx, max)
	}
	return s.poll(ctx, max)
}

// poll reads the next batch (Next without the read-ahead).
func (s *consumeSource) poll(ctx context.Context, max int) ([]broker.Message, error) {
	if s.c.fenced.Load() {
		// A transaction of the run aborted: reading on would only fail
		// every later one.
		return nil, errFenced
	}
	s.next.Lock()
	if t := s.txn.Load(); t != nil {
		// A poll may let a rebalance through, whose revoke commits what is
		// marked handled: never while a transaction has marked records it
		// may still abort.
		t.mu.Lock()
		defer t.mu.Unlock()
	}
	ms, done, err := s.c.Poll(ctx, max)
	s.next.Unlock()
	if err != nil {
		return nil, s.e.wrap(err)
	}
	if done {
		return nil, broker.ErrSourceDone
	}
	out := make([]broker.Message, len(ms))
	if s.lean {
		// A lean poll's records are built together (leanRecords).
		for i, rec := range leanRecords(ms, s.id) {
			out[i] = broker.Message{Record: rec, Handle: ms[i]}
			if s.decode != nil {
				out[i].Parsed = s.decode(rec)
			}
		}
		return out, nil
	}
	for i, m := range ms {
		out[i] = messageAs(m, s.id, s.decode, false)
	}
	return out, nil
}

// Ack records each message as handled and commits: the committed offset
// moves past a partition's contiguous handled records, the commit metadata
// lists those handled past a pending one. A message whose partition moved
// to another process wraps broker.ErrLeaseLost (it will be read again).
func (s *consumeSource) Ack(ctx context.Context, msgs []broker.Message) []error {
	if t := s.txn.Load(); t != nil {
		errs := t.confirm(ctx, msgs)
		for _, err := range errs {
			if err != nil {
				s.markUnclean()
				break
			}
		}
		return errs
	}
	errs := make([]error, len(msgs))
	// Marked under one lock for the batch.
	ms := make([]*Message, 0, len(msgs))
	idx := make([]int, 0, len(msgs))
	for i, bm := range msgs {
		m, ok := bm.Handle.(*Message)
		if !ok {
			errs[i] = errors.New("not a message of this source")
			continue
		}
		ms, idx = append(ms, m), append(idx, i)
	}
	for k, a := range s.c.ackAll(ms, nil) {
		m := ms[k]
		switch {
		case a.err != nil:
			errs[idx[k]] = fmt.Errorf("%s: %w", m.ID(), a.err)
		case !a.ok:
			errs[idx[k]] = fmt.Errorf("%s: its partition moved to another member of group %s before the commit: %w", m.ID(), s.c.group, broker.ErrLeaseLost)
		}
	}
	if err := s.c.Commit(ctx); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = s.e.wrap(err)
			}
		}
	}
	for _, err := range errs {
		if err != nil {
			s.markUnclean()
			break
		}
	}
	return errs
}

// Release leaves the messages pending (the commit never passes them) and
// ends their hold: a revoke of their partition no longer waits for them.
func (s *consumeSource) Release(_ context.Context, msgs []broker.Message) error {
	s.c.Release(handles(msgs))
	return nil
}

// End is the end-of-run check of a consuming read (broker.Ender; the
// engine asks with final set once every worker and acker stopped after
// Next said ErrSourceDone): the run is complete only when every partition
// the group gave this process was read to the end taken at the start and
// the group's commit, read back from the coordinator, covers every record
// the run handled. Records the run accounts for itself (left by a
// selection, failed) are not counted. Records of partitions this process
// holds or held and did not finish are Blocked; records pending in
// partitions another member took are Unknown until two session timeouts
// from now (its run, or the next, reads them). Next never comes back
// empty, so a non-final End has nothing to say.
func (s *consumeSource) End(ctx context.Context, _ broker.RunState, final bool) (broker.EndState, error) {
	if !final {
		return broker.EndState{}, nil
	}
	u, err := s.c.Unfinished(ctx)
	if err != nil {
		// Not confirmed is not complete: reported as an unknown outcome
		// (an engine error would not keep the run from saying complete).
		return broker.EndState{Drained: true, Ordered: true, Unknown: 1, UnknownUntil: time.Now().Add(s.c.session),
			Note: fmt.Sprintf("could not read back group %s's committed offsets at the end of the run (%v), so it cannot say every record was committed past; run the same command again", s.c.group, s.e.wrap(err))}, nil
	}
	st := broker.EndState{Drained: true, Ordered: true}
	if u.Total() == 0 {
		return st, nil
	}
	st.Blocked = int(u.Unread)
	if n := u.Moved + u.LeftToOthers; n > 0 {
		st.Unknown, st.UnknownUntil = int(n), time.Now().Add(2*s.c.session)
	}
	var parts []string
	if u.Unread > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) of partitions this run held were not read or not committed past", u.Unread))
	}
	if u.Moved > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) are pending in partitions that moved to another member of group %s during the run", u.Moved, s.c.group))
	}
	if u.LeftToOthers > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) are pending in partitions other members of group %s held when this run ended", u.LeftToOthers, s.c.group))
	}
	where := s.e.String()
	if len(u.Partitions) > 0 {
		where = fmt.Sprintf("partitions %v of %s", u.Partitions, s.e)
	}
	st.Note = fmt.Sprintf("%s (%s); run the same command again to finish them", strings.Join(parts, "; "), where)
	return st, nil
}

// EndReading: a Kafka read has no receive to cut short.
func (s *consumeSource) EndReading(bool) {}

func (s *consumeSource) Close(ctx context.Context) error {
	s.stopAhead()
	if s.c.fenced.Load() {
		// An aborted transaction's records are marked handled: leave the
		// group without committing (what a kill leaves, minus the wait).
		s.c.abandon()
		s.closeIntents(false)
		return nil
	}
	err := s.c.Close(context.WithoutCancel(ctx))
	s.closeIntents(err == nil)
	return s.e.wrap(err)
}

// publisher produces copies with the idempotent producer.
type publisher struct {
	e *Endpoint
	p *Producer
}

// OpenPublisher opens an idempotent, acks=all producer on the cluster.
func (e *Endpoint) OpenPublisher(context.Context) (broker.Publisher, error) {
	p, err := OpenProducer(e.addr, e.conn, ProducerOptions{})
	if err != nil {
		return nil, e.wrap(err)
	}
	return &publisher{e: e, p: p}, nil
}

// Prepare builds the copy: value byte for byte, key kept (the partitioner
// keeps per-key placement), headers in order minus the dead-letter
// context, plus the dlqctl marker with the replay count.
func (p *publisher) Prepare(rec *record.Record, dest broker.Destination, opt broker.CopyOptions) (broker.Outgoing, string) {
	topic, _ := dest.Target.(string)
	if topic == "" {
		return broker.Outgoing{}, "no destination topic"
	}
	m, err := messageFromRecord(rec)
	if err != nil {
		return broker.Outgoing{}, err.Error()
	}
	if m.Topic == "" {
		m.Topic = rec.Queue
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	// The copy itself is built by Publish, a batch at a time into memory
	// reused from batch to batch (copier): here only its size, the copy's
	// headers being the record's minus the dead-letter ones plus the marker
	// (its JSON: the run id, the orig id, the count and the time, ~60
	// bytes besides the ids).
	size := len(m.Key) + len(m.Value) + len(MarkerHeader) + len(opt.RunID) + len(rec.MessageID) + 64
	for _, h := range m.Headers {
		if !IsFailureHeader(h.Key) {
			size += len(h.Key) + len(h.Value)
		}
	}
	return broker.Outgoing{Size: size, Marked: true, Native: &pendingCopy{m: m, topic: topic, orig: rec.MessageID, runID: opt.RunID, now: now}}, ""
}

// pendingCopy is a copy Prepare decided and Publish builds.
type pendingCopy struct {
	m     *Message
	topic string
	orig  string
	runID string
	now   time.Time
}

// copiers are the copy builders of the publishes under way (a worker's
// batch at a time; the copies are the copier's until Send returned).
var copiers = sync.Pool{New: func() any { return new(copier) }}

// buildCopies turns a batch Prepare built into franz-go records: the
// pending copies of one batch are built together by cp (their marker's
// time is the first one's), entries already records are kept as they are.
func buildCopies(cp *copier, batch []broker.Outgoing) ([]*kgo.Record, error) {
	recs := make([]*kgo.Record, len(batch))
	var msgs []*Message
	var topics, origs []string
	var at []int
	var runID string
	var now time.Time
	for i, o := range batch {
		switch n := o.Native.(type) {
		case *kgo.Record:
			recs[i] = n
		case *pendingCopy:
			if msgs == nil {
				msgs, topics, origs, at = make([]*Message, 0, len(batch)), make([]string, 0, len(batch)), make([]string, 0, len(batch)), make([]int, 0, len(batch))
				runID, now = n.runID, n.now
			}
			msgs, topics, origs, at = append(msgs, n.m), append(topics, n.topic), append(origs, n.orig), append(at, i)
		default:
			return nil, errors.New("kafka: Publish got an entry Prepare did not build")
		}
	}
	if len(msgs) > 0 {
		for k, r := range cp.buildFor(msgs, topics, origs, runID, now) {
			recs[at[k]] = r
		}
	}
	return recs, nil
}

// Publish produces a batch and waits for every acknowledgement (acks=all).
func (p *publisher) Publish(ctx context.Context, dest broker.Destination, batch []broker.Outgoing) ([]broker.Result, error) {
	cp := copiers.Get().(*copier)
	defer copiers.Put(cp)
	recs, err := buildCopies(cp, batch)
	if err != nil {
		return nil, err
	}
	errs := p.p.Send(ctx, recs)
	out := make([]broker.Result, len(batch))
	// The copies' ids share one buffer (a string never changes, so none
	// is written again).
	n := 0
	for _, r := range recs {
		n += len(r.Topic) + 1 + 11 + 1 + 20
	}
	ids := make([]byte, 0, n)
	for i, err := range errs {
		if err == nil {
			start := len(ids)
			ids = appendCopyID(ids, recs[i])
			out[i].ID = unsafe.String(unsafe.SliceData(ids[start:]), len(ids)-start)
			continue
		}
		if certainlyNotWritten(err) {
			out[i].Err = broker.Rejected(p.e.wrap(err))
		} else {
			out[i].Err = p.e.wrap(err)
		}
	}
	return out, nil
}

// copyID is a produced copy's id: TOPIC-PARTITION@OFFSET.
func copyID(r *kgo.Record) string {
	return string(appendCopyID(make([]byte, 0, len(r.Topic)+24), r))
}

// appendCopyID appends r's copyID to b.
func appendCopyID(b []byte, r *kgo.Record) []byte {
	b = append(b, r.Topic...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, '@')
	return strconv.AppendInt(b, r.Offset, 10)
}

// certainlyNotWritten reports errors after which the record is known not
// to be in the log (the broker refused it as a whole).
func certainlyNotWritten(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.InvalidTopicException) || errors.Is(err, kerr.PolicyViolation)
}

func (p *publisher) Close(context.Context) error { p.p.Close(); return nil }

// Target is this topic as a destination (--to, restore); it must exist.
func (e *Endpoint) Target(ctx context.Context) (broker.Destination, error) {
	adm, err := e.Admin()
	if err != nil {
		return broker.Destination{}, e.wrap(err)
	}
	ok, err := TopicExists(ctx, adm, e.addr.Topic)
	if err != nil {
		return broker.Destination{}, e.wrap(err)
	}
	if !ok {
		return broker.Destination{}, fmt.Errorf("destination topic %s does not exist on %s (dlqctl never creates topics): %w", e.addr.Topic, e.ID(), broker.ErrNotFound)
	}
	return broker.Destination{Key: e.addr.Topic, Label: e.ID(), Target: e.addr.Topic}, nil
}

// sourceRouter routes a dead letter to its original topic on the same
// cluster, read from its headers.
type sourceRouter struct {
	e *Endpoint
	r *Router
	// last is the last destination routed to: a DLT's records go to one
	// or a few topics, and a Destination holding its topic is built once.
	last atomic.Pointer[broker.Destination]
}

// RouterToSource routes each record to the topic its headers name.
func (e *Endpoint) RouterToSource(context.Context) (broker.Router, error) {
	adm, err := e.Admin()
	if err != nil {
		return nil, e.wrap(err)
	}
	return &sourceRouter{e: e, r: NewRouter(adm, "")}, nil
}

func (s *sourceRouter) Route(ctx context.Context, rec *record.Record) (broker.Destination, string, error) {
	m, err := messageFromRecord(rec)
	if err != nil {
		return broker.Destination{}, err.Error(), nil
	}
	if m.Topic == "" {
		m.Topic = s.e.addr.Topic
	}
	t, err := s.r.Route(ctx, m)
	if err != nil {
		if errors.Is(err, ErrNoOrigin) {
			return broker.Destination{}, "no original-topic header", nil
		}
		if errors.Is(err, errTopicMissing) {
			return broker.Destination{}, "source topic missing", nil
		}
		return broker.Destination{}, "", s.e.wrap(err)
	}
	// Labelled by the topic: a route back to the source stays on the
	// DLT's cluster.
	if d := s.last.Load(); d != nil && d.Key == t {
		return *d, "", nil
	}
	d := broker.Destination{Key: t, Label: t, Target: t}
	s.last.Store(&d)
	return d, "", nil
}

func (s *sourceRouter) Describe() string {
	// The headers read are listed in docs/kafka.md ("Reading: sample,
	// group, classify"); in a summary line and the runs table the list
	// only got in the way.
	return "source (each record's original topic, from its dead-letter headers)"
}

// Abandon drops a source's connections without committing anything more —
// what a process killed with -9 leaves behind: the group's offsets as of
// the last commit. (The conformance suite's crash; a killed process needs
// no call.)
func Abandon(src broker.Source) {
	switch s := src.(type) {
	case *consumeSource:
		s.c.abandon()
		s.closeIntents(false)
	case *peekSource:
		s.r.close()
	}
}
