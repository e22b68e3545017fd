package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// amqpRestoreRun restores a verified archive to a RabbitMQ queue or
// exchange (--to amqp://…): each copy published with mandatory and
// publisher confirms, journaled so a resumed restore never sends a message
// twice. The archive is verified first, as for SQS.
func amqpRestoreRun(ctx context.Context, opts *RestoreOptions, ref archive.Ref, m *archive.Manifest) error {
	f := opts.F
	gep, err := f.Endpoint(ctx, opts.To)
	if err != nil {
		return err
	}
	dest, ok := gep.(*amqp.Endpoint)
	if !ok {
		return errs.BadInputf("%s is not a RabbitMQ queue", gep)
	}
	// A canary watches the queue the destination dead-letters to, found
	// before anything is verified or sent: a destination whose failures
	// are dropped (no dead-letter exchange, one that routes nowhere) is
	// refused, since a canary there could only pass.
	var watch *amqp.Endpoint
	if opts.Canary > 0 {
		name, err := dest.DeadLetterQueue(ctx)
		if err != nil {
			return err
		}
		if watch, err = dest.Sibling(ctx, name); err != nil {
			return err
		}
		if err := amqp.CheckPeekSafe(watch.Info()); err != nil {
			return errs.BadInputf("--canary reads %s to find copies that came back: %v", name, err)
		}
	}
	sel, _ := opts.Selection.Selector()
	watchFilterErrors(f, sel)
	var selector redrive.Selector
	if sel != nil {
		selector = sel
	}
	f.IO.Infof("verifying %s (%d part(s), %d record(s)) before sending anything", ref.Name(), len(m.Parts), m.Records())
	rep, err := archive.VerifyArchive(ctx, ref, nil)
	if err != nil {
		return err
	}
	if !rep.OK {
		var probs []string
		for _, pc := range rep.Parts {
			for _, p := range pc.Problems {
				probs = append(probs, pc.Key+": "+p)
			}
		}
		probs = append(probs, rep.Problems...)
		return errs.Verdictf("the archive failed verification, nothing was sent: %s", strings.Join(probs, "; "))
	}
	t, err := dest.Target(ctx)
	if err != nil {
		return err
	}
	router := fixedRouter{t}
	if opts.xf, err = opts.Transform.compile(dest.Capabilities()); err != nil {
		return err
	}
	watchTransformErrors(f, opts.xf)
	if opts.DryRun {
		return restorePlan(ctx, opts, ref, m, router, dest.Preparer(), selector)
	}
	pub, err := dest.OpenPublisher(ctx)
	if err != nil {
		return err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	max := opts.CanaryFlags.limit(opts.Max)
	total := m.Records()
	if max > 0 {
		total = min(total, max)
	}
	shown := *opts
	shown.To = dest.String()
	raw, _ := json.Marshal(&shown)
	spec := redrive.RunSpec{
		StateDir: f.StateDir(),
		Meta: redrive.RunMeta{Kind: "restore", Source: ref.Name(), Destination: dest.ID(),
			Fingerprint: opts.fingerprint(dest.ID()), Options: raw, Transform: opts.Transform.meta(opts.xf)},
		RefuseCompleted: true, Again: opts.Again,
		AlreadyDone: func(done redrive.RunInfo) error {
			return errs.BadInputf("%s was already restored to %s by run %s (%s); pass --again to send it once more", ref.Name(), dest.Name(), done.ID, done.Updated.Format(time.RFC3339))
		},
		OnResume: func(prev redrive.RunInfo) {
			f.IO.Infof("resuming unfinished restore %s (%s; %d sent): already-sent messages are not sent again", prev.ID, prev.Status, prev.Sent)
		},
		Confirm: func() error {
			return confirm(f,
				fmt.Sprintf("Send %s of %d archived message(s) of %s to %s?", limitedWhat(sel.Describe(), opts.Canary, opts.Max), m.Records(), m.Queue.Name, t.Label),
				fmt.Sprintf("restore sends archived messages to %s; pass --yes to confirm", t.Label),
				"restore not confirmed; nothing was sent")
		},
		OnJournal: func(j *redrive.Journal) { f.Verbosef("run %s, journal %s", j.Meta().ID, j.Dir()) },
		Source:    archive.NewRestoreSource(ref.Src, m),
		Move: redrive.Options{
			Publisher: pub, DestDepth: dest.DestinationDepth,
			Router: router, Select: selector, Max: max,
			Rate: opts.Rate, Ramp: opts.Ramp, RampEvery: opts.RampEvery, Concurrency: opts.Concurrency,
			Guards: opts.GuardFlags.guards(0), Total: total,
			Reporter: progressReporter(prog, "restore"), Transform: opts.xf,
		},
	}
	opts.PaceFlags.apply(&spec.Move)
	if opts.Canary > 0 {
		window, err := opts.CanaryFlags.canaryWindow(ctx, f, watch, []broker.Destination{t})
		if err != nil {
			return err
		}
		baseline := map[string]int{}
		if d, err := dest.DestinationDepth(ctx, t); err == nil {
			baseline[t.Key] = int(d.Ready + d.Held)
		} else if opts.VerifyDrain {
			return errs.BadInputf("--verify-drain compares the destination's depth before and after the canary, but %s has none; restore the canary --to a queue, or drop --verify-drain", t.Label)
		}
		spec.Canary = &redrive.CanarySpec{Watch: watch, Dests: []broker.Destination{t}, DestDepth: dest.DestinationDepth, Baseline: baseline,
			Verify: window.Verify(redrive.VerifyOptions{Poll: opts.VerifyPoll, Drain: opts.VerifyDrain}),
			OnStart: func(moved int) {
				f.IO.Infof("canary: sent %d message(s) to %s; watching %s (where it dead-letters) for %s", moved, t.Label, watch.Name(), window.For)
			}}
	}
	return executeMove(ctx, f, prog, spec, "", func(out *redrive.Outcome) error {
		return printRestoreSummary(f, prog, ref, t.Label, out.Result, out.Verdict, out.Status)
	})
}
