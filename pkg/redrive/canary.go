package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// VerifyOptions control how a canary is watched.
type VerifyOptions struct {
	// For is how long to watch (DecideWindow; 0: broker.DefaultCanaryWindow).
	For time.Duration
	// Reason says how For was derived (the verdict's window_reason).
	Reason string
	// Poll is how often the DLQ depth is checked (default 5s).
	Poll time.Duration
	// Drain also requires the destinations to consume the canary: at the
	// end each destination's visible + in-flight depth must be back to (or
	// below) its depth before the canary was sent.
	Drain bool
	// Baseline is each destination's depth (by Destination.Key) before the
	// canary.
	Baseline map[string]int
	// Visibility is the hold time of the scan that looks for returns.
	Visibility time.Duration
	// SeenReturned are the DLQ message ids of the run's messages the mover
	// itself already found back (Result.ReturnedIDs); they count as returns.
	SeenReturned []string
	// OnTick, when set, is called after every poll with the time left.
	OnTick func(left time.Duration)
	// AlreadyThere, when set, says whether a record was in the DLQ before
	// the run moved anything (broker.PositionMarker): one with a copy's
	// body is then an older duplicate, not a return.
	AlreadyThere func(*record.Record) bool
}

// Verdict is the canary's outcome.
type Verdict struct {
	Pass           bool           `json:"pass"`
	Moved          int            `json:"moved"`
	Returned       int            `json:"returned"`
	ReturnedIDs    []string       `json:"returned_ids,omitempty"`
	Drained        *bool          `json:"drained,omitempty"`
	DestDepth      map[string]int `json:"destination_depth,omitempty"`
	WatchedSeconds float64        `json:"watched_seconds"`
	// WindowSeconds is the watch the canary was given and WindowReason
	// how it was derived (DecideWindow).
	WindowSeconds float64 `json:"window_seconds"`
	WindowReason  string  `json:"window_reason"`
	Detail        string  `json:"detail"`
	// Transformed: the canary moved repaired copies (--transform).
	Transformed bool `json:"transformed,omitempty"`
}

func total(d broker.Depth) int { return int(d.Ready + d.Held + d.Delayed) }

// canarySkew is how far a broker's clock may be behind this host's when a
// canary compares send times: AWS refuses requests signed more than 15
// minutes off its own time.
const canarySkew = 15 * time.Minute

// VerifyCanary watches a canary run: it fails as soon as one of the run's
// messages is found back in the DLQ (by its redrive marker, or by a body
// the journal recorded as sent on a message that is not one of the run's
// originals nor, where the broker stamps send times or keeps positions,
// older than the run),
// and passes when none came back within
// opt.For (and, with Drain, the destinations consumed them). The DLQ is
// scanned (without consuming it) when its depth grows above the level after
// the canary left, and once more at the end.
func VerifyCanary(ctx context.Context, dlq broker.Endpoint, j *Journal, moved int, dests []broker.Destination, destDepth func(context.Context, broker.Destination) (broker.Depth, error), opt VerifyOptions) (*Verdict, error) {
	if opt.For <= 0 {
		opt.For, opt.Reason = broker.DefaultCanaryWindow, "the default "+broker.DefaultCanaryWindow.String()
	}
	if opt.Poll <= 0 {
		opt.Poll = 5 * time.Second
	}
	runID := j.Meta().ID
	// A copy that lost its marker was sent by this run; where the broker
	// stamps each message's send time, one sent before the run (less the
	// clock skew AWS's request signing tolerates) is an older message
	// with the same body (a duplicate the DLQ already held), not a return.
	var sentSince time.Time
	if dlq.Capabilities().SentAtByBroker && !j.Meta().Created.IsZero() {
		sentSince = j.Meta().Created.Add(-canarySkew)
	}
	v := &Verdict{Moved: moved, WindowSeconds: opt.For.Seconds(), WindowReason: opt.Reason}
	start := time.Now()
	cur, err := dlq.Depth(ctx)
	if err != nil {
		return nil, err
	}
	base := total(cur)
	seen := map[string]bool{}
	for _, id := range opt.SeenReturned {
		if !seen[id] {
			seen[id] = true
			v.Returned++
			if len(v.ReturnedIDs) < 20 {
				v.ReturnedIDs = append(v.ReturnedIDs, id)
			}
		}
	}
	scan := func() error {
		_, err := inspect.Scan(ctx, dlq, inspect.ScanOptions{Visibility: opt.Visibility}, func(m *record.Record, _ any) error {
			mine := m.Redrive != nil && m.Redrive.RunID == runID
			if !mine && j.HasBody(m.BodySHA256) {
				// A body the run sent, without the run's marker: a copy
				// that lost it, unless the message is one of the run's
				// originals itself (its id: still in the DLQ because a
				// restore's archive was made without --delete, or its
				// removal failed). A copy has an id of its own.
				_, original := j.WasSent(m.MessageID)
				older := !sentSince.IsZero() && !m.System.SentAt.IsZero() && m.System.SentAt.Before(sentSince) ||
					opt.AlreadyThere != nil && opt.AlreadyThere(m)
				mine = !original && !older
			}
			if mine && !seen[m.MessageID] {
				seen[m.MessageID] = true
				v.Returned++
				if len(v.ReturnedIDs) < 20 {
					v.ReturnedIDs = append(v.ReturnedIDs, m.MessageID)
				}
			}
			return nil
		})
		return err
	}
	deadline := start.Add(opt.For)
	if v.Returned > 0 {
		deadline = start // already failed: no need to watch
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		t := time.NewTimer(min(opt.Poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if cur, err = dlq.Depth(ctx); err != nil {
			return nil, err
		}
		if d := total(cur); d > base {
			base = d
			if err := scan(); err != nil {
				return nil, err
			}
			if v.Returned > 0 {
				break
			}
		}
		if opt.OnTick != nil {
			opt.OnTick(max(time.Until(deadline), 0))
		}
	}
	if v.Returned == 0 {
		// Returns may have arrived before the watch began (the depth then
		// never grows): one full scan settles it.
		if err := scan(); err != nil {
			return nil, err
		}
	}
	v.WatchedSeconds = time.Since(start).Seconds()
	v.Pass = v.Returned == 0
	if opt.Drain && v.Pass {
		drained := true
		v.DestDepth = map[string]int{}
		for _, q := range dests {
			dp, err := destDepth(ctx, q)
			if err != nil {
				return nil, err
			}
			d := total(dp)
			v.DestDepth[q.Label] = d
			if d > opt.Baseline[q.Key] {
				drained = false
			}
		}
		v.Drained = &drained
		v.Pass = drained
	}
	switch {
	case v.Returned > 0:
		v.Detail = fmt.Sprintf("%d of %d canary message(s) came back to %s within %s", v.Returned, moved, dlq.Name(), time.Duration(v.WatchedSeconds*float64(time.Second)).Round(time.Second))
	case v.Drained != nil && !*v.Drained:
		v.Detail = fmt.Sprintf("none of %d canary message(s) came back, but the destination did not consume them within %s", moved, opt.For)
	default:
		v.Detail = fmt.Sprintf("none of %d canary message(s) came back to %s within %s", moved, dlq.Name(), opt.For)
		if opt.Reason != "" {
			v.Detail += " (window: " + opt.Reason + ")"
		}
	}
	return v, nil
}
