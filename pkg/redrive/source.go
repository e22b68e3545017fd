// Package redrive moves dead-lettered messages back to where they can be
// processed: to the queue each came from, or to a recovery queue. It owns
// the plan (dry run), the sink that sends exact copies and journals them,
// the run journal and resume, the canary verdict and the native move-task
// driver. The receive loop, leases, rate and ramp, guards and the
// end-of-run reconciliation are the pipeline's (package pipeline).
//
// The pipeline guarantees, for every source: a message is acknowledged
// (removed from the source) only after its copy was accepted by the
// destination and recorded durably in the run's journal.
package redrive

import (
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// QueueSource is an SQS queue (normally the DLQ) as a pipeline source.
type QueueSource = pipeline.QueueSource

// NewQueueSource reads q through a lease (visibility between heartbeats,
// long-poll wait per receive), decoding each record for selection.
func NewQueueSource(c *sqs.Client, q *sqs.Queue, visibility, wait time.Duration) *QueueSource {
	return pipeline.NewQueueSource(c, q, pipeline.QueueSourceOptions{Visibility: visibility, Wait: wait, Decode: inspect.Decode})
}

// NewUnselectedQueueSource is NewQueueSource for a run without a selection
// (no --filter, --class or --rules): it decodes only the redrive marker,
// which is all routing, copies and loop detection read — the body is never
// parsed.
func NewUnselectedQueueSource(c *sqs.Client, q *sqs.Queue, visibility, wait time.Duration) *QueueSource {
	return pipeline.NewQueueSource(c, q, pipeline.QueueSourceOptions{Visibility: visibility, Wait: wait, Decode: inspect.DecodeMarker})
}
