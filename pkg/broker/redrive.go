package broker

import (
	"context"
	"errors"
	"time"
)

// What a redrive asks of an endpoint beyond Endpoint, where its broker has
// the notion: optional interfaces the one redrive path (cmd) asks for
// instead of asking which broker it talks to.

// Preparer is an Endpoint that prepares copies without connecting: a dry
// run's plan asks it instead of opening a publisher. Its Publisher's
// Publish fails.
type Preparer interface {
	Preparer() Publisher
}

// UnpacedBatcher is an Endpoint whose source reads and publishes bigger
// batches than the pipeline's default when a move is not paced (RabbitMQ:
// no batch API, a worker waits for its batch's confirms, so a batch is up
// to a confirm window sized for every worker to find deliveries). workers
// is the run's concurrency (0: the default), limit its --max or --canary
// (0: none). entries ≤ the pipeline's default means "keep the default".
type UnpacedBatcher interface {
	UnpacedBatch(workers, limit int) (entries, bytes int)
}

// DestinationScoper is an Endpoint (a dead-letter queue) that can redrive
// only to some destinations of its own broker (RabbitMQ: within its server
// and vhost), or has something to say about one (SQS: a FIFO destination
// of a standard DLQ skips messages without a message group).
// CheckDestination says in a few words why dest is not one of them ("is
// on another RabbitMQ server or vhost; …"), nil when it is, and what the
// user should know about it (warnings, one sentence each).
type DestinationScoper interface {
	CheckDestination(dest Endpoint) (warnings []string, err error)
}

// SourceLister is an Endpoint (a dead-letter queue) that names, before
// anything is read, the destinations a redrive --to source sends its
// messages back to (SQS: the queues whose redrive policy targets it): a
// canary's baselines are read from them. nil: nothing of its broker
// dead-letters into it (an SQS DLQ fed by Lambda, SNS or EventBridge);
// empty: something does, but none of them could be read.
type SourceLister interface {
	SourceDestinations(ctx context.Context) ([]Destination, error)
}

// NativeTask is a move the broker itself runs out of a queue (an SQS
// message move task), as redrive --engine native, redrive status and
// redrive cancel show it (-o json: this shape).
type NativeTask struct {
	Handle      string    `json:"task_handle,omitempty"`
	Status      string    `json:"status"`
	Source      string    `json:"source_arn"`
	Destination string    `json:"destination_arn,omitempty"`
	Rate        int       `json:"max_per_second,omitempty"`
	Moved       int64     `json:"moved"`
	ToMove      int64     `json:"to_move"`
	Failure     string    `json:"failure_reason,omitempty"`
	Started     time.Time `json:"started,omitzero"`
}

// Running reports whether the task is still moving messages.
func (t NativeTask) Running() bool { return t.Status == "RUNNING" || t.Status == "CANCELLING" }

// ErrNoNativeMove: the queue has no running move to cancel.
var ErrNoNativeMove = errors.New("no running move task")

// NativeMover is an Endpoint (a dead-letter queue) whose broker moves the
// whole queue itself (Capabilities.NativeMove, at most
// Capabilities.MaxNativeRate messages per second): redrive --engine
// native, redrive status, redrive cancel.
type NativeMover interface {
	// NativeMove moves every message to dest (nil: each back to its
	// source) at steps[0] messages per second (0: the broker's default),
	// then each next step after every; onTask sees the task every poll.
	// It returns the task's last state; ctx ending cancels the move.
	NativeMove(ctx context.Context, dest Endpoint, steps []int, every, poll time.Duration, onTask func(NativeTask)) (*NativeTask, error)
	// NativeTasks are the queue's recent moves.
	NativeTasks(ctx context.Context) ([]NativeTask, error)
	// CancelNative cancels the running move (an error wrapping
	// ErrNoNativeMove when none runs).
	CancelNative(ctx context.Context) (*NativeTask, error)
}
