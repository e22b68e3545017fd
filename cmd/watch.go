package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
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
		Long: withExitCodes(`(A Kafka topic, kafka://HOST:PORT/TOPIC, is watched by its records pending
for dlqctl's group.)

Watch a DLQ: every --interval, read its visible, in-flight and delayed
counts, the growth per minute (change of visible + in flight + delayed over up
to the last minute) and any running message move task out of it. Nothing is
received: watching has no side effects.

On a terminal the view refreshes in place; when piped, each tick is one
tab-separated line: time, visible, in-flight, delayed, growth/min ("-" on the
first tick) and the move task ("-" when none). -o json and -o ndjson print
one JSON object per tick.

On RabbitMQ (amqp://…/VHOST/QUEUE) visible is the queue's ready count
(exact), in-flight what consumers hold unacknowledged (management API),
delayed always 0, and the move task "-" (RabbitMQ has none; the terminal
view shows the consumers attached instead).

Runs until Ctrl-C (exit 130) or, with --count N, stops after N ticks (exit 0).`),
		Example: `  dlqctl watch orders-dlq
  dlqctl watch orders-dlq --interval 30s | tee dlq-depth.tsv
  dlqctl watch orders-dlq --count 6 --interval 10s -o ndjson`,
		Args: exactArgs(1, "one DLQ (name, URL or ARN)"),
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

func watchRun(ctx context.Context, opts *WatchOptions) error {
	f := opts.F
	if isAMQPRef(opts.Queue) {
		return amqpWatchRun(ctx, opts)
	}
	if isKafkaRef(opts.Queue) {
		return kafkaWatchRun(ctx, opts)
	}
	c, q, err := f.ResolveQueue(ctx, opts.Queue)
	if err != nil {
		return err
	}
	format, _ := f.Format()
	var nd *output.NDJSONWriter
	if format != output.Table {
		nd = output.NewNDJSON(f.IO.Out)
	}
	warned := false
	return health.Watch(ctx, c, q, health.WatchOptions{Interval: opts.Interval, Count: opts.Count}, func(t health.Tick) error {
		if t.MoveTaskError != "" && !warned {
			warned = true
			f.IO.Warnf("cannot list move tasks of %s: %s", q.Name, t.MoveTaskError)
		}
		switch {
		case nd != nil:
			return nd.Write(t)
		case f.IO.OutTTY:
			_, err := fmt.Fprint(f.IO.Out, watchFrame(q, opts.Interval, t))
			return err
		default:
			_, err := fmt.Fprintln(f.IO.Out, strings.Join([]string{
				t.At.Format(time.RFC3339), fmt.Sprint(t.Counts.Visible), fmt.Sprint(t.Counts.InFlight), fmt.Sprint(t.Counts.Delayed),
				growthText(t.GrowthPerMinute), moveTaskText(t.MoveTasks),
			}, "\t"))
			return err
		}
	})
}

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

func watchFrame(q *sqs.Queue, interval time.Duration, t health.Tick) string {
	var b strings.Builder
	b.WriteString(clearScreen)
	fmt.Fprintf(&b, "dlqctl watch %s  every %s  %s  (Ctrl-C to stop)\n\n", q.Name, interval, t.At.Local().Format("15:04:05"))
	fmt.Fprintf(&b, "  visible     %d\n", t.Counts.Visible)
	fmt.Fprintf(&b, "  in-flight   %d\n", t.Counts.InFlight)
	fmt.Fprintf(&b, "  delayed     %d\n", t.Counts.Delayed)
	fmt.Fprintf(&b, "  growth/min  %s\n", growthText(t.GrowthPerMinute))
	mt := moveTaskText(t.MoveTasks)
	if mt == "-" {
		mt = "none"
	}
	if t.MoveTaskError != "" {
		mt = "unknown (" + t.MoveTaskError + ")"
	}
	fmt.Fprintf(&b, "  move task   %s\n", mt)
	return b.String()
}

func growthText(g *float64) string {
	if g == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f", *g)
}

func moveTaskText(ts []health.MoveTask) string {
	if len(ts) == 0 {
		return "-"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		s := fmt.Sprintf("%s %d", t.Status, t.Moved)
		if t.ToMove != nil {
			s += fmt.Sprintf("/%d", *t.ToMove)
		}
		s += " moved"
		dest := sqs.NameFromARN(t.DestinationARN)
		if dest == "" {
			dest = "original sources"
		}
		s += " -> " + dest
		if t.MaxPerSecond != nil {
			s += fmt.Sprintf(" at %d/s", *t.MaxPerSecond)
		}
		parts[i] = s
	}
	return strings.Join(parts, "; ")
}
