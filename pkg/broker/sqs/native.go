package sqs

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// MaxNativeRate is the highest MaxNumberOfMessagesPerSecond SQS accepts.
const MaxNativeRate = 500

// Task is an SQS message move task (the native redrive engine).
type Task = broker.NativeTask

// StartNative starts a move task of the whole DLQ to destARN ("" = each
// message's source queue) at rate messages per second (0 = SQS's default).
func StartNative(ctx context.Context, c *Client, dlq *Queue, destARN string, rate int) (string, error) {
	if rate < 0 || rate > MaxNativeRate {
		return "", errs.BadInputf("--rate %d is outside what the native engine accepts (1..%d); lower it or use --engine dlqctl", rate, MaxNativeRate)
	}
	in := &awssqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)}
	if destARN != "" {
		in.DestinationArn = aws.String(destARN)
	}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
	}
	out, err := c.API.StartMessageMoveTask(ctx, in)
	if err != nil {
		return "", WrapAWSError(err)
	}
	return aws.ToString(out.TaskHandle), nil
}

// NativeTasks lists the DLQ's move tasks, newest first (SQS keeps the last
// ten).
func NativeTasks(ctx context.Context, c *Client, dlq *Queue) ([]Task, error) {
	out, err := c.API.ListMessageMoveTasks(ctx, &awssqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.ARN), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, WrapAWSError(err)
	}
	tasks := make([]Task, 0, len(out.Results))
	for _, r := range out.Results {
		t := Task{Handle: aws.ToString(r.TaskHandle), Status: aws.ToString(r.Status), Source: aws.ToString(r.SourceArn),
			Destination: aws.ToString(r.DestinationArn), Moved: r.ApproximateNumberOfMessagesMoved,
			ToMove: aws.ToInt64(r.ApproximateNumberOfMessagesToMove), Failure: aws.ToString(r.FailureReason)}
		if r.MaxNumberOfMessagesPerSecond != nil {
			t.Rate = int(*r.MaxNumberOfMessagesPerSecond)
		}
		if r.StartedTimestamp > 0 {
			t.Started = time.UnixMilli(r.StartedTimestamp).UTC()
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// ErrNoRunningTask means there is no move task to cancel.
var ErrNoRunningTask = broker.ErrNoNativeMove

// CancelNative cancels the DLQ's running move task and returns it.
func CancelNative(ctx context.Context, c *Client, dlq *Queue) (*Task, error) {
	tasks, err := NativeTasks(ctx, c, dlq)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		if t.Status == "RUNNING" {
			out, err := c.API.CancelMessageMoveTask(ctx, &awssqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(t.Handle)})
			if err != nil {
				return nil, WrapAWSError(err)
			}
			t.Moved = out.ApproximateNumberOfMessagesMoved
			t.Status = "CANCELLING"
			return &t, nil
		}
	}
	return nil, ErrNoRunningTask
}

// NativeRamp drives the native engine through rate steps: it starts a task
// at each step, lets it run for every (or until it completes), then cancels
// it and starts the next step. The last step runs to completion. onTask is
// called after each status poll. On ctx cancellation the running task is
// cancelled and ctx's error returned.
func NativeRamp(ctx context.Context, c *Client, dlq *Queue, destARN string, steps []int, every, poll time.Duration, onTask func(Task)) (*Task, error) {
	if poll <= 0 {
		poll = 2 * time.Second
	}
	var last *Task
	for i, r := range steps {
		handle, err := StartNative(ctx, c, dlq, destARN, r)
		if err != nil {
			return last, err
		}
		stepEnd := time.Now().Add(every)
		final := i == len(steps)-1
		for {
			select {
			case <-ctx.Done():
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				_, _ = CancelNative(cctx, c, dlq)
				cancel()
				return last, ctx.Err()
			case <-time.After(poll):
			}
			t, err := findTask(ctx, c, dlq, handle)
			if err != nil {
				return last, err
			}
			last = t
			if onTask != nil {
				onTask(*t)
			}
			if !t.Running() {
				if t.Status == "FAILED" {
					return t, errs.Partialf("the native move task failed: %s", t.Failure)
				}
				if t.Status == "COMPLETED" {
					return t, nil
				}
				break // cancelled: next step
			}
			if !final && time.Now().After(stepEnd) {
				if _, err := CancelNative(ctx, c, dlq); err != nil && !errors.Is(err, ErrNoRunningTask) {
					return last, err
				}
				if err := waitStopped(ctx, c, dlq, handle, poll); err != nil {
					return last, err
				}
				break
			}
		}
	}
	return last, nil
}

func findTask(ctx context.Context, c *Client, dlq *Queue, handle string) (*Task, error) {
	tasks, err := NativeTasks(ctx, c, dlq)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		if t.Handle == handle {
			return &t, nil
		}
	}
	// Finished tasks may be listed without a handle: take the newest.
	if len(tasks) > 0 {
		return &tasks[0], nil
	}
	return nil, errors.New("the move task disappeared from ListMessageMoveTasks")
}

func waitStopped(ctx context.Context, c *Client, dlq *Queue, handle string, poll time.Duration) error {
	for i := 0; i < 60; i++ {
		t, err := findTask(ctx, c, dlq, handle)
		if err != nil {
			return err
		}
		if !t.Running() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll / 2):
		}
	}
	return errors.New("the move task did not stop after cancelling it")
}

// NativeMove moves the whole queue with move tasks (NativeRamp) to dest
// (nil: each message's source queue); broker.NativeMover.
func (e *Endpoint) NativeMove(ctx context.Context, dest broker.Endpoint, steps []int, every, poll time.Duration, onTask func(Task)) (*Task, error) {
	destARN := ""
	if dest != nil {
		destARN = dest.ID()
	}
	return NativeRamp(ctx, e.c, e.q, destARN, steps, every, poll, onTask)
}

// NativeTasks are the queue's move tasks (SQS keeps the last ten).
func (e *Endpoint) NativeTasks(ctx context.Context) ([]Task, error) {
	return NativeTasks(ctx, e.c, e.q)
}

// CancelNative cancels the queue's running move task.
func (e *Endpoint) CancelNative(ctx context.Context) (*Task, error) {
	return CancelNative(ctx, e.c, e.q)
}

var _ broker.NativeMover = (*Endpoint)(nil)
