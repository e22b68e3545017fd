package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// amqpRedriveRun is redrive for a RabbitMQ DLQ: the same engine, journal,
// canary, pacing and guards as SQS, with RabbitMQ's source (deliveries
// held unacknowledged, acknowledged only after the copy's confirm), router
// (the first death's exchange and routing keys) and publisher (mandatory,
// publisher confirms).
func amqpRedriveRun(ctx context.Context, opts *RedriveOptions) error {
	f := opts.F
	gep, err := f.Endpoint(ctx, opts.DLQ)
	if err != nil {
		return err
	}
	ep, ok := gep.(*amqp.Endpoint)
	if !ok {
		return errs.BadInputf("%s is not a RabbitMQ queue", gep)
	}
	if err := refuseFlags(ep.Capabilities(), opts.flags, opts.Engine == "native"); err != nil {
		return err
	}
	var router redrive.Router
	pubEp := ep                          // where copies are published
	var canaryDests []broker.Destination // nil: back to the queues that dead-letter into the DLQ
	if strings.EqualFold(opts.To, "source") {
		if router, err = ep.RouterToSource(ctx); err != nil {
			return err
		}
	} else {
		if !isAMQPRef(opts.To) {
			return errs.BadInputf("--to %s: a RabbitMQ DLQ redrives to RabbitMQ (an amqp:// queue or exchange reference, or source)", opts.To)
		}
		dep, err := f.Endpoint(ctx, opts.To)
		if err != nil {
			return err
		}
		dest := dep.(*amqp.Endpoint)
		if dest.ID() == ep.ID() {
			return errs.BadInputf("--to %s is the DLQ itself; pass --to source or another queue", opts.To)
		}
		if dest.Ref().HostPort() != ep.Ref().HostPort() || dest.Ref().VHost != ep.Ref().VHost {
			return errs.BadInputf("--to %s is on another RabbitMQ server or vhost; dlqctl redrives within one vhost (archive and restore move messages between servers)", dest)
		}
		t, err := dest.Target(ctx)
		if err != nil {
			return err
		}
		router, pubEp, canaryDests = fixedRouter{t}, dest, []broker.Destination{t}
	}
	sel, _ := opts.Selection.Selector()
	watchFilterErrors(f, sel)
	var selector redrive.Selector
	if sel != nil {
		selector = sel
	}
	name := &sqs.Queue{Name: ep.Name()} // the summary names the DLQ
	xf, err := opts.Transform.compile(ep.Capabilities())
	if err != nil {
		return err
	}
	watchTransformErrors(f, xf)
	if opts.DryRun {
		return amqpRedrivePlan(ctx, opts, ep, router, selector, xf)
	}
	depth, err := ep.Depth(ctx)
	if err != nil {
		return err
	}
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	max := opts.CanaryFlags.limit(opts.Max)
	total := int(depth.Ready)
	if max > 0 {
		total = min(total, max)
	}
	// The journal keeps the options without credentials: a resumed run
	// takes them from the reference or DLQCTL_AMQP_USERNAME/PASSWORD.
	shown := *opts
	shown.DLQ, shown.To = ep.String(), redactRef(opts.To)
	raw, _ := json.Marshal(&shown)
	decode := inspect.DecodeMarker
	if selector != nil || xf != nil {
		decode = inspect.Decode
	}
	originals, err := opts.Transform.originals(ctx, f, ep, selectionText(sel), xf)
	if err != nil {
		return err
	}
	// Peers of a shared run (--rate-share) are competing consumers: the
	// source knows it shares the queue, so what the peers hold at the end
	// is theirs, not another application's.
	sh := opts.PaceFlags.share()
	// Without a selection nothing reads a record's headers (beyond the
	// marker and the original route) or its death history: the copy and
	// the route come from the delivery the record carries.
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: time.Second, Decode: decode, Lean: selector == nil && xf == nil, Share: broker.Share{I: sh.I, N: sh.N}})
	if err != nil {
		return err
	}
	pub, err := pubEp.OpenPublisher(ctx)
	if err != nil {
		src.Close(context.WithoutCancel(ctx))
		return err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	destDepth := func(ctx context.Context, d broker.Destination) (broker.Depth, error) {
		return pubEp.DestinationDepth(ctx, d)
	}
	spec := redrive.RunSpec{
		StateDir: f.StateDir(), ResumeID: opts.ResumeID,
		Meta: redrive.RunMeta{Kind: "redrive", Source: ep.ID(), SourceURL: ep.ID(), Destination: router.Describe(),
			Fingerprint: opts.fingerprint(ep.ID()), Options: raw, Transform: opts.Transform.meta(xf)},
		OnResume: func(prev redrive.RunInfo) {
			f.IO.Infof("resuming unfinished run %s (%s; %d sent, %d deleted): messages whose copy was confirmed are acknowledged without publishing them again", prev.ID, prev.Status, prev.Sent, prev.Deleted)
		},
		Confirm: func() error {
			what := "all messages"
			if sel != nil {
				what = sel.Describe()
			}
			return confirm(f,
				fmt.Sprintf("Move %s from %s (%d ready) to %s?", limitedWhat(what, opts.Canary, opts.Max), ep.Name(), depth.Ready, router.Describe()),
				fmt.Sprintf("redrive moves messages out of %s; pass --yes to confirm (see what would move with --dry-run)", ep.Name()),
				"redrive not confirmed; nothing was changed")
		},
		OnWaitHeld: func(id string, wait time.Duration) { waitHeldInfo(f, id, wait) },
		OnJournal:  func(j *redrive.Journal) { f.Verbosef("run %s, journal %s", j.Meta().ID, j.Dir()) },
		Source:     src,
		Move: redrive.Options{
			Publisher: pub, DestDepth: destDepth, SourceCaps: ep.Capabilities(),
			Router: router, Select: selector, Max: max, MaxRedrives: opts.MaxRedrives,
			Concurrency: opts.Concurrency,
			Guards:      opts.GuardFlags.guards(opts.MaxReturns), Total: total,
			Reporter: progressReporter(prog, "redrive"), WaitInFlight: waitInFlight(opts.WaitInFlight),
			Transform: xf, Originals: keeperOf(originals),
		},
	}
	opts.PaceFlags.apply(&spec.Move)
	if spec.Move.Rate == 0 && len(spec.Move.Ramp) == 0 {
		// Unpaced: RabbitMQ has no batch API, and the pipeline's default
		// batch (SQS's 10) made each worker wait for confirms every 10
		// messages: a batch is up to a confirm window, sized so every
		// worker finds deliveries (amqp.UnpacedBatch). A paced run keeps
		// small batches: a worker waits for the rate's tokens for its
		// whole batch, holding it meanwhile.
		if batch := amqp.UnpacedBatch(f.amqpConfig(), opts.Concurrency, max); batch > pipeline.DefaultBatchEntries {
			spec.Move.BatchEntries, spec.Move.BatchBytes = batch, amqp.MaxBatchBytes
		}
	}
	if opts.Canary > 0 {
		window, err := opts.CanaryFlags.canaryWindow(ctx, f, ep, canaryDests)
		if err != nil {
			src.Close(context.WithoutCancel(ctx))
			return err
		}
		spec.Canary = &redrive.CanarySpec{Watch: ep, DestDepth: destDepth, Baseline: map[string]int{},
			Verify: window.Verify(redrive.VerifyOptions{Poll: opts.VerifyPoll, Drain: opts.VerifyDrain}),
			OnStart: func(moved int) {
				f.IO.Infof("canary: moved %d message(s); watching %s for %s", moved, ep.Name(), window.For)
			}}
	}
	return executeMove(ctx, f, prog, spec, "returning held messages: %v (the broker returns them when the connection closes)", func(out *redrive.Outcome) error {
		noCanaryMatch(f, opts, out)
		return printRedriveSummary(f, prog, name, router, out.Result, out.Verdict, out.Status)
	})
}

// fixedRouter sends every message to one destination (--to).
type fixedRouter struct{ d broker.Destination }

func (r fixedRouter) Route(context.Context, *record.Record) (broker.Destination, string, error) {
	return r.d, "", nil
}
func (r fixedRouter) Describe() string { return r.d.Label }

func amqpRedrivePlan(ctx context.Context, opts *RedriveOptions, ep *amqp.Endpoint, router redrive.Router, sel redrive.Selector, xf *transform.Transform) error {
	f := opts.F
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	pl := &redrive.Planner{RunID: "dry-run", Router: router, Publisher: ep.Preparer(), Select: sel, MaxRedrives: opts.MaxRedrives, Max: opts.Max, Transform: xf}
	res, err := f.ForEachRecord(ctx, InputOptions{Queue: opts.DLQ}, func(rec *record.Record, parsed any) error {
		ev, err := pl.Add(ctx, rec, parsed)
		if err != nil {
			return err
		}
		prog.Message(output.MessageEvent{MessageID: ev.MessageID, Action: ev.Action, Destination: ev.Destination, Class: ev.Class, Reason: ev.Reason})
		return nil
	})
	if err != nil {
		if errors.Is(err, amqp.ErrPeekUnsafe) {
			return errs.BadInput(err)
		}
		return err
	}
	fe, err := endSelection(f, sel, "would stay in the DLQ")
	if err != nil {
		return err
	}
	sh := opts.PaceFlags.share()
	plan := pl.Plan(sh.Rate(opts.Rate), sh.Ramp(opts.Ramp), opts.RampEvery)
	if res.Scan != nil {
		plan.Complete, plan.Note = res.Scan.Complete, res.Scan.Note
	}
	desc := "all messages"
	if sel != nil {
		desc = sel.Describe()
	}
	out := RedrivePlanOutput{Plan: plan, DLQ: ep.Name(), To: router.Describe(), Selection: desc, Rate: opts.Rate, Ramp: opts.Ramp, FilterErrors: fe}
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, out)
	case output.NDJSON:
		return prog.Summary(out)
	}
	f.IO.Infof("dry run: nothing was changed (the messages were read and returned to %s)", ep.Name())
	return printPlanTable(f, plan, ep.Name(), router.Describe(), desc, "as fast as --concurrency allows (set --rate or --ramp for an estimate)")
}

// redactRef is a reference as outputs and journals show it (credentials
// replaced by ***); "source" and other words stay as they are.
func redactRef(raw string) string {
	if ref, err := broker.ParseRef(raw); err == nil && ref.Broker != broker.SQS {
		return ref.Display
	}
	return raw
}
