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

// Peek reads the plan's ranges with read_committed and passes each pending
// record to fn in offset order per partition (partitions interleave). It
// joins no group and commits nothing. fn returning a non-nil error stops
// the read with that error.
func Peek(ctx context.Context, addr Address, conn Conn, plan *Plan, opt PeekOptions, fn func(*Message) error) (PeekStats, error) {
	var st PeekStats
	idle := opt.Idle
	if idle <= 0 {
		idle = 15 * time.Second
	}
	starts := map[int32]kgo.Offset{}
	pos := map[int32]int64{}
	end := map[int32]int64{}
	for _, r := range plan.Partitions {
		if r.Start < r.End {
			starts[r.Partition] = kgo.NewOffset().At(r.Start)
			pos[r.Partition] = r.Start
			end[r.Partition] = r.End
		}
	}
	if len(starts) == 0 {
		return st, nil
	}
	cl, err := NewClient(addr, conn,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{plan.Topic: starts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	last := time.Now()
	for len(end) > 0 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pctx, 10000)
		cancel()
		if err := ctx.Err(); err != nil {
			return st, err
		}
		progressed := false
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("fetching %s partition %d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return st, ferr
		}
		var stop error
		fs.EachRecord(func(r *kgo.Record) {
			if stop != nil {
				return
			}
			e, live := end[r.Partition]
			if !live || r.Offset >= e {
				return
			}
			progressed = true
			pos[r.Partition] = r.Offset + 1
			if r.Offset+1 >= e {
				delete(end, r.Partition)
			}
			if r.Attrs.IsControl() {
				st.Markers++
				return
			}
			if j := plan.Journals[r.Partition]; j != nil && j.Handled(r.Offset) {
				st.Skipped++
				return
			}
			st.Records++
			if err := fn(fromKgo(r)); err != nil {
				stop = err
				return
			}
			if opt.Limit > 0 && st.Records >= opt.Limit {
				stop = errLimit
			}
		})
		if errors.Is(stop, errLimit) {
			return st, nil
		}
		if stop != nil {
			return st, stop
		}
		if progressed {
			last = time.Now()
			continue
		}
		if time.Since(last) > idle {
			for p := range end {
				st.Truncated = append(st.Truncated, p)
			}
			sort.Slice(st.Truncated, func(i, k int) bool { return st.Truncated[i] < st.Truncated[k] })
			return st, nil
		}
	}
	return st, nil
}

var errLimit = errors.New("limit reached")

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
