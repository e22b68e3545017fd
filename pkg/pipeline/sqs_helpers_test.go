package pipeline_test

import (
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// newQueueSource reads q through a lease for a redrive, decoding each
// record for selection (what cmd opens through the queue's endpoint).
func newQueueSource(c *sqs.Client, q *sqs.Queue, visibility, wait time.Duration) *sqs.QueueSource {
	return sqs.NewQueueSource(c, q, sqs.QueueSourceOptions{Visibility: visibility, Wait: wait, Decode: inspect.Decode})
}

// capsOf is the capabilities of the queue a source reads (the zero value
// for a source that is not a queue).
func capsOf(src broker.Source) broker.Capabilities {
	if qs, ok := src.(interface{ Queue() *sqs.Queue }); ok {
		return sqs.Capabilities(qs.Queue().FIFO)
	}
	return broker.Capabilities{}
}
