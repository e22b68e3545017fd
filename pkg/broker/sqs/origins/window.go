package origins

import (
	"context"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// watch is the DLQ as the endpoint a canary watches, computing its window
// from the origins the copies go to.
type watch struct {
	broker.Endpoint
	r *Resolver
}

// Watch wraps the DLQ's endpoint so a canary's window is computed from
// the origins (broker.CanaryWindower).
func Watch(dlq broker.Endpoint, r *Resolver) broker.Endpoint { return watch{Endpoint: dlq, r: r} }

// CanaryWindow: the longest time a copy that fails again at one of the
// candidate origins needs to come back to the DLQ. Origins whose failures
// go elsewhere are named in the reason.
func (w watch) CanaryWindow(ctx context.Context, dests []broker.Destination) (broker.CanaryWindow, error) {
	var os []*Origin
	for _, d := range dests {
		if o, ok := OriginOf(d); ok {
			os = append(os, o)
		}
	}
	if dests == nil {
		var err error
		if os, err = w.r.Candidates(ctx); err != nil {
			return broker.CanaryWindow{}, err
		}
	}
	return windowOf(os, w.Name()), nil
}

func windowOf(os []*Origin, dlq string) broker.CanaryWindow {
	cw := broker.CanaryWindow{Known: true}
	var back, away []string
	var need time.Duration
	for _, o := range os {
		if o.Returns {
			back = append(back, o.Why)
			need = max(need, o.Need)
		} else if o.Why != "" {
			away = append(away, o.Why)
		}
	}
	if len(back) == 0 {
		cw.Reason = "no origin of " + dlq + " sends its failures back to it"
		if len(away) > 0 {
			cw.Reason += " (" + strings.Join(away, "; ") + ")"
		}
		return cw
	}
	cw.Returns, cw.Need = true, need
	cw.Reason = strings.Join(back, "; ")
	if len(away) > 0 {
		cw.Reason += "; not watched: " + strings.Join(away, "; ")
	}
	return cw
}

// Destinations are the candidates as the engine's destinations.
func Destinations(os []*Origin) []broker.Destination {
	out := make([]broker.Destination, len(os))
	for i, o := range os {
		out[i] = destination(o, ShapeBody)
	}
	return out
}
