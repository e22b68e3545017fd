package health

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// GrowthWindow is the window watch reports growth over (per minute).
const GrowthWindow = time.Minute

// MoveTask is a running SQS message move task out of the watched queue.
type MoveTask struct {
	Status         string    `json:"status"`
	DestinationARN string    `json:"destination_arn,omitempty"`
	Moved          int64     `json:"moved"`
	ToMove         *int64    `json:"to_move,omitempty"`
	MaxPerSecond   *int32    `json:"max_per_second,omitempty"`
	StartedAt      time.Time `json:"started_at,omitzero"`
}

// Tick is one sample of a watched queue (watch -o ndjson prints one per line).
type Tick struct {
	Seq    int        `json:"tick"`
	At     time.Time  `json:"at"`
	Counts sqs.Counts `json:"counts"`
	// GrowthPerMinute is the change in depth (visible + in flight +
	// delayed) per minute over up to the last minute; nil on the first tick.
	GrowthPerMinute *float64 `json:"growth_per_minute"`
	// MoveTasks are the running move tasks whose source is this queue.
	MoveTasks []MoveTask `json:"move_tasks"`
	// MoveTaskError says why move tasks could not be listed (the rest of
	// the tick is still valid).
	MoveTaskError string `json:"move_task_error,omitempty"`
}

// WatchOptions configure Watch.
type WatchOptions struct {
	Interval time.Duration
	// Count stops after this many ticks (0: until ctx is cancelled).
	Count int
	Now   func() time.Time
}

// Watch reads q's depth and running move tasks every Interval (the first
// time at once) and hands each Tick to fn. It returns nil after Count
// ticks, ctx.Err() when cancelled, or the first error of fn or of reading
// the queue.
func Watch(ctx context.Context, c *sqs.Client, q *sqs.Queue, opts WatchOptions, fn func(Tick) error) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
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
		if err := c.Refresh(ctx, q); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return sqs.WrapAWSError(err)
		}
		t := Tick{Seq: seq, At: opts.Now().UTC(), Counts: q.Counts(), MoveTasks: []MoveTask{}}
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
		tasks, err := RunningMoveTasks(ctx, c, q)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.MoveTaskError = sqs.WrapAWSError(err).Error()
		} else {
			t.MoveTasks = tasks
		}
		if err := fn(t); err != nil {
			return err
		}
		timer.Reset(max(0, opts.Interval-time.Since(start)))
	}
	return nil
}

// RunningMoveTasks lists the running message move tasks whose source is q.
func RunningMoveTasks(ctx context.Context, c *sqs.Client, q *sqs.Queue) ([]MoveTask, error) {
	out, err := c.API.ListMessageMoveTasks(ctx, &awssqs.ListMessageMoveTasksInput{SourceArn: aws.String(q.ARN), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, err
	}
	tasks := []MoveTask{}
	for _, r := range out.Results {
		if aws.ToString(r.Status) != "RUNNING" {
			continue
		}
		mt := MoveTask{Status: aws.ToString(r.Status), DestinationARN: aws.ToString(r.DestinationArn),
			Moved: r.ApproximateNumberOfMessagesMoved, ToMove: r.ApproximateNumberOfMessagesToMove, MaxPerSecond: r.MaxNumberOfMessagesPerSecond}
		if r.StartedTimestamp != 0 {
			mt.StartedAt = time.UnixMilli(r.StartedTimestamp).UTC()
		}
		tasks = append(tasks, mt)
	}
	return tasks, nil
}
