package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/report"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// RestoreOptions are the inputs of `dlqctl restore`; they are stored in
// the run's journal.
type RestoreOptions struct {
	F     *Factory       `json:"-"`
	flags *pflag.FlagSet // the command's, for refusals on the resolved destination

	Manifest  string         `json:"manifest"`
	To        string         `json:"to"`
	Selection SelectionFlags `json:"selection"`
	Max       int            `json:"max,omitempty"`
	DryRun    bool           `json:"-"`
	CanaryFlags
	PaceFlags
	GuardFlags
	Again bool `json:"-"`

	// Transform repairs the archived messages on their way out (the
	// archive is the originals: nothing more to keep).
	Transform TransformFlags `json:"transform,omitzero"`
	xf        *transform.Transform
}

const restoreLong = `Send archived messages back to a queue: restore is a redrive whose source is
an archive. Used when a DLQ's retention would expire before the fix ships, or
to replay an incident after an audit.

The archive is verified first (every part's SHA-256, gzip and records, as
'dlqctl archive verify' does); a damaged archive exits 3 and sends nothing.
Then the records go through the redrive pipeline: exact copies (the body byte
for byte, every attribute with its data type, the FIFO message group, a
deduplication id derived from the run and the original message id, and the
dlqctl-redrive marker attribute), --rate or --ramp, the --max-dest-backlog
guard, a --canary, and a journal under --state-dir: running the same command
again after a crash or Ctrl-C skips what was already sent, and running a
restore that completed again is refused unless --again is given. Records of a
FIFO destination are sent in archive order by a single worker so each message
group keeps its order. The archive itself is never changed.

--canary N sends N messages and watches the destination's own DLQ (its
RedrivePolicy target) for --verify-for: exit 3 if any comes back. Without
--verify-for the watch is computed as for redrive (maxReceiveCount × the
destination's visibility timeout, + 30 s), stated on stderr and in the verdict
(window_seconds, window_reason).

MANIFEST names one archive run: s3://BUCKET/…/run=<id>/_manifest.json, the
run's folder s3://BUCKET/…/run=<id>/, or a local copy (the manifest, or the
folder with the run's parts next to it); runs written by older dlqctl versions
(…/<yyyy>/<mm>/<dd>/<run-id>/manifest.json) restore the same way. A folder is
recorded in the journal as the manifest it holds, so both spellings are the
same restore. A run needs --yes, or a confirmation on a terminal.

--to source sends each message back to the queue it was dead-lettered from,
through the queue the archive was read from (which must still exist; a canary
watches it), as redrive --to source does. --dry-run counts the messages by
that queue and warns when --to QUEUE is one of several.

--to amqp://…/VHOST/QUEUE (or an exchange) restores to RabbitMQ: each copy is
published with mandatory and publisher confirms; --dry-run prints the same
plan as for SQS and publishes nothing. --canary N there watches the queue the
destination dead-letters to (its dead-letter exchange and routing key,
followed through the bindings; for an exchange, the one queue all its queues
dead-letter to) by peeking it, for --verify-for (when not given it is
computed: the message TTLs on the way from the destination into that queue, +
30 s); a destination whose failures would be dropped (no dead-letter exchange,
or one routing nowhere) is refused with exit 2 before anything is sent.
--transform EXPR (or --transform-file F) repairs each record on its way out,
as redrive --transform does (on a Kafka topic the key and the ordered headers
too): the archive is the originals, so nothing more is kept; --dry-run shows
the diff. An archive is not drained by restoring it: the restore after a
canary sends the canary's N again.

` + SelectionHelp

// NewCmdRestore builds `dlqctl restore`.
func NewCmdRestore(f *Factory, runF func(context.Context, *RestoreOptions) error) *cobra.Command {
	opts := &RestoreOptions{F: f}
	c := &cobra.Command{
		Use:   "restore MANIFEST --to source|QUEUE [--filter EXPR] [--dry-run] [--canary N] [--rate R | --ramp R1,R2,...] [--yes]",
		Short: "Re-send archived messages to a queue through the redrive pipeline",
		Long:  withExitCodes(restoreLong),
		Example: `  dlqctl restore s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/ --to orders-recovery --dry-run
  dlqctl restore s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/_manifest.json --to orders --canary 5 --yes
  dlqctl restore ./incident-42/ --to orders --filter '.envelope.event_type == "OrderPaid"' --rate 20 --yes`,
		Args: exactArgs(1, "one archive run (s3://BUCKET/…/run=<id>/, its _manifest.json, or a local copy)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Manifest = args[0]
			opts.flags = c.Flags()
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return restoreRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.To, "to", "", "destination (required): source (each message back to the queue it was dead-lettered from, as redrive --to source), an SQS queue name, URL or ARN, a RabbitMQ queue or exchange amqp://…, or a Kafka topic kafka://HOST:PORT/TOPIC (see Addresses)")
	opts.Selection.AddFlags(fl)
	fl.IntVar(&opts.Max, "max", 0, "restore at most N messages (0 = all)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "change nothing; print what would be sent and how long it would take")
	opts.CanaryFlags.AddFlags(fl, "send N messages, then watch the destination's DLQ for --verify-for (exit 3 if any comes back)")
	opts.PaceFlags.AddFlags(fl, "workers sending in parallel (a FIFO queue or a topic gets one sender, for order, and refuses the flag)")
	opts.GuardFlags.AddFlags(fl, "guard: stop when the destination has more than N visible messages")
	fl.BoolVar(&opts.Again, "again", false, "send the archive again although the same restore already completed")
	opts.Transform.AddFlags(fl, false)
	return c
}

func (o *RestoreOptions) validate() error {
	switch {
	case strings.TrimSpace(o.To) == "":
		return errs.BadInputf("restore needs --to QUEUE, the queue the archived messages are sent to")
	case o.Max < 0:
		return errs.BadInputf("--max cannot be negative")
	}
	if _, err := checkRef(o.To); err != nil && !strings.EqualFold(o.To, "source") {
		return err
	}
	for _, check := range []func() error{o.PaceFlags.validate, o.GuardFlags.validate, func() error { return o.CanaryFlags.validate(o.Max, o.DryRun) }} {
		if err := check(); err != nil {
			return err
		}
	}
	if !archive.IsS3URI(o.Manifest) && !archive.IsLocalManifest(o.Manifest) && !archive.IsLocalDir(o.Manifest) {
		return errs.BadInputf("%s is not an archive manifest; pass s3://BUCKET/…/run=<id>/ (or its _manifest.json) or a local copy of the run", o.Manifest)
	}
	if _, err := o.Selection.Selector(); err != nil {
		return err
	}
	return o.Transform.validate(false, o.DryRun)
}

func (o *RestoreOptions) fingerprint(destARN string) string {
	fp := []any{"restore", o.Manifest, destARN, o.Selection, o.Max, o.Canary}
	if x := o.Transform.fingerprintPart(); x != "" {
		fp = append(fp, x)
	}
	b, _ := json.Marshal(fp)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func restoreRun(ctx context.Context, opts *RestoreOptions) error {
	f := opts.F
	ref, err := f.reader().ArchiveRun(ctx, opts.Manifest)
	if err != nil {
		return err
	}
	if !archive.IsManifestName(opts.Manifest) && !archive.IsLocalManifest(opts.Manifest) {
		// A run folder: journal it as the manifest it holds, so the folder
		// and the manifest are one restore (refused the second time).
		opts.Manifest = ref.Name()
	}
	m, err := archive.ReadManifest(ctx, ref)
	if err != nil {
		return err
	}
	ep, route, err := restoreEndpoint(ctx, f, opts.To, m)
	if err != nil {
		return err
	}
	defer broker.CloseEndpoint(ep)
	caps, hooks, tgt := ep.Capabilities(), archive.RestoreHooks{Warnf: f.IO.Warnf, Infof: f.IO.Infof}, (*archive.RestoreTarget)(nil)
	refused := refuseDestFlags("restore", caps, opts.flags)
	if route.Router != nil {
		refused = refusals().RestoreToSource(caps, ep.String(), given(opts.flags))
	}
	if refused != nil {
		return refused
	}
	if route.Router != nil {
		tgt, err = archive.OpenRestoreToSource(ctx, ep, route, ref, m, hooks)
	} else if tgt, err = archive.OpenRestore(ctx, ep, ref, m, opts.Canary > 0, hooks); err == nil {
		route.Router = fixedRouter{tgt.Dest}
	}
	if err != nil {
		return err
	}
	dest, watch, destID, destName, shownTo := tgt.Dest, tgt.Watch, ep.ID(), ep.Name(), ep.String()
	if tgt.ToSource {
		// The journal and the summary name "source": a restore to the
		// sources is not one to the DLQ itself.
		destID, destName, shownTo = "source:"+ep.ID(), dest.Label, "source"
	}
	if watch != nil {
		defer broker.CloseEndpoint(watch)
	}
	sel, _ := opts.Selection.Selector()
	watchFilterErrors(f, sel)
	var selector redrive.Selector
	if sel != nil {
		selector = sel
	}
	router := route.Router
	if opts.xf, err = opts.Transform.compile(caps); err != nil {
		return err
	}
	watchTransformErrors(f, opts.xf)
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	shown := *opts
	shown.To = shownTo
	raw, _ := json.Marshal(&shown)
	spec := redrive.RunSpec{
		StateDir: f.StateDir(), Again: opts.Again,
		Meta:      redrive.RunMeta{Fingerprint: opts.fingerprint(destID), Options: raw, Transform: opts.Transform.meta(opts.xf)},
		OnJournal: withUnconfirmedNote(f, func(j *redrive.Journal) { f.Verbosef("run %s, journal %s", j.Meta().ID, j.Dir()) }),
		Move: redrive.Options{
			Concurrency: opts.Concurrency, Guards: opts.GuardFlags.guards(0),
			Reporter: progressReporter(prog, "restore"), Transform: opts.xf,
		},
	}
	opts.PaceFlags.apply(&spec.Move) // this process's share of --rate/--ramp (--rate-share)
	rs, err := archive.Restore(ctx, archive.RestoreRequest{
		Run: ref, Manifest: m, To: ep, Target: tgt, Router: router, Select: selector, Max: opts.Max,
		DryRun: opts.DryRun, OnPlanned: spec.Move.Reporter.Message,
		Canary: opts.Canary, VerifyFor: opts.VerifyFor, VerifyGiven: opts.verifySet != nil && opts.verifySet(),
		VerifyPoll: opts.VerifyPoll, VerifyDrain: opts.VerifyDrain,
		Spec: spec, Info: f.IO.Infof, Warn: f.IO.Warnf,
		Confirm: func() error {
			return confirm(f,
				fmt.Sprintf("Send %s of %d archived message(s) of %s to %s?", limitedWhat(sel.Describe(), opts.Canary, opts.Max), m.Records(), m.Queue.Name, dest.Label),
				fmt.Sprintf("restore sends archived messages to %s; pass --yes to confirm (see what would be sent with --dry-run)", dest.Label),
				"restore not confirmed; nothing was sent")
		},
	})
	if err == nil && rs.Plan != nil {
		return printRestorePlan(f, prog, opts, ref, router, tgt.ToSource, selector, *rs.Plan)
	}
	if err != nil {
		return err
	}
	err = finishMove(f, prog, rs.Outcome, rs.Err, "restore", closeWarning(caps), func(out *redrive.Outcome) error {
		return printRestoreSummary(f, prog, ref, destName, tgt.ToSource, out.Result, out.Verdict, out.Status)
	}, nil)
	return archive.RunEndErr(err)
}

// restoreEndpoint opens --to: a queue, or (source) the queue the archive
// was read from, whose route sends each message back to the queue it was
// dead-lettered from, as redrive --to source does.
func restoreEndpoint(ctx context.Context, f *Factory, to string, m *archive.Manifest) (broker.Endpoint, redrive.Route, error) {
	if !strings.EqualFold(to, "source") {
		ep, err := f.Endpoint(ctx, to)
		return ep, redrive.Route{}, err
	} else if m.Queue.ARN == "" { // the reference without credentials (SQS: the ARN)
		return nil, redrive.Route{}, errs.BadInputf("the archive does not name the queue it was read from, so --to source cannot find where its messages came from; restore --to QUEUE")
	}
	ep, err := f.Endpoint(ctx, m.Queue.ARN)
	if err != nil {
		return nil, redrive.Route{}, fmt.Errorf("--to source sends each message back through %s, the queue the archive was read from: %w; or restore --to QUEUE", m.Queue.Name, err)
	}
	route, _, err := redriveRoute(ctx, f, nil, "source", "", ep)
	if err == nil && route.Origins != nil {
		err = errs.BadInputf("%s is fed by Lambda, SNS or EventBridge, not by queues: restore --to QUEUE, or redrive it from the DLQ", ep.Name())
	}
	if err != nil {
		broker.CloseEndpoint(ep)
	}
	return ep, route, err
}

func printRestoreSummary(f *Factory, prog *output.Progress, ref archive.Ref, destName string, routed bool, res *redrive.Result, v *redrive.Verdict, status string) error {
	format, _ := f.Format()
	sum := report.RestoreSummary{Result: res, Status: status, Archive: ref.Name(), To: destName, Canary: v, Routed: routed}
	return report.WriteRestoreSummary(f.IO, prog, format, sum, func(t *output.TablePrinter) error {
		report.TransformRows(t, res.Transform)
		return report.OutcomeRows(t, res, v)
	})
}

// printRestorePlan prints the plan of a dry run (pl), once the
// selection's refusal and filter errors are known.
func printRestorePlan(f *Factory, prog *output.Progress, opts *RestoreOptions, ref archive.Ref, router redrive.Router, routed bool, sel redrive.Selector, pl redrive.Plan) error {
	format, _ := f.Format()
	fe, err := endSelection(f, sel, "would stay in the archive")
	if err != nil {
		return err
	}
	desc := "all messages"
	if sel != nil {
		desc = sel.Describe()
	}
	out := report.RestorePlanOutput{Plan: pl, Archive: ref.Name(), To: router.Describe(), Selection: desc, Rate: opts.Rate, Ramp: opts.Ramp, FilterErrors: fe, Routed: routed}
	if format != output.JSON && format != output.NDJSON {
		report.WriteTransformPlan(f.IO, pl.Transform)
	}
	return report.WriteRestorePlan(f.IO, prog, format, out)
}

// closeWarning formats a failure to give back what a lease broker's
// source still held at the end ("" where a source holds nothing).
func closeWarning(caps broker.Capabilities) string {
	if caps.Hold == broker.HoldLease {
		return sqsCloseWarning
	}
	return ""
}
