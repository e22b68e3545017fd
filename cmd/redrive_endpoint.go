package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// redrive is the run: redrive over broker.Endpoint alone (redrive.Redrive:
// the DLQ's source, router and publisher, the engine, the run journal, the
// canary, pacing and guards, and what the broker offers beyond that
// reached through its capabilities and optional interfaces), then its
// summary.
func (s *redriveSession) redrive(ctx context.Context) error {
	f, ep, req := s.f, s.ep, s.req
	words := ep.Capabilities().Words()
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	req.Run.Move.Reporter = progressReporter(prog, "redrive")
	done, err := redrive.Redrive(ctx, req)
	var out *redrive.Outcome
	if done != nil {
		out = done.Outcome
	}
	return finishMove(f, prog, out, err, "redrive", words.GiveBackFailed, func(out *redrive.Outcome) error {
		if req.Canary > 0 && out.Result.Moved+out.Result.Resumed == 0 && out.Err == nil {
			f.IO.Infof("canary: no matching message to move")
		}
		sum := RedriveSummary{Result: out.Result, Status: out.Status, DLQ: ep.Name(), To: req.Route.Router.Describe(), Canary: out.Verdict, PendingAfter: done.PendingAfter}
		return report.WriteRedriveSummary(f.IO, prog, format, sum, words)
	}, func() error {
		if n := done.Unreplayed; n > 0 {
			// The engine counts skips as done; here they are work left.
			return errs.Partialf("%d message(s) stay in %s: their origin is unknown, ambiguous or cannot be replayed (the report's skipped reasons say which and what to do)", n, ep.Name())
		}
		return nil
	})
}

// redriveRoute resolves --to for a redrive out of ep: back to where each
// message came from (source), or one destination of the same broker,
// within what the DLQ's broker can reach (broker.DestinationScoper).
// close releases the destination it opened. to is --to parsed (nil:
// source), shown as toShown; origin is --origin.
func redriveRoute(ctx context.Context, f *Factory, to *broker.Ref, toShown, origin string, ep broker.Endpoint) (route redrive.Route, close func(), err error) {
	caps := ep.Capabilities()
	words := caps.Words()
	if to == nil {
		var dests []broker.Destination
		lister, lists := ep.(broker.SourceLister)
		if lists {
			var err error
			if dests, err = lister.SourceDestinations(ctx); err != nil {
				return route, nil, broker.StartError(err)
			}
		}
		if (lists && dests == nil) || origin != "" {
			// Nothing of its broker dead-letters into it: Lambda, SNS,
			// EventBridge.
			o, ok, err := f.redriveOrigins(ctx, ep, origin)
			if ok || err != nil {
				return o, func() {}, err
			}
		}
		router, err := ep.RouterToSource(ctx)
		return redrive.Route{Router: router, PubEp: ep, CanaryDests: dests}, func() {}, broker.StartError(err)
	}
	dest, err := f.EndpointOf(ctx, *to)
	if err != nil {
		return route, nil, err
	}
	fail := func(err error) (redrive.Route, func(), error) {
		broker.CloseEndpoint(dest)
		return route, nil, err
	}
	if dest.Broker() != ep.Broker() {
		return fail(errs.BadInputf("--to %s: a %s DLQ redrives within %s (or --to source); archive it and restore the archive to move messages elsewhere", toShown, caps.Label, caps.Label))
	}
	if dest.ID() == ep.ID() {
		return fail(errs.BadInputf("--to %s is the %s itself; pass --to source or another %s", toShown, words.DLQ, words.Queue))
	}
	if s, ok := ep.(broker.DestinationScoper); ok {
		warnings, err := s.CheckDestination(dest)
		if err != nil {
			return fail(errs.BadInputf("--to %s %v", dest, err))
		}
		for _, w := range warnings {
			f.IO.Warnf("%s", w)
		}
	}
	t, err := dest.Target(ctx)
	if err != nil {
		return fail(broker.StartError(err))
	}
	return redrive.Route{Router: fixedRouter{t}, PubEp: dest, CanaryDests: []broker.Destination{t}}, func() { broker.CloseEndpoint(dest) }, nil
}

// fixedRouter sends every message to one destination (--to, restore).
type fixedRouter struct{ d broker.Destination }

func (r fixedRouter) Route(context.Context, *record.Record) (broker.Destination, string, error) {
	return r.d, "", nil
}
func (r fixedRouter) Describe() string { return r.d.Label }

// redactRef is a reference as outputs and journals show it (credentials
// replaced by ***); "source" and other words stay as they are.
func redactRef(raw string) string {
	if ref, err := broker.ParseRef(raw); err == nil && ref.Broker != broker.SQS {
		return ref.Display
	}
	return raw
}

// confirmRedrive asks to confirm a redrive of what (the selection, as
// limitedWhat bounds it by --canary or --max) from the DLQ named from,
// which holds depth, to to.
func confirmRedrive(f *Factory, what, from, depth, to string) error {
	return confirm(f,
		fmt.Sprintf("Move %s from %s (%s) to %s?", what, from, depth, to),
		fmt.Sprintf("redrive moves messages out of %s; pass --yes to confirm (see what would move with --dry-run)", from),
		"redrive not confirmed; nothing was changed")
}

// plan is the dry run: the DLQ read without removing anything, each
// message decided as the run would, its copy prepared, and the plan
// printed.
func (s *redriveSession) plan(ctx context.Context) error {
	f, ep, req, m := s.f, s.ep, s.req, s.req.Run.Move
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	pl := &redrive.Planner{RunID: "dry-run", Router: req.Route.Router, Publisher: s.planPub, Select: req.Select, MaxRedrives: m.MaxRedrives, Max: m.Max, Transform: m.Transform}
	res, err := f.ForEachRecord(ctx, InputOptions{Queue: s.queue, Visibility: req.Visibility}, func(rec *record.Record, parsed any) error {
		ev, err := pl.Add(ctx, rec, parsed)
		if err != nil {
			return err
		}
		prog.Message(output.MessageEvent{MessageID: ev.MessageID, Action: ev.Action, Destination: ev.Destination, Class: ev.Class, Reason: ev.Reason})
		return nil
	})
	if err != nil {
		if errors.Is(err, broker.ErrPeekUnsafe) {
			return errs.BadInput(err)
		}
		return err
	}
	fe, err := endSelection(f, pl.Select, "would stay in the DLQ")
	if err != nil {
		return err
	}
	plan := pl.Plan(m.Rate, m.Ramp, m.RampEvery)
	if res.Scan != nil {
		plan.Complete, plan.Note = res.Scan.Complete, res.Scan.Note
	} else {
		// Read to the ends taken at the start (a partition given up on
		// before its end was warned about).
		plan.Complete = true
	}
	what := "all messages"
	if pl.Select != nil {
		what = pl.Select.Describe()
	}
	out := RedrivePlanOutput{Plan: plan, DLQ: ep.Name(), To: pl.Router.Describe(), Selection: what, Rate: s.pace.Rate, Ramp: s.pace.Ramp, FilterErrors: fe}
	caps := ep.Capabilities()
	unpaced := "as fast as --concurrency allows (set --rate or --ramp for an estimate)"
	if caps.Ordering == broker.OrderPartition {
		unpaced = "as fast as the run goes (set --rate or --ramp for an estimate)"
	}
	return report.WriteRedrivePlan(f.IO, prog, format, out, caps.Words().ReadBack, unpaced)
}
