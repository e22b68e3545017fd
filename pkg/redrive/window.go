package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Window is how long a canary watches, and how that was decided: the same
// rules on every broker (DecideWindow).
type Window struct {
	// For is the watch; never 0.
	For time.Duration
	// Reason is the derivation in one line (the verdict's window_reason).
	Reason string
	// Computed is true when For is the broker's computed window (or the
	// default it stated), false when it is --verify-for.
	Computed bool
	// Warning, when set, says that --verify-for is shorter than a failing
	// message needs to come back: a PASS proves less.
	Warning string
}

// DecideWindow decides a canary's watch of the dead-letter queue watch for
// copies sent to dests (nil: back to where they came from). The broker
// computes how long a failing message needs to come back
// (broker.CanaryWindower); then, on every broker:
//
//   - --verify-for given (given true): it is kept; shorter than the
//     computed need, a Warning says a PASS proves less;
//   - not given, the need is known: the watch is that time;
//   - not given, the broker knows that no destination dead-letters into
//     watch: broker.DefaultCanaryWindow, with that reason;
//   - not given and the broker cannot know: bad input (exit 2, before
//     anything moved) asking for --verify-for. A canary never watches 0 s.
func DecideWindow(ctx context.Context, watch broker.Endpoint, dests []broker.Destination, verifyFor time.Duration, given bool) (Window, error) {
	cw := broker.CanaryWindow{Reason: fmt.Sprintf("%s cannot tell how long a failing message takes to come back to %s", watch.Capabilities().Label, watch.Name())}
	var cerr error
	if w, ok := watch.(broker.CanaryWindower); ok {
		cw, cerr = w.CanaryWindow(ctx, dests)
	}
	if given {
		if verifyFor <= 0 {
			return Window{}, errs.BadInputf("--verify-for must be at least 1s (got %s)", verifyFor)
		}
		w := Window{For: verifyFor, Reason: "--verify-for " + verifyFor.String()}
		if cerr == nil && cw.Known && cw.Returns && verifyFor < cw.Need {
			w.Warning = fmt.Sprintf("--verify-for %s is shorter than a failing message needs to come back to %s (%s = %s): a PASS proves less", verifyFor, watch.Name(), cw.Reason, cw.Need.Round(time.Second))
			w.Reason += fmt.Sprintf(", shorter than the %s a failing message needs (%s)", cw.Need.Round(time.Second), cw.Reason)
		}
		return w, nil
	}
	if cerr != nil {
		return Window{}, fmt.Errorf("computing how long the canary watches %s (pass --verify-for to set it): %w", watch.Name(), cerr)
	}
	switch {
	case !cw.Known:
		return Window{}, errs.BadInputf("--canary needs --verify-for on %s: %s; pass --verify-for DURATION (how long its consumer takes to fail a message and dead-letter it, plus a margin)", watch.Name(), cw.Reason)
	case !cw.Returns:
		return Window{For: broker.DefaultCanaryWindow, Computed: true,
			Reason: fmt.Sprintf("%s: the default %s", cw.Reason, broker.DefaultCanaryWindow)}, nil
	}
	return Window{For: cw.Need, Computed: true, Reason: cw.Reason}, nil
}

// DecideCanary prepares a canary before anything moves, for redrive and
// restore alike: it decides the window (DecideWindow), says it (warn: a
// --verify-for shorter than the need; info: a computed window) and reads
// each destination's depth where destDepth counts one (nil: none), the
// baseline --verify-drain compares with. A destination whose depth could
// not be read has no baseline.
func DecideCanary(ctx context.Context, watch broker.Endpoint, dests []broker.Destination, destDepth func(context.Context, broker.Destination) (broker.Depth, error),
	verifyFor time.Duration, given bool, info, warn func(format string, a ...any)) (Window, map[string]int, error) {
	window, err := DecideWindow(ctx, watch, dests, verifyFor, given)
	if err != nil {
		return Window{}, nil, err
	}
	if window.Warning != "" {
		warn("%s", window.Warning)
	}
	if window.Computed {
		info("canary: watching %s for %s (%s); pass --verify-for to change it", watch.Name(), window.For.Round(time.Second), window.Reason)
	}
	baseline := map[string]int{}
	for _, d := range dests {
		if destDepth == nil {
			break
		}
		if n, err := destDepth(ctx, d); err == nil {
			baseline[d.Key] = int(n.Ready + n.Held + n.Delayed)
		}
	}
	return window, baseline, nil
}

// Verify is the window as the canary's watch options (For and Reason).
func (w Window) Verify(v VerifyOptions) VerifyOptions {
	v.For, v.Reason = w.For, w.Reason
	return v
}
