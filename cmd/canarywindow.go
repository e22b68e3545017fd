package cmd

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// canaryWindow decides how long the canary watches watch (the DLQ copies
// come back to) for copies sent to dests (nil: back to their sources), by
// the rules every broker shares (redrive.DecideWindow): --verify-for when
// given, with a warning when it is shorter than a failing message needs to
// come back; else the window the broker computes, stated on stderr; a
// broker that cannot know refuses --canary without --verify-for (exit 2,
// nothing moved). The flag has no default of its own, so --help shows one
// truth: the computed window.
func (c *CanaryFlags) canaryWindow(ctx context.Context, f *Factory, watch broker.Endpoint, dests []broker.Destination) (redrive.Window, error) {
	w, err := redrive.DecideWindow(ctx, watch, dests, c.VerifyFor, c.verifySet != nil && c.verifySet())
	if err != nil {
		return w, err
	}
	if w.Warning != "" {
		f.IO.Warnf("%s", w.Warning)
	}
	if w.Computed {
		f.IO.Infof("canary: watching %s for %s (%s); pass --verify-for to change it", watch.Name(), w.For.Round(time.Second), w.Reason)
	}
	return w, nil
}
