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
// unacknowledged (in flight elsewhere: the run is partial and says so; in
// a shared run, --rate-share, they are the peers' and only noted).
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
	switch {
	case r.HeldElsewhere > 0 && s.opt.Share.N > 1:
		st.Counts = &broker.CountsNote{InFlight: r.HeldElsewhere, Note: r.HeldNote}
		st.Note = ""
		if r.NotRead > 0 {
			st.Note = r.NotReadNote
		}
	case r.HeldElsewhere > 0:
		// Nobody in this run holds them and they come back only when
		// their consumer lets go: reported as in flight elsewhere.
		st.Unknown, st.UnknownUntil = r.HeldElsewhere, time.Now()
	}
	return st, nil
}

// EndReading cancels the consumer: nothing more is delivered to the run.
func (s *Source) EndReading(bool) { s.stopReading() }
