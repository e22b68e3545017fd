package health

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// GrowthWindow is the window watch reports growth over (per minute).
const GrowthWindow = time.Minute

// MoveTask is a move the broker runs itself out of the watched queue (an
// SQS message move task).
type MoveTask = broker.MoveTask

// Tick is one sample of a watched queue (watch -o ndjson prints one per line).
type Tick struct {
	Seq    int       `json:"tick"`
	At     time.Time `json:"at"`
	Counts Counts    `json:"counts"`
	// GrowthPerMinute is the change in depth (visible + in flight +
	// delayed) per minute over up to the last minute; nil on the first tick.
	GrowthPerMinute *float64 `json:"growth_per_minute"`
	// MoveTasks are the running move tasks whose source is this queue
	// (always empty on a broker without them).
	MoveTasks []MoveTask `json:"move_tasks"`
	// MoveTaskError says why move tasks could not be listed (the rest of
	// the tick is still valid).
	MoveTaskError string `json:"move_task_error,omitempty"`

	// Terms are the broker's words for the counts; ListsMoves says the
	// broker runs move tasks (so "none" means none); Gauges are the
	// broker's further figures. For the terminal view only.
	Terms      broker.DepthTerms `json:"-"`
	ListsMoves bool              `json:"-"`
	Gauges     []broker.Gauge    `json:"-"`
}

// WatchOptions configure Watch.
type WatchOptions struct {
	Interval time.Duration
	// Count stops after this many ticks (0: until ctx is cancelled).
	Count int
	Now   func() time.Time
}

// Watch reads the depth of the queue ep names (and the moves its broker
// runs out of it, where it has them) every Interval, the first time at
// once, and hands each Tick to fn. Nothing is read from the queue itself.
// It returns nil after Count ticks, ctx.Err() when cancelled, or the first
// error of fn or of reading the depth.
func Watch(ctx context.Context, ep broker.Endpoint, opts WatchOptions, fn func(Tick) error) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	mover, lists := ep.(broker.MoveTaskLister)
	var history []Reading
	timer := time.NewTimer(0)
	defer timer.Stop()
	for seq := 1; opts.Count == 0 || seq <= opts.Count; seq++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		start := time.Now()
		d, err := depthOf(ctx, ep, false)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		c := countsOf(d)
		t := Tick{Seq: seq, At: opts.Now().UTC(), Counts: c, MoveTasks: []MoveTask{}, Terms: c.words(), ListsMoves: lists, Gauges: d.Gauges}
		now := Reading{At: t.At, Counts: t.Counts}
		if rate, ok := GrowthRate(history, now, GrowthWindow, 0); ok {
			t.GrowthPerMinute = &rate.PerWindow
		}
		history = append(history, now)
		// Keep a little more than one window: enough to pick the reading
		// closest to a minute ago.
		for len(history) > 1 && now.At.Sub(history[1].At) >= GrowthWindow {
			history = history[1:]
		}
		if lists {
			tasks, err := mover.RunningMoveTasks(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				t.MoveTaskError = err.Error()
			} else {
				t.MoveTasks = tasks
			}
		}
		if err := fn(t); err != nil {
			return err
		}
		timer.Reset(max(0, opts.Interval-time.Since(start)))
	}
	return nil
}
