package pipeline

import (
	"context"

	"github.com/dlqctl/dlqctl/pkg/broker"
	queue "github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// OpenQueueSource opens an SQS queue as a broker source (sqs.SourceOpener):
// a QueueSource, which in Peek mode removes nothing — what the run acks
// stays held until the run ends, then is given back. The SQS source moves
// to package sqs once its end-of-run logic is rewritten (issue #22).
func OpenQueueSource(_ context.Context, c *queue.Client, q *queue.Queue, opt broker.SourceOptions) (broker.Source, error) {
	qs := NewQueueSource(c, q, QueueSourceOptions{Visibility: opt.Hold, Wait: opt.Wait, MaxHeld: opt.MaxHeld, Decode: opt.Decode})
	if opt.Mode == broker.Peek {
		return peekSource{qs}, nil
	}
	return qs, nil
}

// peekSource reads without removing anything: acknowledged messages stay
// held until the run ends, then are released.
type peekSource struct{ *QueueSource }

func (peekSource) Ack(_ context.Context, items []Item) []error { return make([]error, len(items)) }

// AbandonReceives does nothing: everything a peek read is held until the
// end and then released, and an abandoned poll could take it.
func (peekSource) AbandonReceives() {}

var (
	_ queue.SourceOpener = OpenQueueSource
	_ Drainer            = peekSource{}
)
