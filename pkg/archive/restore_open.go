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
	// ToSource: each copy goes back to the queue its original was
	// dead-lettered from (restore --to source), through the endpoint of
	// the archived DLQ (the request's To), which a canary watches; Dests
	// are those queues where the broker lists them (a canary's
	// destinations; nil: the broker's window alone).
	ToSource bool
	Dests    []broker.Destination
	// Sources counts the archive's records by the queue they were
	// dead-lettered from (read by the verification).
	Sources map[string]int
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
	dest, err := ep.Target(ctx)
	if err != nil {
		return nil, OpenErr(err)
	}
	return openRestore(ctx, ep, &RestoreTarget{Dest: dest}, run, m, canary, h)
}

// OpenRestoreToSource is OpenRestore for restore --to source: dlq is the
// endpoint of the queue the archive was read from (m.Queue), the copies
// go back to the queues its messages were dead-lettered from (route: the
// DLQ's redrive --to source, its CanaryDests as the broker lists them),
// and a canary watches dlq itself, where a copy
// that fails again comes back to (Restore watches it).
func OpenRestoreToSource(ctx context.Context, dlq broker.Endpoint, route redrive.Route, run Ref, m *Manifest, h RestoreHooks) (*RestoreTarget, error) {
	t := &RestoreTarget{ToSource: true, Dests: route.CanaryDests, Dest: broker.Destination{Key: "source", Label: route.Router.Describe()}}
	return openRestore(ctx, dlq, t, run, m, false, h)
}

func openRestore(ctx context.Context, ep broker.Endpoint, t *RestoreTarget, run Ref, m *Manifest, canary bool, h RestoreHooks) (*RestoreTarget, error) {
	caps := ep.Capabilities()
	var err error
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
	t.Sources = rep.Sources
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
