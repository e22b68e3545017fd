package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrTopicNotFound is returned when a topic does not exist.
var ErrTopicNotFound = errors.New("topic not found")

// Fetch bounds of every reader (consumer and peek).
const (
	fetchMaxBytes          = 1 << 20
	fetchMaxPartitionBytes = 512 << 10
	// fetchMaxWait is how long the broker may hold a fetch for records.
	fetchMaxWait = 500 * time.Millisecond
)

// NoFetchSessions is the option every dlqctl reader takes: no incremental
// fetch sessions (KIP-227). They save request bytes for consumers of many
// partitions that live for hours; a dlqctl read is one topic for one
// command. And franz-go (v1.22.3) closes a client by reading each fetch
// session's id while a fetch its own metadata refresh just started may be
// writing it (a data race the race detector caught in CI, ci64: Client.Close
// against fetchSession.bumpEpoch); without sessions the id is never
// written.
func NoFetchSessions() kgo.Opt { return kgo.DisableFetchSessions() }

// PartitionRange is what a run reads of one partition: from Start (the
// group's committed offset, or the log start when nothing is committed or
// the committed records have expired) up to End, the last stable offset
// taken when the run starts (the high watermark for read_committed). End −
// Start is an upper bound of the records: offsets in between may be
// transaction markers or aborted records.
type PartitionRange struct {
	Partition int32 `json:"partition"`
	LogStart  int64 `json:"log_start"`
	Committed int64 `json:"committed"` // -1: the group has no commit
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
	// HandledAbove counts records past Start a previous run already
	// handled (listed in the commit metadata).
	HandledAbove int64 `json:"handled_above,omitempty"`
	// Expired counts committed-but-unread records retention deleted
	// (the commit lies below the log start).
	Expired int64 `json:"expired,omitempty"`
}

// Pending is the upper bound of records left to handle.
func (r PartitionRange) Pending() int64 {
	n := r.End - r.Start - r.HandledAbove
	if n < 0 {
		return 0
	}
	return n
}

// Plan is a topic's read plan for one group: the ranges per partition and
// the journal read back from the group's commits.
type Plan struct {
	Topic      string
	TopicID    [16]byte
	Group      string
	Partitions []PartitionRange
	Journals   map[int32]*PartitionJournal
	TakenAt    time.Time
}

// Pending is the upper bound of records left on the topic for the group.
func (p *Plan) Pending() int64 {
	var n int64
	for _, r := range p.Partitions {
		n += r.Pending()
	}
	return n
}

// MakePlan reads the topic's offsets and the group's commits.
func MakePlan(ctx context.Context, adm *kadm.Client, topic, group string) (*Plan, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	t, ok := td[topic]
	if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("%w: %s", ErrTopicNotFound, topic)
	}
	if t.Err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, t.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("start offsets of %s: %w", topic, err)
	}
	// ListCommittedOffsets lists the last stable offsets (read_committed ends).
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var commits kadm.OffsetResponses
	if group != "" {
		commits, err = fetchCommits(ctx, adm, group, topic)
		if err != nil {
			return nil, fmt.Errorf("committed offsets of group %s: %w", group, err)
		}
	}
	p := &Plan{Topic: topic, TopicID: t.ID, Group: group, Journals: map[int32]*PartitionJournal{}, TakenAt: time.Now()}
	for _, part := range t.Partitions.Sorted() {
		r := PartitionRange{Partition: part.Partition, Committed: -1}
		s, ok := starts.Lookup(topic, part.Partition)
		if !ok || s.Err != nil {
			return nil, fmt.Errorf("start offset of %s partition %d: %v", topic, part.Partition, errOr(s.Err, "missing"))
		}
		e, ok := ends.Lookup(topic, part.Partition)
		if !ok || e.Err != nil {
			return nil, fmt.Errorf("end offset of %s partition %d: %v", topic, part.Partition, errOr(e.Err, "missing"))
		}
		r.LogStart, r.End = s.Offset, e.Offset
		r.Start = r.LogStart
		md := ""
		if c, ok := commits.Lookup(topic, part.Partition); ok && c.Err == nil && c.At >= 0 {
			r.Committed, md = c.At, c.Metadata
			if c.At > r.Start {
				r.Start = c.At
			} else if c.At < r.LogStart {
				r.Expired = r.LogStart - c.At
			}
		}
		if r.Start > r.End {
			r.Start = r.End
		}
		j := NewPartitionJournal(r.Start, md)
		if r.Committed >= 0 && r.Committed < r.Start {
			// Commit below the log start: nothing listed can still be read
			// except what lies above it.
			j = NewPartitionJournal(r.Committed, md)
			for o := r.Committed; o < r.Start; o++ {
				_ = j.Mark(o)
			}
		}
		for _, sp := range j.done {
			lo, hi := max(sp.from, r.Start), min(sp.to, r.End)
			if hi > lo {
				r.HandledAbove += hi - lo
			}
		}
		p.Journals[part.Partition] = j
		p.Partitions = append(p.Partitions, r)
	}
	sort.Slice(p.Partitions, func(i, k int) bool { return p.Partitions[i].Partition < p.Partitions[k].Partition })
	return p, nil
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}

// PeekOptions bound a peek.
type PeekOptions struct {
	// Limit stops after this many records (0: read to the ends).
	Limit int
	// Idle is how long a partition may make no progress before the read
	// gives up on it (0: 15 s).
	Idle time.Duration
}

// PeekStats says what a peek saw.
type PeekStats struct {
	Records   int     // records passed to fn
	Skipped   int     // records a previous run handled (listed in the commit metadata)
	Markers   int     // transaction control records passed over
	Truncated []int32 // partitions that made no progress for Idle before their end
}

// peekReader reads a plan's ranges with read_committed, in offset order
// per partition, joining no group and committing nothing.
type peekReader struct {
	plan  *Plan
	cl    *kgo.Client
	pos   map[int32]int64
	end   map[int32]int64
	idle  time.Duration
	last  time.Time
	stats PeekStats
	buf   []*Message
}

func newPeekReader(addr Address, conn Conn, plan *Plan, idle time.Duration) (*peekReader, error) {
	if idle <= 0 {
		idle = 15 * time.Second
	}
	r := &peekReader{plan: plan, pos: map[int32]int64{}, end: map[int32]int64{}, idle: idle, last: time.Now()}
	starts := map[int32]kgo.Offset{}
	for _, pr := range plan.Partitions {
		if pr.Start < pr.End {
			starts[pr.Partition] = kgo.NewOffset().At(pr.Start)
			r.pos[pr.Partition] = pr.Start
			r.end[pr.Partition] = pr.End
		}
	}
	if len(starts) == 0 {
		return r, nil
	}
	cl, err := NewClient(addr, conn,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{plan.Topic: starts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(fetchMaxWait),
		// Bound what franz-go buffers ahead of the run (its default
		// fetch is 50 MiB): memory stays flat however large the topic.
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchMaxPartitionBytes),
		// No incremental fetch sessions (KIP-227): see NoFetchSessions.
		NoFetchSessions(),
	)
	if err != nil {
		return nil, err
	}
	r.cl = cl
	return r, nil
}

func (r *peekReader) close() {
	if r.cl != nil {
		r.cl.Close()
	}
}

// next returns up to max pending records; done when every partition
// reached its end (or made no progress for idle: stats.Truncated).
func (r *peekReader) next(ctx context.Context, max int) (out []*Message, done bool, err error) {
	for len(r.buf) == 0 {
		if len(r.end) == 0 {
			return nil, true, nil
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := r.cl.PollRecords(pctx, 10000)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("fetching %s partition %d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return nil, false, ferr
		}
		progressed := false
		fs.EachRecord(func(rec *kgo.Record) {
			e, live := r.end[rec.Partition]
			if !live || rec.Offset >= e || rec.Offset < r.pos[rec.Partition] {
				return
			}
			progressed = true
			r.pos[rec.Partition] = rec.Offset + 1
			if rec.Offset+1 >= e {
				delete(r.end, rec.Partition)
			}
			if rec.Attrs.IsControl() {
				r.stats.Markers++
				return
			}
			if j := r.plan.Journals[rec.Partition]; j != nil && j.Handled(rec.Offset) {
				r.stats.Skipped++
				return
			}
			r.buf = append(r.buf, fromKgo(rec))
		})
		if progressed {
			r.last = time.Now()
		} else if time.Since(r.last) > r.idle {
			for p := range r.end {
				r.stats.Truncated = append(r.stats.Truncated, p)
			}
			sort.Slice(r.stats.Truncated, func(i, k int) bool { return r.stats.Truncated[i] < r.stats.Truncated[k] })
			r.end = map[int32]int64{}
		}
	}
	n := min(max, len(r.buf))
	if max <= 0 {
		n = len(r.buf)
	}
	out = r.buf[:n:n]
	r.buf = r.buf[n:]
	r.stats.Records += len(out)
	return out, false, nil
}

// Peek reads the plan's ranges with read_committed and passes each pending
// record to fn in offset order per partition (partitions interleave). It
// joins no group and commits nothing. fn returning a non-nil error stops
// the read with that error.
func Peek(ctx context.Context, addr Address, conn Conn, plan *Plan, opt PeekOptions, fn func(*Message) error) (PeekStats, error) {
	r, err := newPeekReader(addr, conn, plan, opt.Idle)
	if err != nil {
		return PeekStats{}, err
	}
	defer r.close()
	seen := 0
	for {
		batch, done, err := r.next(ctx, 0)
		if err != nil || done {
			r.stats.Records = seen
			return r.stats, err
		}
		for _, m := range batch {
			if err := fn(m); err != nil {
				r.stats.Records = seen + 1
				return r.stats, err
			}
			seen++
			if opt.Limit > 0 && seen >= opt.Limit {
				r.stats.Records = seen
				return r.stats, nil
			}
		}
	}
}

// fetchCommits reads a group's commits for topic. A group that never
// committed is not an error: Kafka answers -1 per partition, kfake answers
// GROUP_ID_NOT_FOUND (docs/emulators.md); both mean "nothing committed".
func fetchCommits(ctx context.Context, adm *kadm.Client, group, topic string) (kadm.OffsetResponses, error) {
	commits, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return kadm.OffsetResponses{}, nil
	}
	return commits, err
}
