package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/report"
	"github.com/dlqctl/dlqctl/pkg/triage"
)

// SampleOptions are the inputs of `dlqctl sample`.
type SampleOptions struct {
	// flags are the command's flags, to refuse those the queue's broker
	// cannot honour (refuseFlags).
	flags      *pflag.FlagSet
	F          *Factory
	Queue      string
	From       string
	N          int
	ScanMax    int
	Visibility time.Duration
	Filter     string
	Redact     []string
	NoRedact   bool
	Logs       LogsFlags
}

// NewCmdSample builds `dlqctl sample`.
func NewCmdSample(f *Factory, runF func(context.Context, *SampleOptions) error) *cobra.Command {
	opts := &SampleOptions{F: f}
	c := &cobra.Command{
		Use:   "sample QUEUE [-n 10] [--filter EXPR]",
		Short: "Peek at messages without consuming them",
		Long: withExitCodes(`Peek at up to N messages of a queue without consuming them. Messages are
received (hidden for --visibility while dlqctl holds them), turned into
message records, and released (visibility 0) before dlqctl exits, also on
Ctrl-C and on errors. Nothing is deleted.

QUEUE is an SQS queue name, URL or ARN (or sqs://NAME), a RabbitMQ queue
amqp://USER@HOST:PORT/VHOST/QUEUE (peeked with manual acks and requeued;
docs/rabbitmq.md), or a Kafka topic kafka://HOST:PORT/TOPIC (read from
dlqctl's group's committed offsets to the end offsets at the start,
read_committed, nothing committed; docs/kafka.md); 'dlqctl help addresses'
has every form. --from reads records from a file written by
'sample -o ndjson' instead (- for stdin).

Side effects to know: every receive increments ApproximateReceiveCount; if
the DLQ itself has a RedrivePolicy, peeking counts toward moving messages on;
on a FIFO queue a peeked message blocks its group until it is released.

Secret-looking values (password, token, authorization, api_key,
card_number, cvv, ssn, … at any depth) are masked in all output by default;
--redact adds key names or dotted body paths, --no-redact shows raw values.

` + LogsHelp + `

` + inspect.ExprHelp),
		Example: `  dlqctl sample orders-dlq
  dlqctl sample orders-dlq -n 50 --filter '.envelope.event_type == "OrderPaid"' -o ndjson > paid.ndjson
  dlqctl sample --from paid.ndjson -o json
  dlqctl sample orders-dlq -n 20 --logs /aws/lambda/orders-consumer -o ndjson > with-failures.ndjson`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.From != "" {
				return exactArgs(0, "no QUEUE with --from")(c, args)
			}
			return exactArgs(1, "one QUEUE (name, URL or ARN)")(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Queue = args[0]
			}
			opts.flags = c.Flags()
			if opts.N <= 0 {
				return errs.BadInputf("-n must be at least 1 (got %d)", opts.N)
			}
			if opts.Visibility < 5*time.Second || opts.Visibility > 12*time.Hour {
				return errs.BadInputf("--visibility must be between 5s and 12h (got %s)", opts.Visibility)
			}
			if err := opts.Logs.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return sampleRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.IntVarP(&opts.N, "number", "n", 10, "how many messages to show")
	fl.IntVar(&opts.ScanMax, "scan-max", 10000, "with --filter, read at most this many messages looking for matches")
	fl.DurationVar(&opts.Visibility, "visibility", 30*time.Second, "how long peeked messages stay hidden between heartbeats")
	fl.StringVar(&opts.Filter, "filter", "", "jq expression over the message record; keep messages where it is true (one that raises an error on a message does not show it and is counted; one that fails on every message read exits 2)")
	fl.StringSliceVar(&opts.Redact, "redact", nil, "extra keys or dotted body paths to mask (comma-separated)")
	fl.BoolVar(&opts.NoRedact, "no-redact", false, "show secret-looking values unmasked")
	fl.StringVar(&opts.From, "from", "", fromFlagHelp)
	opts.Logs.AddFlags(fl)
	return c
}

func sampleRun(ctx context.Context, opts *SampleOptions) error {
	f := opts.F
	filter, err := inspect.CompileFilter(opts.Filter)
	if err != nil {
		return err
	}
	sel, err := classify.NewSelector(nil, nil, filter)
	if err != nil {
		return err
	}
	watchFilterErrors(f, sel)
	var redactor *inspect.Redactor
	if !opts.NoRedact {
		redactor = inspect.NewRedactor(opts.Redact)
	}
	in := InputOptions{Queue: opts.Queue, From: opts.From, Max: opts.N, Visibility: opts.Visibility,
		Refuse: func(caps broker.Capabilities) error { return refuseFlags(caps, opts.flags, false) }}
	if filter != nil {
		in.Max = max(opts.ScanMax, opts.N)
	}
	if opts.From == "" {
		if err := warnPeekSideEffects(ctx, f, opts.Queue); err != nil {
			return err
		}
	}
	lk, err := newLogsLookup(ctx, f, &opts.Logs)
	if err != nil {
		return err
	}
	recs, res, err := triage.Sample(ctx, f.reader(), in, opts.N, sel, redactor, lk)
	if err != nil {
		return err
	}
	if _, err := endSelection(f, sel, "are not shown"); err != nil {
		return err
	}
	switch {
	case res.Scan != nil && res.Scan.Partial():
		// FIFO groups locked behind the messages read, or messages in
		// flight elsewhere: more --scan-max would not help.
		f.IO.Warnf("%s", res.Scan.Note)
	case res.Scan != nil && filter != nil && len(recs) < opts.N && !res.Scan.Complete:
		f.IO.Warnf("read %d messages (--scan-max) and found %d matching; raise --scan-max to look further", res.Scan.Seen, len(recs))
	}
	if res.Queue != nil {
		f.Verbosef("read %d distinct messages from %s (depth at start: %d visible); all released", res.Scan.Seen, res.Queue.Name(), res.Scan.Depth.Ready)
	}
	format, _ := f.Format()
	return report.WriteRecords(f.IO, format, recs)
}
