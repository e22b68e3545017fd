package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// WatchOptions are the inputs of `dlqctl watch`.
type WatchOptions struct {
	F        *Factory
	Queue    string
	Interval time.Duration
	Count    int
}

// minWatchInterval keeps watch from hammering the API.
const minWatchInterval = 100 * time.Millisecond

// NewCmdWatch builds `dlqctl watch`.
func NewCmdWatch(f *Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{F: f}
	c := &cobra.Command{
		Use:   "watch DLQ [--interval 10s] [--count N]",
		Short: "Live view of a DLQ's depth, growth and move tasks",
		Long: withExitCodes(`Watch a DLQ on any broker (an SQS queue; a RabbitMQ queue,
amqp://…/VHOST/QUEUE; a Kafka topic, kafka://HOST:PORT/TOPIC): every
--interval, read its depth — visible, in flight and delayed — the growth per
minute (change of visible + in flight + delayed over up to the last minute)
and any move the broker runs itself out of it (an SQS message move task).
Nothing is received: watching has no side effects.

What the counts are, per broker: SQS's approximate visible, in-flight and
delayed counts; RabbitMQ's exact ready count and what consumers hold
unacknowledged (management API), delayed 0; the records pending for
dlqctl's Kafka group (end − committed), in flight and delayed 0. RabbitMQ and
Kafka have no move tasks ("-").

On a terminal the view refreshes in place, in the broker's words (on
RabbitMQ with the consumers attached); when piped, each tick is one
tab-separated line with the same columns on every broker: time, visible,
in-flight, delayed, growth/min ("-" on the first tick) and the move task
("-" when none). -o json and -o ndjson print one JSON object per tick.

Runs until Ctrl-C (exit 130) or, with --count N, stops after N ticks (exit 0).`),
		Example: `  dlqctl watch orders-dlq
  dlqctl watch orders-dlq --interval 30s | tee dlq-depth.tsv
  dlqctl watch orders-dlq --count 6 --interval 10s -o ndjson
  dlqctl watch kafka://kafka-1:9092/orders-dlt --interval 30s`,
		Args: exactArgs(1, "one DLQ (an SQS name, URL or ARN, amqp://…/VHOST/QUEUE or kafka://HOST:PORT/TOPIC)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Queue = args[0]
			if opts.Interval < minWatchInterval {
				return errs.BadInputf("--interval must be at least %s, got %s", minWatchInterval, opts.Interval)
			}
			if opts.Count < 0 {
				return errs.BadInputf("--count must be 0 (run until Ctrl-C) or more, got %d", opts.Count)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return watchRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.DurationVar(&opts.Interval, "interval", 10*time.Second, "time between readings")
	fl.IntVar(&opts.Count, "count", 0, "stop after N readings (0: until Ctrl-C)")
	return c
}

// watchRun is watch on every broker: health.Watch reads the depth each
// --interval (and the moves the broker runs itself, where it has them).
func watchRun(ctx context.Context, opts *WatchOptions) error {
	f := opts.F
	ep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return endpointErr(err)
	}
	defer broker.CloseEndpoint(ep)
	format, _ := f.Format()
	var nd *output.NDJSONWriter
	if format != output.Table {
		nd = output.NewNDJSON(f.IO.Out)
	}
	warned := false
	err = health.Watch(ctx, ep, health.WatchOptions{Interval: opts.Interval, Count: opts.Count}, func(t health.Tick) error {
		if t.MoveTaskError != "" && !warned {
			warned = true
			f.IO.Warnf("cannot list move tasks of %s: %s", ep.Name(), t.MoveTaskError)
		}
		return report.WriteWatchTick(f.IO, nd, ep.Name(), opts.Interval, t)
	})
	return endpointErr(err)
}
