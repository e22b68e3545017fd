package redrive

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Share is this process's part of a run that N processes share
// (--rate-share I/N): each takes 1/N of the rate and of every ramp step, so
// the N together keep to the budget the flags name, without a coordinator.
// On a queue SQS itself hands each message to one receiver, so the peers
// split the work between them; an archive is not partitioned by anyone, so
// the I-th of N restores only the records whose message id falls into its
// share (Mine). The zero value (or N = 1) is a run alone.
type Share struct {
	I int `json:"i"`
	N int `json:"n"`
}

// Shared reports whether other processes share the run.
func (s Share) Shared() bool { return s.N > 1 }

// String is "I/N" ("" for a run alone).
func (s Share) String() string {
	if !s.Shared() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Rate is this process's part of a rate budget (0, unlimited, stays 0).
func (s Share) Rate(r float64) float64 {
	if !s.Shared() {
		return r
	}
	return r / float64(s.N)
}

// Ramp is this process's part of every ramp step.
func (s Share) Ramp(steps []float64) []float64 {
	if !s.Shared() || len(steps) == 0 {
		return steps
	}
	out := make([]float64, len(steps))
	for i, r := range steps {
		out[i] = s.Rate(r)
	}
	return out
}

// Mine reports whether a record falls into this process's share of a
// source that nobody partitions (an archive): FNV-1a of its FIFO message
// group — so a group's records all go to one process, in archive order —
// or of its message id, modulo N. Every record falls into exactly one of
// the N shares.
func (s Share) Mine(rec *record.Record) bool {
	if !s.Shared() {
		return true
	}
	key := rec.System.MessageGroupID
	if key == "" {
		key = rec.MessageID
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64()%uint64(s.N)) == s.I-1
}

// SkipOtherShare is the skip reason of an archived record that another
// process of a shared restore sends.
const SkipOtherShare = "another process's share (--rate-share)"

// peerWindow: in a shared run, a message carrying a dlqctl marker written
// at most this long before the run was created (or later) was moved by the
// run or one of its peers during this redrive, and is back: a return. Peers
// are expected to start within this window of each other.
const peerWindow = 5 * time.Minute

// returnedDuring reports whether rec came back to the DLQ during the run
// created at created with id runID: its marker names the run — or, in a
// shared run, any dlqctl run that moved it after the window began (a peer:
// each peer receives about 1/N of all returns, so every one must count the
// peers' returns it sees, not only its own, for the returns guard to read
// the share of the whole redrive).
func returnedDuring(rec *record.Record, runID string, created time.Time, share Share) bool {
	m := rec.Redrive
	if m == nil {
		return false
	}
	if m.RunID == runID {
		return true
	}
	return share.Shared() && !m.At.IsZero() && !m.At.Before(created.Truncate(time.Second).Add(-peerWindow))
}
