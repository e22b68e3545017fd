package kafka

import (
	"context"
	"fmt"
	"sync"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// sourceIntents is a consuming source's intent log (intent.go) as the
// engine drives it (broker.Intender): opened by the first Intend, once the
// consumer joined (it waited for the killed runs' members), closed by the
// source's Close — removed when the run left nothing a later run must be
// told about.
type sourceIntents struct {
	mu     sync.Mutex
	opened bool
	log    *intentLog
	// unclean: a handled record was not committed past (an Ack failed, a
	// commit failed, a transaction aborted): the file stays for the next
	// run.
	unclean bool
}

// Intend records the batch's offsets before its copies are produced
// (broker.Intender). Without a state dir there is no log.
func (s *consumeSource) Intend(runID string, msgs []broker.Message) bool {
	in := &s.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.opened {
		in.opened = true
		in.log = s.openIntents(runID)
	}
	if in.log == nil {
		return false
	}
	if len(msgs) == 0 {
		return true
	}
	// A log that failed (warned) records nothing more: the run's journal
	// takes over.
	in.log.record(handles(msgs))
	return in.log.f != nil
}

// Settle ends the hold on records the run neither acks nor releases
// (broker.HandOverer: skipped, refused): they stay pending, and a revoke
// of their partition no longer waits for them.
func (s *consumeSource) Settle(msgs []broker.Message) { s.c.Release(handles(msgs)) }

// Holding reports, right before msgs are delivered, whether this member
// still holds their partitions as it did when it read them
// (broker.HandOverer): a record held past the revoke's bounded wait went
// with its partition, and its new owner delivers it.
func (s *consumeSource) Holding(msgs []broker.Message) error {
	ms := handles(msgs)
	for i, ok := range s.c.StillHeld(ms) {
		if !ok {
			return fmt.Errorf("%s: its partition moved to another member of group %s while the run held it (past the %s hand-over wait); it was not delivered here: %w", ms[i].ID(), s.c.group, handOverWait, broker.ErrLeaseLost)
		}
	}
	return nil
}

// OnHandOver registers the run's flush, called by a revoke that waits for
// held records (broker.HandOverer).
func (s *consumeSource) OnHandOver(flush func(context.Context)) { s.c.setHandOver(flush) }

// handles are the source's messages of msgs.
func handles(msgs []broker.Message) []*Message {
	ms := make([]*Message, 0, len(msgs))
	for _, bm := range msgs {
		if m, ok := bm.Handle.(*Message); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

// openIntents claims the intent files killed runs of the group left in
// the state dir (clipped to what the group's commit does not cover) and
// opens this run's own.
func (s *consumeSource) openIntents(runID string) *intentLog {
	dir, tell, warn := s.e.members.StateDir, s.e.members.Tell, s.e.members.Warn
	if dir == "" || runID == "" {
		return nil
	}
	var plan *Plan
	if hasDeadIntents(intentDir(dir, s.c.group, s.e.addr.Topic)) {
		p, err := MakePlan(context.Background(), s.c.adm, s.e.addr.Topic, s.c.group)
		if err != nil {
			warnf(warn, "kafka intent log: reading group %s's commit: %v (the killed runs' intents stay for the next run)", s.c.group, err)
			return nil
		}
		plan = p
	}
	l := openIntentLog(dir, s.c.group, s.e.addr.Topic, runID, s.txn.Load() != nil, plan, warn)
	if l != nil && l.prior != nil && tell != nil {
		tell(l.prior.describe())
	}
	return l
}

// PublishedBefore says whether a killed run's intent listed m past the
// group's commit (broker.Intender): this run produced it again.
func (s *consumeSource) PublishedBefore(bm broker.Message) (run string, aborted, ok bool) {
	m, isMsg := bm.Handle.(*Message)
	in := &s.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	if !isMsg || in.log == nil || in.log.prior == nil {
		return "", false, false
	}
	kr, found := in.log.prior.lookup(m.Partition, m.Offset)
	if !found {
		return "", false, false
	}
	in.log.prior.found++
	return kr.ID, kr.Txn, true
}

// markUnclean keeps the intent file for the next run.
func (s *consumeSource) markUnclean() {
	s.intents.mu.Lock()
	s.intents.unclean = true
	s.intents.mu.Unlock()
}

// closeIntents ends the log (clean unless a handled record may not be
// committed past).
func (s *consumeSource) closeIntents(clean bool) {
	in := &s.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	in.log.close(clean && !in.unclean)
	in.log = nil
}
