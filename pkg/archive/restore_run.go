package archive

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RestoreRequest is one restore of an archive run, over the endpoint and
// the target (OpenRestore) the command opened: what is selected, how the
// run is paced, guarded and watched, and how it talks to the person
// running it. Restore does the rest, on every broker alike.
type RestoreRequest struct {
	// Run is the archive run restored, m its manifest.
	Run      Ref
	Manifest *Manifest
	// To is the destination's endpoint, Target what OpenRestore found of
	// it and Router the route to Target.Dest (with Target.ToSource, To is
	// the archived DLQ and Router its route back to each message's
	// source).
	To     broker.Endpoint
	Target *RestoreTarget
	Router redrive.Router
	// Select picks the records (nil: all).
	Select redrive.Selector
	// DryRun sends nothing: every record goes through the plan, each
	// decision to OnPlanned, and Restore returns the Plan.
	DryRun    bool
	OnPlanned func(redrive.MessageEvent)
	// Max restores at most this many records (0: all).
	Max int
	// Canary sends this many records, then watches the destination's DLQ
	// (0: no canary).
	Canary int
	// VerifyFor is --verify-for when VerifyGiven; else the broker computes
	// the canary's window (redrive.DecideWindow).
	VerifyFor   time.Duration
	VerifyGiven bool
	VerifyPoll  time.Duration
	VerifyDrain bool
	// Spec is the journaled run, filled in but for what the archive and
	// the destination decide: StateDir, Again, Meta (Fingerprint, Options,
	// Transform), OnJournal and Move (pace, Share, Concurrency, Guards,
	// Reporter, Transform); a dry run reads its pace, Share and Transform.
	Spec redrive.RunSpec
	// Info says one line to the person running the command; Warn warns.
	Info, Warn func(format string, a ...any)
	// Confirm asks to go on before anything is sent; an error aborts with
	// nothing sent.
	Confirm func() error
}

// Restored is a restore that got as far as its run: the Plan of a dry
// run; else the run's Outcome, or, when the run never started (a refused
// repeat or confirmation, a journal that cannot be opened), Err.
type Restored struct {
	Plan    *redrive.Plan
	Outcome *redrive.Outcome
	Err     error
}

// Restore runs a restore request: it opens the destination's publisher,
// and plans a dry run (PlanRestore); else it refuses what cannot hold
// before anything is sent (a canary window the broker cannot know,
// --verify-drain without a destination depth), keeps each message group's
// (partition's) order with one sender, decides the canary's window and
// baseline, and executes the run (redrive.Execute: journal, refusal of a
// completed restore without Again, confirmation, pipeline, canary,
// verdict). An error is returned for a restore refused before its run.
func Restore(ctx context.Context, req RestoreRequest) (*Restored, error) {
	ep, ref, m := req.To, req.Run, req.Manifest
	dest, watch := req.Target.Dest, req.Target.Watch
	dests, to := []broker.Destination{dest}, ep.Name()
	if req.Target.ToSource {
		// Back to where each came from, through the archived DLQ, which
		// is where a copy that fails again comes back to.
		dests, to, watch = req.Target.Dests, req.Router.Describe(), ep
	}
	caps := ep.Capabilities()
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		return nil, OpenErr(err)
	}
	defer pub.Close(context.WithoutCancel(ctx))
	if req.DryRun {
		mv := req.Spec.Move
		p := &redrive.Planner{RunID: "dry-run", Router: req.Router, Publisher: pub, Select: req.Select, Max: req.Max, Partition: mv.Share, Transform: mv.Transform}
		if err := PlanRestore(ctx, ref, m, p, req.OnPlanned); err != nil {
			return nil, err
		}
		pl := p.Plan(mv.Rate, mv.Ramp, mv.RampEvery) // this process's pace
		pl.Complete = true
		if w := OtherSourcesWarning(pl.Sources, to); w != "" && !req.Target.ToSource {
			req.Warn("%s", w)
		}
		return &Restored{Plan: &pl}, nil
	}
	var destDepth func(context.Context, broker.Destination) (broker.Depth, error)
	if dd, ok := ep.(broker.DestinationDepther); ok {
		destDepth = dd.DestinationDepth
	}
	spec := req.Spec
	spec.Move.Max = req.Max
	if req.Canary > 0 {
		spec.Move.Max = req.Canary
	}
	total := m.Records()
	if spec.Move.Max > 0 {
		total = min(total, spec.Move.Max)
	}
	if caps.Ordering == broker.OrderGroupLock || caps.Ordering == broker.OrderPartition {
		// The archive's order is each group's (partition's) order: one
		// sender keeps it, where parallel batches could swap two
		// messages of one group or key.
		spec.Move.Concurrency = 1
	}
	if caps.ReplayNote != "" {
		req.Info("note: %s", caps.ReplayNote)
	}
	all, _ := req.Select.(interface{ MatchesAll() bool })
	if w := OtherSourcesWarning(req.Target.Sources, to); w != "" && (req.Select == nil || all != nil && all.MatchesAll()) && !req.Target.ToSource {
		// Without a selection every record is sent: the archive's own
		// sources are those of the restore (a selection's are the dry
		// run's to count).
		req.Warn("%s", w)
	}
	spec.Meta.Kind, spec.Meta.Source, spec.Meta.Destination = "restore", ref.Name(), to
	spec.RefuseCompleted = true
	spec.AlreadyDone = func(done redrive.RunInfo) error {
		// An archive never drains: the same restore run twice would
		// send every message twice.
		return errs.BadInputf("%s was already restored to %s by run %s (%s); pass --again to send it once more", ref.Name(), to, done.ID, done.Updated.Format(time.RFC3339))
	}
	spec.OnResume = func(prev redrive.RunInfo) {
		req.Info("resuming unfinished restore %s (%s; %d sent): already-sent messages are not sent again", prev.ID, prev.Status, prev.Sent)
	}
	spec.Confirm = req.Confirm
	spec.Source = NewRestoreSource(ref.Src, m)
	spec.Move.Publisher, spec.Move.DestDepth = pub, destDepth
	spec.Move.Router, spec.Move.Select, spec.Move.Total = req.Router, req.Select, total
	if req.Canary > 0 {
		window, baseline, err := redrive.DecideCanary(ctx, watch, dests, destDepth, req.VerifyFor, req.VerifyGiven, req.Info, req.Warn)
		if err != nil {
			return nil, err
		}
		for _, d := range dests {
			if _, ok := baseline[d.Key]; !ok && req.VerifyDrain {
				return nil, errs.BadInputf("--verify-drain compares the destination's depth before and after the canary, but %s has none; restore the canary --to a queue, or drop --verify-drain", d.Label)
			}
		}
		if len(dests) == 0 && req.VerifyDrain {
			return nil, errs.BadInputf("--verify-drain compares the destinations' depth before and after the canary, and %s lists no queue its messages came from; drop --verify-drain", ep.Name())
		}
		vopts := redrive.VerifyOptions{Poll: req.VerifyPoll, Drain: req.VerifyDrain}
		if caps.Hold == broker.HoldLease {
			vopts.Visibility = 30 * time.Second
		}
		spec.Canary = &redrive.CanarySpec{Watch: watch, Dests: dests, DestDepth: destDepth, Baseline: baseline,
			Verify: window.Verify(vopts),
			OnStart: func(moved int) {
				// (--to source: dest.Label is the route's description.)
				req.Info("canary: sent %d message(s) to %s; watching %s (where it dead-letters) for %s", moved, dest.Label, watch.Name(), window.For)
			}}
	}
	out, err := redrive.Execute(ctx, spec)
	return &Restored{Outcome: out, Err: err}, nil
}

// OtherSourcesWarning is the dry run's warning when the destination is the
// source queue of some of the messages to restore and others came from
// other queues (an archive of a DLQ several queues dead-letter to): a
// restore sends every message to its one destination, so those would land
// in a queue whose consumers never had them. "" when there is nothing to
// warn about (one source, or a destination that is none of them: a
// recovery queue).
func OtherSourcesWarning(sources map[string]int, dest string) string {
	if sources[dest] == 0 || len(sources) < 2 {
		return ""
	}
	var other []string
	n := 0
	for _, q := range slices.Sorted(maps.Keys(sources)) {
		if q != dest {
			other = append(other, fmt.Sprintf("%s %d", q, sources[q]))
			n += sources[q]
		}
	}
	return fmt.Sprintf("%d of the messages to restore were dead-lettered from other queues than %s (%s), and a restore sends every one to %s; "+
		"restore them --to source (each back to the queue it came from), one source at a time (--to %s --filter '.system.source_queue == %q'), or --to a recovery queue",
		n, dest, strings.Join(other, ", "), dest, dest, dest)
}
