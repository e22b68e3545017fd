package sqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Terms are SQS's words for its counts.
var Terms = broker.DepthTerms{Ready: "visible", Held: "in flight", Delayed: "delayed"}

// ReadDepth reads the queue's approximate counts now (check, watch). SQS
// has no API for the age of its oldest message: the health commands
// sample messages for it.
func (e *Endpoint) ReadDepth(ctx context.Context, _ bool) (broker.DepthReading, error) {
	if err := e.c.Refresh(ctx, e.q); err != nil {
		return broker.DepthReading{}, WrapAWSError(err)
	}
	return broker.DepthReading{Depth: DepthOf(e.q.Counts()), Terms: Terms}, nil
}

// RunningMoveTasks lists the running message move tasks whose source is
// the queue.
func (e *Endpoint) RunningMoveTasks(ctx context.Context) ([]broker.MoveTask, error) {
	out, err := e.c.API.ListMessageMoveTasks(ctx, &awssqs.ListMessageMoveTasksInput{SourceArn: aws.String(e.q.ARN), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, WrapAWSError(err)
	}
	tasks := []broker.MoveTask{}
	for _, r := range out.Results {
		if aws.ToString(r.Status) != "RUNNING" {
			continue
		}
		mt := broker.MoveTask{Status: aws.ToString(r.Status), DestinationARN: aws.ToString(r.DestinationArn),
			Moved: r.ApproximateNumberOfMessagesMoved, ToMove: r.ApproximateNumberOfMessagesToMove, MaxPerSecond: r.MaxNumberOfMessagesPerSecond}
		if r.StartedTimestamp != 0 {
			mt.StartedAt = time.UnixMilli(r.StartedTimestamp).UTC()
		}
		tasks = append(tasks, mt)
	}
	return tasks, nil
}

// PeekWarnings are what a read that releases every message still changes
// on the queue.
func (e *Endpoint) PeekWarnings() []string { return PeekWarnings(e.q) }

// PeekWarnings are what a read that releases every message of q still
// changes: a receive counts toward q's own RedrivePolicy, and a FIFO
// message read blocks its group.
func PeekWarnings(q *Queue) []string {
	var w []string
	if rp := q.RedrivePolicy(); rp != nil {
		w = append(w, fmt.Sprintf("%s has its own RedrivePolicy (maxReceiveCount %d): each receive by dlqctl counts toward moving its messages to %s",
			q.Name, rp.MaxReceiveCount, NameFromARN(rp.DeadLetterTargetARN)))
	}
	if q.FIFO {
		w = append(w, fmt.Sprintf("%s is FIFO: a peeked message blocks its message group until dlqctl releases it", q.Name))
	}
	return w
}

var (
	_ broker.DepthReader    = (*Endpoint)(nil)
	_ broker.MoveTaskLister = (*Endpoint)(nil)
	_ broker.PeekWarner     = (*Endpoint)(nil)
)
