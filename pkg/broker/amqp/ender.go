package amqp

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// End reports the end of a consuming read (see end.go). Before the
// workers stopped: reading is over when the run has nothing in progress
// and the queue's exact ready count is 0 (or ready messages stop reaching
// this run). Final: what is left — ready messages the run did not read
// (Blocked, with the note), and messages other consumers hold
// unacknowledged (in flight elsewhere: the run is partial and says so).
// In a shared run (--rate-share) what the run's peers hold is theirs and
// only noted; what other applications hold still makes the run partial.
func (s *Source) End(ctx context.Context, run broker.RunState, final bool) (broker.EndState, error) {
	if s.mode != broker.Consume {
		return broker.EndState{Drained: true}, nil
	}
	if !final {
		done, err := s.endCheck(run.Busy)
		return broker.EndState{Drained: done}, err
	}
	r, err := s.endReport(ctx)
	if err != nil {
		return broker.EndState{Drained: true}, err
	}
	st := broker.EndState{Drained: true, Blocked: r.NotRead, Note: r.Note}
	if r.PeersHeld > 0 {
		// A shared run's peers hold them and account for them: noted.
		st.Counts = &broker.CountsNote{InFlight: r.PeersHeld, Note: r.PeersNote}
	}
	if r.HeldElsewhere > 0 {
		// Nobody in the run holds them and they come back only when their
		// consumer lets go: in flight elsewhere, the run is partial.
		st.Unknown, st.UnknownUntil = r.HeldElsewhere, time.Now()
	}
	return st, nil
}

// EndReading cancels the consumer: nothing more is delivered to the run.
func (s *Source) EndReading(bool) { s.stopReading() }
