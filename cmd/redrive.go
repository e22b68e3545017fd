package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// RedriveOptions are the inputs of `dlqctl redrive`. They are stored in the
// run's journal so `redrive resume` can repeat the run exactly.
type RedriveOptions struct {
	// flags are the command's flags, to refuse those the queue's broker
	// cannot honour (refuseFlags).
	flags *pflag.FlagSet

	DLQ string `json:"dlq"`
	To  string `json:"to"`
	// Origin names the Lambda function or SNS subscription that messages
	// of a DLQ fed by Lambda/SNS/EventBridge go back to when they do not
	// name it themselves (--origin).
	Origin      string         `json:"origin,omitempty"`
	Selection   SelectionFlags `json:"selection"`
	Max         int            `json:"max,omitempty"`
	MaxRedrives int            `json:"max_redrives"`
	DryRun      bool           `json:"-"`
	CanaryFlags
	PaceFlags
	GuardFlags
	MaxReturnsRaw string  `json:"-"`
	MaxReturns    float64 `json:"max_returns,omitempty"`

	Engine     string        `json:"engine"`
	Visibility time.Duration `json:"visibility"`
	// WaitInFlight waits at the end for messages in flight elsewhere.
	WaitInFlight bool `json:"wait_inflight"`

	// ResumeID continues the named run instead of starting one.
	ResumeID string `json:"-"`

	// Kafka holds the flags only Kafka topics take.
	Kafka KafkaRedriveFlags `json:"kafka,omitzero"`

	// Transform repairs messages before sending them (cmd/transform.go).
	Transform TransformFlags `json:"transform,omitzero"`

	// The flags as typed values (derive), parsed once when the flags are
	// validated (or a run's journal is read for resume): the factory
	// hands these on, not the flags.
	// dlq and to are the references parsed (to nil: --to source); toShown
	// is --to as outputs and journals show it (redactRef).
	dlq         broker.Ref
	to          *broker.Ref
	toShown     string
	destLag     []redrive.DestLag
	move        redrive.Options
	nativeSteps []int
}

// NewCmdRedrive builds `dlqctl redrive` and its subcommands.
func NewCmdRedrive(f *Factory, runF func(context.Context, *RedriveOptions) error) *cobra.Command {
	opts := &RedriveOptions{}
	c := &cobra.Command{
		Use:   "redrive DLQ [--to source|QUEUE] [--filter EXPR | --class C] [--dry-run | --canary N] [--rate R | --ramp R1,R2,...] [--yes]",
		Short: "Move messages from a DLQ back to their sources or a recovery queue, with nothing lost",
		Long:  withExitCodes(redriveLong),
		Example: `  dlqctl redrive orders-dlq --dry-run
  dlqctl redrive orders-dlq --class transient --canary 10 --yes
  dlqctl redrive orders-dlq --class transient --ramp 5,20,50,100 --ramp-every 1m --max-returns 5% --yes
  dlqctl redrive orders-dlq --to orders-recovery --filter '.envelope.event_type == "OrderPaid"' --yes
  dlqctl redrive orders-dlq --class schema-mismatch --transform '.json.amount |= tonumber' --archive-originals s3://acme-dlq-archive/originals --yes
  dlqctl redrive resume 20261130T031500-ab12cd --yes`,
		Args: exactArgs(1, "one DLQ (name, URL or ARN)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.DLQ = args[0]
			opts.flags = c.Flags()
			if err := opts.validate(c); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return redriveRun(c.Context(), f, opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.To, "to", "source", "destination: source (each message's source queue) or one queue: an SQS name, URL or ARN, amqp://… or kafka://… (see Addresses)")
	fl.StringVar(&opts.Origin, "origin", "", "with --to source: the Lambda function ARN or SNS subscription ARN that messages of a Lambda/SNS DLQ go back to when the message and the account's configuration do not settle it")
	opts.Selection.AddFlags(fl)
	opts.Selection.AddLogsFlags(fl)
	fl.IntVar(&opts.Max, "max", 0, "move at most N messages (0 = all)")
	fl.IntVar(&opts.MaxRedrives, "max-redrives", 3, "skip messages dlqctl already redrove this many times (0 = no limit)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "change nothing; print what would move where, what would be skipped, and how long it would take")
	opts.CanaryFlags.AddFlags(fl, "move N messages, then watch for --verify-for whether they come back (exit 3 if they do)")
	opts.PaceFlags.AddFlags(fl, "workers receiving, sending and deleting in parallel")
	fl.StringVar(&opts.MaxReturnsRaw, "max-returns", "", "guard: stop when more than this share of moved messages comes back to the DLQ (e.g. 5% or 0.05)")
	opts.GuardFlags.AddFlags(fl, "guard: stop when a destination has more than N visible messages")
	fl.StringVar(&opts.Engine, "engine", "dlqctl", "dlqctl (this pipeline) or native (SQS StartMessageMoveTask)")
	fl.DurationVar(&opts.Visibility, "visibility", 30*time.Second, "how long received messages stay hidden between heartbeats")
	fl.BoolVar(&opts.WaitInFlight, "wait-inflight", true, waitInFlightHelp)
	opts.Kafka.addFlags(fl)
	opts.Transform.AddFlags(fl, true)

	c.AddCommand(newCmdRedriveResume(f, runF), newCmdRedriveStatus(f), newCmdRedriveCancel(f))
	return c
}

func (o *RedriveOptions) validate(c *cobra.Command) error {
	if err := o.parseRefs(); err != nil {
		return err
	}
	if err := checkKafkaPair(o.DLQ, o.To); err != nil {
		return err
	}
	// --origin on another broker's DLQ is refused from the table
	// (refusals.go), before this.
	if o.Origin != "" && (!strings.EqualFold(o.To, "source") || o.Engine == "native") {
		return errs.BadInputf("--origin names where messages of an SQS DLQ fed by Lambda or SNS go back to: use it with --to source and --engine dlqctl on an SQS DLQ")
	}
	if err := o.PaceFlags.validate(); err != nil {
		return err
	}
	if err := o.GuardFlags.validate(); err != nil {
		return err
	}
	if err := o.CanaryFlags.validate(o.Max, o.DryRun); err != nil {
		return err
	}
	if o.Canary > 0 && o.Share != nil && o.Share.Shared() {
		return errs.BadInputf("--canary and --rate-share exclude each other: a canary watches the DLQ for returns, which peers would take first; run the canary alone, then start the peers with --rate-share")
	}
	share, err := redrive.ParseShare(o.MaxReturnsRaw)
	if err != nil {
		return errs.BadInputf("--max-returns %q is not a share; use a percentage like 5%% or a fraction like 0.05", o.MaxReturnsRaw)
	}
	o.MaxReturns = share
	switch {
	case o.Max < 0 || o.MaxRedrives < 0:
		return errs.BadInputf("--max and --max-redrives cannot be negative")
	case o.Visibility < 5*time.Second || o.Visibility > 12*time.Hour:
		return errs.BadInputf("--visibility must be between 5s and 12h (got %s)", o.Visibility)
	case strings.TrimSpace(o.To) == "":
		return errs.BadInputf("--to is empty; use --to source or a queue name, URL or ARN")
	}
	switch o.Engine {
	case "dlqctl":
	case "native":
		var bad []string
		for _, b := range []struct {
			flag  string
			given bool
		}{{"--filter/--rules/--class", o.Selection.Active()}, {"--canary", o.Canary > 0}, {"--max", o.Max > 0}, {"--dry-run", o.DryRun}, {"--transform", o.Transform.Active()}} {
			if b.given {
				bad = append(bad, b.flag)
			}
		}
		for _, name := range []string{"max-returns", "max-dest-backlog", "max-redrives", "concurrency"} {
			if c != nil && c.Flags().Changed(name) {
				bad = append(bad, "--"+name)
			}
		}
		if o.Share != nil && o.Share.Shared() {
			bad = append(bad, "--rate-share (SQS runs one move task per DLQ)")
		}
		if len(bad) > 0 {
			return errs.BadInputf("--engine native moves the whole DLQ and cannot honour %s; drop them or use --engine dlqctl", strings.Join(bad, ", "))
		}
		if err := nativeRates(o); err != nil {
			return err
		}
	default:
		return errs.BadInputf("--engine %q: use dlqctl or native", o.Engine)
	}
	if _, err := o.Selection.Selector(); err != nil {
		return err
	}
	if err := o.Transform.validate(true, o.DryRun); err != nil {
		return err
	}
	return o.derive()
}

// parseRefs checks and parses the DLQ and --to references once.
func (o *RedriveOptions) parseRefs() error {
	dlq, err := checkRef(o.DLQ)
	if err != nil {
		return err
	}
	o.dlq, o.to, o.toShown = dlq, nil, redactRef(o.To)
	if !strings.EqualFold(o.To, "source") {
		to, err := checkRef(o.To)
		if err != nil {
			return err
		}
		o.to = &to
	}
	return nil
}

// derive parses the validated flags into the typed values a run is
// opened with: --max-dest-lag, and the pace, guards and limits of the
// move (redrive.Options; the transform is the factory's), or the steps of
// --engine native. Options read from a run's journal are derived again.
func (o *RedriveOptions) derive() error {
	if o.Engine == "native" {
		o.nativeSteps = redrive.NativeSteps(o.Rate, o.Ramp)
		return nil
	}
	lags, err := redrive.ParseDestLag(o.Kafka.MaxDestLag)
	if err != nil {
		return err
	}
	o.destLag = lags
	o.move = redrive.Options{Max: o.Max, MaxRedrives: o.MaxRedrives, Concurrency: o.Concurrency,
		Guards:       o.GuardFlags.guards(o.MaxReturns),
		WaitInFlight: waitInFlight(o.WaitInFlight)}
	o.PaceFlags.apply(&o.move)
	return nil
}

// fingerprint identifies "the same command" for automatic resume: the DLQ,
// the destination and the selection (not the rate or guards).
func (o *RedriveOptions) fingerprint(dlqARN string) string {
	fp := []any{"redrive", dlqARN, o.To, o.Selection, o.Max, o.MaxRedrives, o.Canary}
	if o.Origin != "" {
		fp = append(fp, o.Origin)
	}
	if x := o.Transform.fingerprintPart(); x != "" {
		fp = append(fp, x)
	}
	b, _ := json.Marshal(fp)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// redriveRun opens everything the run needs in one factory call
// (Factory.openRedrive, which also refuses what the resolved DLQ cannot
// honour), hands it to one domain entry point and prints: the
// broker's own move (--engine native), the plan (--dry-run) or the run
// (redrive.Redrive).
func redriveRun(ctx context.Context, f *Factory, opts *RedriveOptions) error {
	s, err := f.openRedrive(ctx, opts)
	if err != nil {
		return err
	}
	defer s.close()
	switch {
	case s.native != nil:
		return s.moveNative(ctx)
	case s.planPub != nil:
		return s.plan(ctx)
	}
	return s.redrive(ctx)
}

// sqsCloseWarning is what a run says when giving back the SQS messages it
// held failed.
const sqsCloseWarning = "releasing held messages: %v (they become visible again when their visibility timeout ends)"

// finishMove ends a redrive or restore run (out, or err when it never
// started): the progress, the summary, the warnings and notes; the run's
// own verdict (out.Err: partial, canary verdict, interrupted) is the
// command's, else what after (nil: nothing) says of a completed run.
// closeWarning formats the failure to give back what the source still
// held ("" for a source that holds nothing).
func finishMove(f *Factory, prog *output.Progress, out *redrive.Outcome, err error, kind, closeWarning string, summary func(*redrive.Outcome) error, after func() error) error {
	prog.Done()
	if err != nil {
		return err
	}
	if out.CloseErr != nil && closeWarning != "" {
		f.IO.Warnf(closeWarning, out.CloseErr)
	}
	if err := summary(out); err != nil {
		return err
	}
	if errs.Code(out.Err) != errs.ExitUsage {
		warnFilterErrors(f, out.Result.FilterErrors, "stay in the "+map[bool]string{true: "archive", false: "DLQ"}[kind == "restore"])
	}
	report.CrashDuplicates(f.IO, out.Result)
	if out.Err == nil && after != nil {
		return after()
	}
	return out.Err
}

// withUnconfirmedNote adds to a run's OnJournal the note a resumed run
// gives when the journal holds sends whose outcome was never recorded.
func withUnconfirmedNote(f *Factory, next func(*redrive.Journal)) func(*redrive.Journal) {
	return func(j *redrive.Journal) {
		if n := len(j.UnconfirmedAtOpen()); n > 0 {
			f.IO.Infof("run %s: %d message(s) were being sent when the process died, and whether their copy arrived was never recorded: those still in the source are sent again and reported as possibly delivered twice", j.Meta().ID, n)
		}
		if next != nil {
			next(j)
		}
	}
}

// waitHeldInfo tells that a resumed run waits for the messages an earlier
// attempt held (it did not stop cleanly).
func waitHeldInfo(f *Factory, runID string, wait time.Duration) {
	f.IO.Infof("run %s did not stop cleanly: waiting %s for the messages it held to become visible again", runID, wait.Round(time.Second))
}

// progressReporter renders a redrive-pipeline run (redrive or restore, named
// by op) as the progress bar / NDJSON events.
func progressReporter(p *output.Progress, op string) redrive.Reporter {
	return redrive.Reporter{
		Progress: func(s redrive.Snapshot) {
			p.Update(output.Stats{Op: op, Done: s.Moved, Total: s.Total, Skipped: s.Skipped, Failed: s.Failed,
				Rate: s.Rate, Target: s.Target, Elapsed: s.Elapsed.Seconds(), ETA: s.ETA.Seconds(), Guard: s.Guard}, false)
		},
		Message: func(ev redrive.MessageEvent) {
			p.Message(output.MessageEvent{MessageID: ev.MessageID, Action: ev.Action, Destination: ev.Destination,
				DestID: ev.DestID, Class: ev.Class, Reason: ev.Reason})
		},
		Guard: func(ev redrive.GuardEvent) {
			p.Guard(output.GuardEvent{Name: ev.Name, State: ev.State, Value: ev.Value, Limit: ev.Limit, Detail: ev.Detail})
		},
	}
}

// RedriveSummary is the JSON summary of a run (report.RedriveSummary).
type RedriveSummary = report.RedriveSummary

// RedrivePlanOutput is the JSON of --dry-run (report.RedrivePlanOutput).
type RedrivePlanOutput = report.RedrivePlanOutput
