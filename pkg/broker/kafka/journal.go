package kafka

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"sort"
	"strings"
)

// The consumer group's committed offsets are dlqctl's journal on a topic.
// Per partition:
//
//   - the committed offset C is the first record not yet handled: every
//     record below it was produced and acknowledged, archived and
//     verified, or explicitly discarded;
//   - records handled beyond C (a selection left a record at C pending,
//     and handled later ones) are listed in the commit's metadata, so no
//     later run sends them twice.
//
// The metadata is "dlqctl1:" + base64url of unsigned varints: for each
// handled range, its distance from the end of the previous range (C for
// the first) and its length. Kafka bounds commit metadata
// (offset.metadata.max.bytes, 4096 by default); a partition whose list
// would outgrow MaxMetadataBytes takes no more out-of-order records (they
// stay pending, and the run says so) until the pending record before them
// is handled.

// MaxMetadataBytes bounds the commit metadata dlqctl writes.
const MaxMetadataBytes = 3800

const metadataPrefix = "dlqctl1:"

// ErrJournalFull is returned by Mark when a partition's list of records
// handled past a pending one cannot grow within MaxMetadataBytes.
var ErrJournalFull = errors.New("too many records handled past a pending one for the commit metadata to list")

// span is a half-open offset range [from, to).
type span struct{ from, to int64 }

// PartitionJournal is the journal of one partition.
type PartitionJournal struct {
	committed int64  // C: first offset not handled
	done      []span // handled ranges above C: sorted, disjoint, non-adjacent, all > C
}

// NewPartitionJournal starts a journal at a committed offset and its
// metadata (from a previous run; unknown metadata is ignored: a commit
// written by another tool lists nothing past C).
func NewPartitionJournal(committed int64, metadata string) *PartitionJournal {
	j := &PartitionJournal{committed: committed}
	j.done = decodeSpans(committed, metadata)
	return j
}

// Committed is the offset the group has (or will have) committed.
func (j *PartitionJournal) Committed() int64 { return j.committed }

// Handled reports whether the record at offset is already handled.
func (j *PartitionJournal) Handled(offset int64) bool {
	if offset < j.committed {
		return true
	}
	i := sort.Search(len(j.done), func(i int) bool { return j.done[i].to > offset })
	return i < len(j.done) && j.done[i].from <= offset
}

// HandledAbove counts the records listed as handled past the committed
// offset.
func (j *PartitionJournal) HandledAbove() int64 {
	var n int64
	for _, s := range j.done {
		n += s.to - s.from
	}
	return n
}

// Mark records offset as handled. ErrJournalFull means the record was not
// recorded and must be treated as not handled (it stays pending).
func (j *PartitionJournal) Mark(offset int64) error {
	if j.Handled(offset) {
		return nil
	}
	if offset == j.committed {
		j.committed++
		j.compact()
		return nil
	}
	i := sort.Search(len(j.done), func(i int) bool { return j.done[i].to >= offset })
	switch {
	case i < len(j.done) && j.done[i].to == offset: // extends span i upward
		j.done[i].to++
		if i+1 < len(j.done) && j.done[i+1].from == j.done[i].to {
			j.done[i].to = j.done[i+1].to
			j.done = append(j.done[:i+1], j.done[i+2:]...)
		}
	case i < len(j.done) && j.done[i].from == offset+1: // extends span i downward
		j.done[i].from--
	default:
		ns := append(append(append(make([]span, 0, len(j.done)+1), j.done[:i]...), span{offset, offset + 1}), j.done[i:]...)
		if len(ns) > 64 && len(encodeSpans(j.committed, ns)) > MaxMetadataBytes {
			return ErrJournalFull
		}
		j.done = ns
	}
	return nil
}

// compact folds handled spans that now touch the committed offset into it.
func (j *PartitionJournal) compact() {
	for len(j.done) > 0 && j.done[0].from <= j.committed {
		if j.done[0].to > j.committed {
			j.committed = j.done[0].to
		}
		j.done = j.done[1:]
	}
}

// Metadata is the commit metadata for the current state ("" when nothing
// is handled past the committed offset).
func (j *PartitionJournal) Metadata() string { return encodeSpans(j.committed, j.done) }

func encodeSpans(base int64, spans []span) string {
	if len(spans) == 0 {
		return ""
	}
	buf := make([]byte, 0, len(spans)*4)
	prev := base
	for _, s := range spans {
		buf = binary.AppendUvarint(buf, uint64(s.from-prev))
		buf = binary.AppendUvarint(buf, uint64(s.to-s.from))
		prev = s.to
	}
	return metadataPrefix + base64.RawURLEncoding.EncodeToString(buf)
}

func decodeSpans(base int64, md string) []span {
	rest, ok := strings.CutPrefix(md, metadataPrefix)
	if !ok {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil
	}
	var out []span
	prev := base
	for len(raw) > 0 {
		gap, n := binary.Uvarint(raw)
		if n <= 0 {
			return nil
		}
		raw = raw[n:]
		length, m := binary.Uvarint(raw)
		if m <= 0 || length == 0 {
			return nil
		}
		raw = raw[m:]
		from := prev + int64(gap)
		if from < prev || (len(out) > 0 && gap == 0) {
			return nil
		}
		s := span{from, from + int64(length)}
		out = append(out, s)
		prev = s.to
	}
	return out
}
