package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// amqpWatchRun is watch for a RabbitMQ DLQ: every --interval the ready
// count (queue.declare, exact) and what consumers hold unacknowledged
// (management API), and the growth per minute of their sum, in the same
// ticks as for SQS. RabbitMQ has no move tasks: the column is "-", and the
// terminal view shows the consumers attached instead (a dlqctl run is one).
// Nothing is consumed.
func amqpWatchRun(ctx context.Context, opts *WatchOptions) error {
	f := opts.F
	gep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return err
	}
	ep, ok := gep.(*amqp.Endpoint)
	if !ok {
		return errs.BadInputf("%s is not a RabbitMQ queue", gep)
	}
	if err := ep.NeedManagement("watch (consumers' unacknowledged messages)"); err != nil {
		return errs.BadInput(err)
	}
	format, _ := f.Format()
	var nd *output.NDJSONWriter
	if format != output.Table {
		nd = output.NewNDJSON(f.IO.Out)
	}
	var history []health.Reading
	timer := time.NewTimer(0)
	defer timer.Stop()
	for seq := 1; opts.Count == 0 || seq <= opts.Count; seq++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		start := time.Now()
		d, err := ep.Depth(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		consumers := -1
		if qi, err := ep.Management().Queue(ctx, ep.Ref().VHost, ep.Ref().Queue); err == nil {
			consumers = qi.Consumers
		}
		t := health.Tick{Seq: seq, At: time.Now().UTC(), Counts: sqs.Counts{Visible: int(d.Ready), InFlight: int(d.Held)}, MoveTasks: []health.MoveTask{}}
		now := health.Reading{At: t.At, Counts: t.Counts}
		if rate, ok := health.GrowthRate(history, now, health.GrowthWindow, 0); ok {
			t.GrowthPerMinute = &rate.PerWindow
		}
		history = append(history, now)
		for len(history) > 1 && now.At.Sub(history[1].At) >= health.GrowthWindow {
			history = history[1:]
		}
		switch {
		case nd != nil:
			err = nd.Write(t)
		case f.IO.OutTTY:
			_, err = fmt.Fprint(f.IO.Out, amqpWatchFrame(ep.Name(), opts.Interval, t, consumers))
		default:
			_, err = fmt.Fprintln(f.IO.Out, strings.Join([]string{
				t.At.Format(time.RFC3339), fmt.Sprint(t.Counts.Visible), fmt.Sprint(t.Counts.InFlight), "0",
				growthText(t.GrowthPerMinute), "-",
			}, "\t"))
		}
		if err != nil {
			return err
		}
		timer.Reset(max(0, opts.Interval-time.Since(start)))
	}
	return nil
}

func amqpWatchFrame(name string, interval time.Duration, t health.Tick, consumers int) string {
	var b strings.Builder
	b.WriteString(clearScreen)
	fmt.Fprintf(&b, "dlqctl watch %s  every %s  %s  (Ctrl-C to stop)\n\n", name, interval, t.At.Local().Format("15:04:05"))
	fmt.Fprintf(&b, "  ready       %d\n", t.Counts.Visible)
	fmt.Fprintf(&b, "  unacked     %d\n", t.Counts.InFlight)
	fmt.Fprintf(&b, "  growth/min  %s\n", growthText(t.GrowthPerMinute))
	c := "unknown (management API)"
	if consumers >= 0 {
		c = fmt.Sprint(consumers)
	}
	fmt.Fprintf(&b, "  consumers   %s\n", c)
	return b.String()
}
