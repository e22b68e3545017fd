package cmd

import (
	"context"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// CheckOptions are the inputs of `dlqctl check`.
type CheckOptions struct {
	F     *Factory
	Queue string
	health.Thresholds
	Sample       int
	Visibility   time.Duration
	GrowthSample time.Duration
	// DefaultedVisible is true when no threshold flag was given and
	// --max-visible 0 applies.
	DefaultedVisible bool
	visibilitySet    bool // --visibility given (refused on RabbitMQ)
}

// NewCmdCheck builds `dlqctl check`.
func NewCmdCheck(f *Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{F: f}
	var (
		maxVisible int
		maxAge     dayDuration
		maxGrowth  string
	)
	c := &cobra.Command{
		Use:   "check DLQ [--max-visible N] [--max-age D] [--max-growth N/5m]",
		Short: "One-shot threshold check of a DLQ for cron, CI and monitoring agents",
		Long: withExitCodes(`Check a DLQ on any broker (an SQS queue; a RabbitMQ queue,
amqp://…/VHOST/QUEUE; a Kafka dead-letter topic, kafka://HOST:PORT/TOPIC)
against thresholds and print one line per threshold: its
status (ok, breach or unknown), the value and the limit. Exit 3 when any
threshold is breached; unknown never fails. With no threshold flag, check
uses --max-visible 0: any visible message is a breach.

  --max-visible N    the messages a read could return now, above N: SQS's
                     ApproximateNumberOfMessages (approximate), RabbitMQ's
                     ready count (exact), the records pending for dlqctl's
                     Kafka group (end − committed, an upper bound).
  --max-age D        the oldest message. Kafka knows it (the first pending
                     record of each partition: exact). Elsewhere it is the
                     oldest of a SAMPLE of up to --sample messages read and
                     given back (SQS has no API for the true oldest; on
                     RabbitMQ the head of the queue, aged from each message's
                     timestamp, else its first death). A sample can only
                     under-estimate: a breach is certain, an ok is as good as
                     the sample. Sampling SQS receives messages (their
                     ApproximateReceiveCount goes up) and releases them; a
                     RabbitMQ quorum queue with a delivery limit is not
                     peeked (each return counts): unknown, with the reason.
  --max-growth N/W   more than N new messages per window W (e.g. 50/5m).
                     Growth compares the depth (visible + in flight + delayed)
                     with a reading saved by an earlier run in
                     --state-dir/check: the saved reading whose age is closest
                     to W (and at least W/2) is used, and the change is scaled
                     to W. Run check every W from cron and growth is exact.
                     The first run has nothing to compare with and reports
                     unknown, unless --growth-sample D is given: then check
                     takes a second reading after D and scales that change.
                     Not on Kafka yet (exit 2).
  --visibility D     how long sampled SQS messages stay hidden between
                     heartbeats; refused where messages are not held with a
                     lease (RabbitMQ, Kafka: exit 2).

The detail of each line says how the value was measured, in the broker's
words; -o json prints the report as one JSON document for machines
(counts.exact and each threshold's exact say whether the broker counted
exactly). RabbitMQ needs its management API (unacknowledged messages).

Exit 3 is a breach. Exit 2 means check could not look: no credentials or
region, an unknown queue or topic, or AccessDenied (the message names the
IAM action, 'dlqctl help iam'); exit 1 an error. A monitor should alert on those too.`),
		Example: `  dlqctl check orders-dlq                       # any message is a breach
  dlqctl check orders-dlq --max-visible 100 --max-age 2h --max-growth 50/5m
  */5 * * * * dlqctl check orders-dlq --max-growth 20/5m -o json || page-oncall
  dlqctl check 'amqp://ops@rabbit:5672/%2f/orders.dlq' --max-visible 100 --max-age 2h
  dlqctl check kafka://kafka-1:9092/orders-dlt --max-visible 0 --max-age 1h`,
		Args: exactArgs(1, "one DLQ (an SQS name, URL or ARN, amqp://…/VHOST/QUEUE or kafka://HOST:PORT/TOPIC)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Queue = args[0]
			fl := c.Flags()
			if fl.Changed("max-visible") {
				if maxVisible < 0 {
					return errs.BadInputf("--max-visible must be 0 or more, got %d", maxVisible)
				}
				opts.MaxVisible = &maxVisible
			}
			if fl.Changed("max-age") {
				if maxAge <= 0 {
					return errs.BadInputf("--max-age must be a positive duration such as 30m or 2d, got %s", maxAge.String())
				}
				opts.MaxAge = time.Duration(maxAge)
			}
			if fl.Changed("max-growth") {
				g, err := health.ParseGrowthLimit(maxGrowth)
				if err != nil {
					return err
				}
				opts.MaxGrowth = &g
			}
			if opts.MaxVisible == nil && opts.MaxAge == 0 && opts.MaxGrowth == nil {
				zero := 0
				opts.MaxVisible, opts.DefaultedVisible = &zero, true
			}
			if opts.Sample < 1 {
				return errs.BadInputf("--sample must be at least 1, got %d", opts.Sample)
			}
			if opts.GrowthSample < 0 {
				return errs.BadInputf("--growth-sample must be 0 (off) or a positive duration, got %s", opts.GrowthSample)
			}
			if opts.GrowthSample > 0 && opts.MaxGrowth == nil {
				return errs.BadInputf("--growth-sample only applies with --max-growth; add --max-growth N/5m or drop it")
			}
			if err := checkVisibilityFlag(opts.Visibility); err != nil {
				return err
			}
			opts.visibilitySet = fl.Changed("visibility")
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return checkRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.IntVar(&maxVisible, "max-visible", 0, "breach when more than N messages are visible")
	fl.Var(&maxAge, "max-age", "breach when the oldest message (sampled where the broker does not know it) is older than D (e.g. 30m, 2d)")
	fl.StringVar(&maxGrowth, "max-growth", "", "breach when more than N messages arrive per window, written N/WINDOW (e.g. 50/5m)")
	fl.IntVar(&opts.Sample, "sample", 20, "messages to sample for --max-age (20, where group and classify read 1000: a check runs every few minutes, and each sampled message is hidden from the consumers for --visibility)")
	fl.DurationVar(&opts.Visibility, "visibility", 30*time.Second, "how long sampled SQS messages stay hidden between heartbeats")
	fl.DurationVar(&opts.GrowthSample, "growth-sample", 0, "with no saved reading old enough, measure growth over this long now (e.g. 30s)")
	return c
}

// checkRun is check on every broker: one depth reading (Endpoint.Depth,
// or the broker's DepthReader), the oldest age from the broker where it
// knows it or from a sample, growth against readings saved in
// --state-dir/check.
func checkRun(ctx context.Context, opts *CheckOptions) error {
	f := opts.F
	ep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return endpointErr(err)
	}
	defer broker.CloseEndpoint(ep)
	// --visibility and --max-growth on brokers that cannot honour them
	// were refused before anything connected (cmd/refusals.go).
	stateDir := filepath.Join(f.StateDir(), "check")
	rep, err := health.Check(ctx, ep, health.CheckOptions{
		Thresholds: opts.Thresholds, SampleMax: opts.Sample, SampleVisibility: opts.Visibility,
		History: health.FileHistory{Dir: stateDir}, GrowthSample: opts.GrowthSample,
		OnSample: func(n int) {
			if w, ok := ep.(broker.PeekWarner); ok {
				for _, s := range w.PeekWarnings() {
					f.IO.Warnf("%s", s)
				}
			}
			f.Verbosef("reading up to %d messages of %s for --max-age (all are given back)", n, ep.Name())
		},
		OnWait: func(d time.Duration) {
			f.Verbosef("no saved reading of %s is old enough; measuring growth over %s", ep.Name(), d)
		},
	})
	if err != nil {
		return endpointErr(err)
	}
	if opts.MaxGrowth != nil {
		f.Verbosef("depth readings are kept in %s", stateDir)
	}
	if opts.DefaultedVisible {
		f.Verbosef("no threshold given: using --max-visible 0")
	}
	format, _ := f.Format()
	return report.WriteCheck(f.IO, format, rep, ep.Name())
}

// endpointErr makes a queue or topic that does not exist bad input (exit
// 2, nothing changed) on every broker.
func endpointErr(err error) error {
	// Nothing was read or changed yet: unreachable, refused or missing
	// is bad input (exit 2) on every broker.
	return broker.StartError(err)
}
