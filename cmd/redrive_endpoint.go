package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// endpointRedriveRun is redrive over broker.Endpoint alone: the DLQ's
// source, router and publisher, the engine, the run journal, the canary,
// pacing and guards of pkg/redrive, and what the broker offers beyond
// that reached through its capabilities and optional interfaces (a
// transactional publisher for --exactly-once, a lag reader for
// --max-dest-lag, its own write-ahead intents). Kafka dead-letter topics
// run here.
func endpointRedriveRun(ctx context.Context, opts *RedriveOptions) error {
	f := opts.F
	lags, err := parseDestLag(opts.Kafka.MaxDestLag)
	if err != nil {
		return err
	}
	ep, err := f.Endpoint(ctx, opts.DLQ)
	if err != nil {
		return err
	}
	defer closeEndpoint(ep)
	caps := ep.Capabilities()
	depth, err := ep.Depth(ctx)
	if err != nil {
		return broker.StartError(err)
	}
	sel, err := opts.Selection.Selector()
	if err != nil {
		return err
	}
	watchFilterErrors(f, sel)
	// Without a selection nothing reads a record beyond the redrive
	// marker and the route: records are not decoded for it.
	var selector redrive.Selector
	if sel != nil && !sel.MatchesAll() {
		selector = sel
	}
	var router redrive.Router
	pubEp := ep                          // where copies are published
	var canaryDests []broker.Destination // nil: the destinations the run finds
	if strings.EqualFold(opts.To, "source") {
		if router, err = ep.RouterToSource(ctx); err != nil {
			return broker.StartError(err)
		}
	} else {
		dest, err := f.Endpoint(ctx, opts.To)
		if err != nil {
			return err
		}
		defer closeEndpoint(dest)
		if dest.Broker() != ep.Broker() {
			return errs.BadInputf("--to %s: a %s DLQ redrives within %s (or --to source); archive it and restore the archive to move messages elsewhere", redactRef(opts.To), caps.Label, caps.Label)
		}
		t, err := dest.Target(ctx)
		if err != nil {
			return broker.StartError(err)
		}
		if dest.ID() == ep.ID() {
			return errs.BadInputf("--to %s is the dead-letter queue itself; pass --to source or another one", redactRef(opts.To))
		}
		router, pubEp, canaryDests = fixedRouter{t}, dest, []broker.Destination{t}
	}
	if opts.DryRun {
		return endpointRedrivePlan(ctx, opts, ep, pubEp, router, selector)
	}
	var lagReader broker.LagReader
	if len(lags) > 0 {
		lr, ok := pubEp.(broker.LagReader)
		if !ok {
			return errs.BadInputf("--max-dest-lag needs a destination whose consumers report their lag; %s has none", caps.Label)
		}
		lagReader = lr
		// A group the destination does not know would never trip the
		// guard: refused before anything moves.
		for _, g := range lags {
			if _, err := lr.GroupLag(ctx, g.Group); err != nil {
				if errors.Is(err, broker.ErrNotFound) {
					return errs.BadInputf("--max-dest-lag %s:%d: %v; name a consumer group of the destination", g.Group, g.Max, err)
				}
				return broker.StartError(err)
			}
		}
	}
	var window redrive.Window
	if opts.Canary > 0 {
		// Decided before anything moves: a window the broker cannot know
		// refuses --canary without --verify-for (exit 2).
		if window, err = opts.CanaryFlags.canaryWindow(ctx, f, ep, canaryDests); err != nil {
			return err
		}
	}
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	limit := opts.CanaryFlags.limit(opts.Max)
	total := int(depth.Ready)
	if limit > 0 {
		total = min(total, limit)
	}
	shown := *opts
	shown.DLQ, shown.To = ep.String(), redactRef(opts.To)
	raw, _ := json.Marshal(&shown)
	decode := inspect.DecodeMarker
	if selector != nil {
		decode = inspect.Decode
	}
	sh := opts.PaceFlags.share()
	confirmed := false
	spec := redrive.RunSpec{
		StateDir: f.StateDir(), ResumeID: opts.ResumeID,
		Meta: redrive.RunMeta{Kind: "redrive", Source: ep.ID(), SourceURL: ep.ID(), Destination: router.Describe(),
			Fingerprint: opts.fingerprint(ep.ID()), Options: raw},
		OnResume: func(prev redrive.RunInfo) {
			f.IO.Infof("resuming unfinished run %s (%s; %d sent, %d removed): messages whose copy was recorded are removed without publishing them again", prev.ID, prev.Status, prev.Sent, prev.Deleted)
		},
		Confirm: func() error {
			what := "all messages"
			if selector != nil {
				what = sel.Describe()
			}
			if err := confirm(f,
				fmt.Sprintf("Move %s from %s (%d pending) to %s?", limitedWhat(what, opts.Canary, opts.Max), ep.Name(), depth.Ready, router.Describe()),
				fmt.Sprintf("redrive moves messages out of %s; pass --yes to confirm (see what would move with --dry-run)", ep.Name()),
				"redrive not confirmed; nothing was changed"); err != nil {
				return err
			}
			confirmed = true
			if caps.ReplayNote != "" {
				f.IO.Infof("note: %s", caps.ReplayNote)
			}
			return nil
		},
		OnWaitHeld: func(id string, wait time.Duration) { waitHeldInfo(f, id, wait) },
		OnJournal:  func(j *redrive.Journal) { f.Verbosef("run %s, journal %s", j.Meta().ID, j.Dir()) },
		Move: redrive.Options{
			// No DestDepth: --max-dest-backlog and --verify-drain need a
			// destination backlog (Capabilities.Backlog), refused here.
			SourceCaps: caps, Lag: lagReader,
			Router: router, Select: selector, Max: limit, MaxRedrives: opts.MaxRedrives,
			Concurrency: opts.Concurrency,
			Guards:      opts.GuardFlags.guards(opts.MaxReturns), Total: total,
			Reporter: progressReporter(prog, "redrive"), WaitInFlight: waitInFlight(opts.WaitInFlight),
		},
	}
	for _, g := range lags {
		spec.Move.Guards.MaxDestLag = append(spec.Move.Guards.MaxDestLag, redrive.DestLag{Group: g.Group, Max: g.Max})
	}
	opts.PaceFlags.apply(&spec.Move)
	if caps.Ordering == broker.OrderPartition {
		// One worker: copies of one key are published in the order of
		// their originals (a worker's batch is up to the broker's batch,
		// or a second of the rate, so a paced run holds little).
		spec.Move.Concurrency = 1
		spec.Move.BatchEntries, spec.Move.BatchBytes = caps.MaxBatchEntries, caps.MaxBatchBytes
		if r := spec.Move.Rate; r > 0 || len(spec.Move.Ramp) > 0 {
			if len(spec.Move.Ramp) > 0 {
				r = spec.Move.Ramp[0]
				for _, s := range spec.Move.Ramp {
					r = min(r, s)
				}
			}
			spec.Move.BatchEntries = max(1, min(caps.MaxBatchEntries, int(r)))
		}
	}
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: time.Second, Decode: decode, Lean: selector == nil, Share: broker.Share{I: sh.I, N: sh.N}})
	if err != nil {
		return broker.StartError(err)
	}
	var pub broker.Publisher
	if opts.Kafka.ExactlyOnce {
		opener, ok := pubEp.(broker.TxnOpener)
		if !ok {
			src.Close(context.WithoutCancel(ctx))
			return errs.BadInputf("--exactly-once needs a broker with transactions; %s has none", caps.Label)
		}
		pub, err = opener.OpenTxnPublisher(ctx, src)
	} else {
		pub, err = pubEp.OpenPublisher(ctx)
	}
	if err != nil {
		src.Close(context.WithoutCancel(ctx))
		if errors.Is(err, broker.ErrUnsupported) {
			return errs.BadInput(err)
		}
		return broker.StartError(err)
	}
	defer pub.Close(context.WithoutCancel(ctx))
	spec.Source, spec.Move.Publisher = src, pub
	if opts.Canary > 0 {
		spec.Canary = &redrive.CanarySpec{Watch: ep, Dests: canaryDests, Baseline: map[string]int{},
			Verify: window.Verify(redrive.VerifyOptions{Poll: opts.VerifyPoll, Drain: opts.VerifyDrain}),
			OnStart: func(moved int) {
				f.IO.Infof("canary: moved %d message(s); watching %s for %s", moved, ep.Name(), window.For)
			}}
	}
	return executeMove(ctx, f, prog, spec, "", func(out *redrive.Outcome) error {
		noCanaryMatch(f, opts, out)
		sum := RedriveSummary{Result: out.Result, Status: out.Status, DLQ: ep.Name(), To: router.Describe(), Canary: out.Verdict}
		if caps.Counts == broker.CountsExact && confirmed {
			if d, err := ep.Depth(context.WithoutCancel(ctx)); err == nil {
				sum.PendingAfter = &d.Ready
			}
		}
		return printSummary(f, prog, sum)
	})
}

// endpointRedrivePlan is the dry run: the DLQ read without removing
// anything, each message decided as the run would.
func endpointRedrivePlan(ctx context.Context, opts *RedriveOptions, ep, pubEp broker.Endpoint, router redrive.Router, sel redrive.Selector) error {
	f := opts.F
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	pub, err := pubEp.OpenPublisher(ctx)
	if err != nil {
		return broker.StartError(err)
	}
	defer pub.Close(context.WithoutCancel(ctx))
	pl := &redrive.Planner{RunID: "dry-run", Router: router, Publisher: pub, Select: sel, MaxRedrives: opts.MaxRedrives, Max: opts.Max}
	res, err := f.ForEachRecord(ctx, InputOptions{Queue: opts.DLQ}, func(rec *record.Record, parsed any) error {
		ev, err := pl.Add(ctx, rec, parsed)
		if err != nil {
			return err
		}
		prog.Message(output.MessageEvent{MessageID: ev.MessageID, Action: ev.Action, Destination: ev.Destination, Class: ev.Class, Reason: ev.Reason})
		return nil
	})
	if err != nil {
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
	} else {
		// Read to the ends taken at the start (a partition given up on
		// before its end was warned about).
		plan.Complete = true
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
	f.IO.Infof("dry run: nothing was changed (%s was read without removing anything)", ep.Name())
	return printPlanTable(f, plan, ep.Name(), router.Describe(), desc, "as fast as the run goes (set --rate or --ramp for an estimate)")
}

// printSummary prints a run's summary: JSON, the NDJSON summary event, or
// a table.
func printSummary(f *Factory, prog *output.Progress, sum RedriveSummary) error {
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, sum)
	case output.NDJSON:
		return prog.Summary(sum)
	}
	res := sum.Result
	t := output.NewTable(f.IO, "", "")
	t.Row("run", res.RunID)
	t.Row("status", sum.Status)
	t.Row("moved", fmt.Sprintf("%d from %s to %s in %s (%.1f/s)", res.Moved, sum.DLQ, sum.To, output.Duration(time.Duration(res.ElapsedSeconds*float64(time.Second))), res.Rate))
	for _, d := range sortedKeys(res.ByDestination) {
		t.Row("  to "+d, strconv.Itoa(res.ByDestination[d]))
	}
	if res.Resumed > 0 {
		t.Row("resumed", fmt.Sprintf("%d removed without publishing again (an earlier attempt published them)", res.Resumed))
	}
	for _, r := range sortedKeys(res.Skipped) {
		t.Row("skipped", fmt.Sprintf("%d %s", res.Skipped[r], r))
	}
	if res.Failed > 0 {
		t.Row("failed", fmt.Sprintf("%d refused by the destination; still in the DLQ", res.Failed))
	}
	if res.Unknown > 0 {
		t.Row("unknown", fmt.Sprintf("%d whose publish outcome is unknown; still in the DLQ", res.Unknown))
	}
	if res.SentNotDeleted > 0 {
		t.Row("pending", fmt.Sprintf("%d published but not yet removed from the DLQ; re-run to finish", res.SentNotDeleted))
	}
	if sum.PendingAfter != nil {
		t.Row("pending after", strconv.FormatInt(*sum.PendingAfter, 10))
	}
	if res.AbortedResent > 0 {
		t.Row("after aborted transaction", abortedNote(res.AbortedResent))
	}
	sharedRows(t, res)
	countsRow(t, res.Counts)
	return renderOutcomeRows(t, res, sum.Verdict())
}

// abortedNote says that n messages of a killed transactional run were
// published again after its transaction was aborted: no duplicates for
// read_committed consumers.
func abortedNote(n int) string {
	return fmt.Sprintf("the killed run's transaction was aborted, so read_committed consumers of the destination never saw the %d message(s) it was publishing (in the transaction it never committed); they are published again now, once (read_uncommitted consumers may have seen both)", n)
}
