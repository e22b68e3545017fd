package broker

import "context"

// Optional interfaces the domain asks an Endpoint or a Publisher for, when
// the Capabilities say the broker has what they offer. A broker without
// the capability does not implement them; a flag that needs one is refused
// before anything connects (Need, Refusal).

// TxnOpener is an Endpoint whose publishers can make a batch's copies and
// the removal of their originals from a Source one transaction
// (Capabilities.Transactions; redrive --exactly-once). Kafka: the
// producer's transaction carries the copies and the consumer group's
// offset commit, so a read_committed consumer of the destination sees a
// batch only together with the commit that moves past its originals.
type TxnOpener interface {
	// OpenTxnPublisher opens a publisher on this endpoint whose
	// transactions remove messages of src. src must be a consuming Source
	// of the same broker on the same cluster (else an error wrapping
	// ErrUnsupported, in one sentence naming the fix). Once it is open,
	// messages of src leave it only through PublishRemoving: src.Ack
	// confirms what a committed transaction removed and removes nothing
	// else.
	OpenTxnPublisher(ctx context.Context, src Source) (TxnPublisher, error)
}

// TxnPublisher is a Publisher whose batches are transactions.
type TxnPublisher interface {
	Publisher
	// PublishRemoving sends batch to dest and, in the same transaction,
	// removes originals (the messages batch[i] copies, in order) from the
	// source. Either every copy becomes visible and every original is
	// removed, or neither: a transaction that cannot commit is aborted,
	// every Result carries its error (not ErrRejected: read_uncommitted
	// consumers may have seen the aborted copies), and the source gives
	// nothing more to remove (its later Acks fail, its Close commits
	// nothing): the run stops and a re-run reads the originals again.
	// Calls are serialized: one transaction at a time.
	PublishRemoving(ctx context.Context, dest Destination, batch []Outgoing, originals []Message) ([]Result, error)
}

// LagReader is an Endpoint that says how far a consumer group is behind
// on its cluster (Capabilities.ConsumerLag; redrive --max-dest-lag). The
// destination-lag guard (package redrive) asks it between batches.
type LagReader interface {
	// GroupLag is the records group has yet to consume, summed over the
	// partitions it has committed offsets for. A group the broker does
	// not know is an error wrapping ErrNotFound.
	GroupLag(ctx context.Context, group string) (int64, error)
}

// Intender is a Source that keeps its own write-ahead record of the
// copies a run publishes, beside the run's journal, where every later run
// reading the source finds it whatever its options (Kafka: offset ranges
// per consumer group and topic in the state dir; a run killed after
// producing and before its commit leaves them, and the next run of the
// group names the records it produces again).
type Intender interface {
	// Intend records msgs as about to be published by run runID: called
	// before the first of their copies can reach a destination. The first
	// call claims what killed runs left. It reports whether they are
	// recorded (false: the source keeps no intent this run, e.g. its log
	// could not be opened; the run's journal then records the intent).
	Intend(runID string, msgs []Message) bool
	// PublishedBefore says, for a message whose copy this run just
	// published, whether a killed run had recorded it as being published
	// and died before it left the source: the destination may hold two
	// copies, or (aborted) the killed run's copy was in a transaction the
	// broker aborted, which read_committed consumers never saw. run names
	// the killed run.
	PublishedBefore(m Message) (run string, aborted, ok bool)
}

// HandOverer is a Source whose messages can change hands between readers
// while a run holds them (Kafka: a partition moving to another member of
// the group in a rebalance). Every message Next hands out stays the run's
// until the run acks, releases or settles it: the source does not let
// another reader take it before (Kafka: the revoke of its partition
// waits, bounded), so the new reader starts past what the run delivered
// and nothing is delivered twice.
type HandOverer interface {
	// Settle tells the source the run is done with msgs without acking or
	// releasing them (skipped by the selection, refused by the
	// destination): they stay at the source, and a hand-over need not
	// wait for them.
	Settle(msgs []Message)
	// OnHandOver registers what the source calls while it waits for the
	// acks of messages it must hand over: the run makes what it delivered
	// durable now (an open archive part is uploaded and verified), so
	// those acks can land.
	OnHandOver(flush func(context.Context))
	// Holding is asked right before the sink delivers msgs: an error
	// (wrapping ErrLeaseLost) says some of them are no longer the run's —
	// held past the source's bounded wait (a guard's pause), they were
	// handed over — and none of them may be delivered.
	Holding(msgs []Message) error
}
