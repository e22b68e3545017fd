package sqs

import (
	"context"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

var (
	_ broker.DeadLetterWatcher  = (*Endpoint)(nil)
	_ broker.DestinationDepther = (*Endpoint)(nil)
)

// DeadLetterEndpoint is the queue the RedrivePolicy of this queue names,
// keeping this endpoint's hold ledger.
func (e *Endpoint) DeadLetterEndpoint(ctx context.Context) (broker.Endpoint, error) {
	rp := e.q.RedrivePolicy()
	if rp == nil {
		return nil, errs.BadInputf("--canary watches the destination's DLQ, but %s has no RedrivePolicy; restore to a queue with a DLQ or drop --canary", e.q.Name)
	}
	q, err := e.c.Resolve(ctx, rp.DeadLetterTargetARN)
	if err != nil {
		return nil, errs.BadInputf("--canary watches %s's DLQ %s, which cannot be opened (%v); fix its RedrivePolicy or drop --canary", e.q.Name, rp.DeadLetterTargetARN, err)
	}
	dlq := NewEndpoint(e.c, q)
	dlq.stateDir, dlq.tell, dlq.warn = e.stateDir, e.tell, e.warn
	return dlq, nil
}

// DestinationDepth is the depth of an SQS destination.
func (e *Endpoint) DestinationDepth(ctx context.Context, dest broker.Destination) (broker.Depth, error) {
	return e.c.DestinationDepth(ctx, dest)
}
