package sqs

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// CanaryWindow is how long a message that always fails needs, at most, to
// be back in this DLQ after a canary sent it to one of dests (nil: the
// queues whose RedrivePolicy targets this DLQ): each receive by the
// destination's consumer hides it for the destination's visibility
// timeout, and its redrive policy dead-letters it after maxReceiveCount
// receives.
func (e *Endpoint) CanaryWindow(ctx context.Context, dests []broker.Destination) (broker.CanaryWindow, error) {
	var qs []*Queue
	if dests == nil {
		urls, err := e.c.SourceQueueURLs(ctx, e.q)
		if err != nil {
			return broker.CanaryWindow{}, err
		}
		for _, u := range urls {
			q := &Queue{URL: u}
			if err := e.c.Refresh(ctx, q); err == nil {
				qs = append(qs, q)
			}
		}
	}
	for _, d := range dests {
		if q, ok := d.Target.(*Queue); ok {
			qs = append(qs, q)
		}
	}
	return PoisonReturn(qs, e.q), nil
}

// PoisonReturn is the canary window of dlq for copies sent to dests: the
// longest maxReceiveCount × visibility timeout (+ broker.CanaryMargin) of
// the destinations whose redrive policy targets dlq. Returns is false when
// none does.
func PoisonReturn(dests []*Queue, dlq *Queue) broker.CanaryWindow {
	w := broker.CanaryWindow{Known: true}
	for _, q := range dests {
		p := q.RedrivePolicy()
		if p == nil || p.MaxReceiveCount <= 0 || (dlq.ARN != "" && p.DeadLetterTargetARN != dlq.ARN) {
			continue
		}
		if d := time.Duration(p.MaxReceiveCount)*q.VisibilityTimeout() + broker.CanaryMargin; d > w.Need {
			w.Need, w.Returns = d, true
			w.Reason = fmt.Sprintf("maxReceiveCount %d × visibility timeout %s of %s, + %s", p.MaxReceiveCount, q.VisibilityTimeout(), q.Name, broker.CanaryMargin)
		}
	}
	if !w.Returns {
		w.Reason = fmt.Sprintf("no destination's redrive policy dead-letters into %s, so there is no return time to compute", dlq.Name)
	}
	return w
}
