package cmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// amqpCheckRun is check for a RabbitMQ DLQ: the same thresholds and report.
// visible is the queue's ready count (queue.declare, exact); in flight is
// what consumers hold unacknowledged (management API). --max-age peeks the
// head of the queue (classic queues keep their order, so the head is the
// oldest) and ages each message from its timestamp property, or its first
// death when it has none. --max-growth compares depth readings (ready +
// unacknowledged) like on SQS.
func amqpCheckRun(ctx context.Context, opts *CheckOptions) error {
	f := opts.F
	gep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return err
	}
	ep, ok := gep.(*amqp.Endpoint)
	if !ok {
		return errs.BadInputf("%s is not a RabbitMQ queue", gep)
	}
	if err := ep.NeedManagement("check (consumers' unacknowledged messages and the queue type)"); err != nil {
		return errs.BadInput(err)
	}
	d, err := ep.Depth(ctx)
	if err != nil {
		return err
	}
	at := time.Now().UTC()
	counts := sqs.Counts{Visible: int(d.Ready), InFlight: int(d.Held)}
	rep := &health.CheckReport{Queue: ep.Name(), QueueURL: ep.String(), CheckedAt: at, Counts: counts, Results: []health.Result{}}
	if opts.MaxVisible != nil {
		r := health.VisibleResult(counts, *opts.MaxVisible)
		r.Detail = fmt.Sprintf("%d ready (%d unacknowledged by consumers)", counts.Visible, counts.InFlight)
		rep.Results = append(rep.Results, r)
	}
	if opts.MaxAge > 0 {
		r, err := amqpAgeResult(ctx, f, opts, counts)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if opts.MaxGrowth != nil {
		r, err := amqpGrowthResult(ctx, f, opts, ep, health.Reading{At: at, Counts: counts})
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	rep.OK = len(rep.Breaches()) == 0
	if opts.DefaultedVisible {
		f.Verbosef("no threshold given: using --max-visible 0")
	}
	return printCheckReport(f, rep, ep.Name())
}

// amqpAgeResult peeks up to --sample messages at the head of the queue.
func amqpAgeResult(ctx context.Context, f *Factory, opts *CheckOptions, c sqs.Counts) (health.Result, error) {
	oldest, sampled := time.Duration(0), 0
	if c.Visible > 0 {
		f.Verbosef("peeking up to %d messages at the head of %s for --max-age (all are returned)", opts.Sample, opts.Queue)
		_, err := f.ForEachRecord(ctx, InputOptions{Queue: opts.Queue, Max: opts.Sample}, func(rec *record.Record, _ any) error {
			sampled++
			oldest = max(oldest, time.Duration(rec.AgeSeconds)*time.Second)
			return nil
		})
		if errors.Is(err, amqp.ErrPeekUnsafe) {
			return health.Result{Name: "oldest_age", Status: health.StatusUnknown, Limit: opts.MaxAge.Seconds(), Unit: "seconds",
				Detail: "not peeked: " + err.Error()}, nil
		}
		if err != nil {
			return health.Result{}, err
		}
	}
	r := health.AgeResult(oldest, sampled, c, opts.MaxAge)
	if sampled > 0 {
		r.Detail = fmt.Sprintf("oldest of the %d messages at the head of the queue (of %d ready), from each message's timestamp or first death", sampled, c.Visible)
		if sampled >= c.Visible {
			r.Detail = fmt.Sprintf("oldest of all %d ready messages, from each message's timestamp or first death", sampled)
		}
	}
	return r, nil
}

// amqpGrowthResult compares the depth with a saved reading (or one taken
// --growth-sample later), keyed by the queue's reference without
// credentials.
func amqpGrowthResult(ctx context.Context, f *Factory, opts *CheckOptions, ep *amqp.Endpoint, now health.Reading) (health.Result, error) {
	lim := *opts.MaxGrowth
	hist := health.FileHistory{Dir: filepath.Join(f.StateDir(), "check")}
	key := ep.ID()
	history, err := hist.Load(key)
	if err != nil {
		return health.Result{}, fmt.Errorf("reading the previous depth of %s: %w", ep.Name(), err)
	}
	rate, ok := health.GrowthRate(history, now, lim.Window, lim.Window/2)
	latest, measured := now, ""
	if !ok && opts.GrowthSample > 0 {
		f.Verbosef("no saved reading of %s is old enough; measuring growth over %s", ep.Name(), opts.GrowthSample)
		select {
		case <-ctx.Done():
			return health.Result{}, ctx.Err()
		case <-time.After(opts.GrowthSample):
		}
		d, err := ep.Depth(ctx)
		if err != nil {
			return health.Result{}, err
		}
		latest = health.Reading{At: time.Now().UTC(), Counts: sqs.Counts{Visible: int(d.Ready), InFlight: int(d.Held)}}
		rate, ok = health.GrowthRate([]health.Reading{now}, latest, lim.Window, 0)
		measured = " (measured now: no stored reading was old enough)"
	}
	history = append(history, now)
	if latest != now {
		history = append(history, latest)
	}
	if err := hist.Save(key, health.Trim(history, latest.At)); err != nil {
		return health.Result{}, fmt.Errorf("saving the depth reading of %s: %w", ep.Name(), err)
	}
	f.Verbosef("depth readings are kept in %s", hist.Dir)
	return health.GrowthResult(rate, ok, lim, measured), nil
}
