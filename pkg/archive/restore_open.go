package archive

import (
	"context"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RestoreTarget is where a restore sends an archive run, found and
// checked before anything is sent.
type RestoreTarget struct {
	// Dest is the destination the copies are published to.
	Dest broker.Destination
	// Watch is the queue the destination dead-letters to, watched by a
	// canary (nil without one); the caller closes it.
	Watch broker.Endpoint
}

// RestoreHooks are how OpenRestore reports outside the package.
type RestoreHooks struct {
	Warnf func(format string, a ...any)
	Infof func(format string, a ...any)
}

// OpenRestore finds the destination of a restore of run (manifest m) to
// ep and, with a canary, the queue it dead-letters to; then verifies
// every part of the archive and refuses to send anything from one that
// fails verification (exit 3).
func OpenRestore(ctx context.Context, ep broker.Endpoint, run Ref, m *Manifest, canary bool, h RestoreHooks) (*RestoreTarget, error) {
	caps := ep.Capabilities()
	dest, err := ep.Target(ctx)
	if err != nil {
		return nil, OpenErr(err)
	}
	t := &RestoreTarget{Dest: dest}
	// A canary watches the queue the destination dead-letters to, found
	// before anything is verified or sent: a destination without one (or
	// whose failures are dropped) is refused, since a canary there could
	// only pass. (The refusal table keeps --canary to brokers whose
	// destinations name one.)
	if canary {
		dw, ok := ep.(broker.DeadLetterWatcher)
		if !ok {
			return nil, errs.BadInputf("--canary watches the destination's dead-letter queue, and %s names none; restore a first part with --max N, then the rest", ep.Name())
		}
		if t.Watch, err = dw.DeadLetterEndpoint(ctx); err != nil {
			return nil, err
		}
	}
	if caps.Ordering == broker.OrderGroupLock && !m.Queue.FIFO {
		h.Warnf("%s is FIFO but the archive of %s is not: records without a message group will be skipped", ep.Name(), m.Queue.Name)
	}
	// Re-read every part of the archive; refuse to send anything from an
	// archive that fails verification.
	h.Infof("verifying %s (%d part(s), %d record(s)) before sending anything", run.Name(), len(m.Parts), m.Records())
	rep, err := VerifyArchive(ctx, run, nil)
	if err == nil && !rep.OK {
		err = errs.Verdictf("the archive failed verification, nothing was sent: %s", strings.Join(rep.AllProblems(), "; "))
	}
	if err != nil {
		if t.Watch != nil {
			broker.CloseEndpoint(t.Watch)
		}
		return nil, err
	}
	return t, nil
}

// PlanRestore runs every record of run (manifest m) through p, the plan
// of a restore's --dry-run, handing each decision to onEvent.
func PlanRestore(ctx context.Context, run Ref, m *Manifest, p *redrive.Planner, onEvent func(redrive.MessageEvent)) error {
	return ForEachManifestRecord(ctx, run.Src, m, func(_ int, rec *record.Record, parsed any) error {
		ev, err := p.Add(ctx, rec, parsed)
		if err != nil {
			return err
		}
		onEvent(ev)
		return nil
	})
}
