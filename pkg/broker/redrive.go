package broker

import "context"

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
// canary's baselines are read from them. None: nothing of its broker
// dead-letters into it (an SQS DLQ fed by Lambda, SNS or EventBridge).
type SourceLister interface {
	SourceDestinations(ctx context.Context) ([]Destination, error)
}
