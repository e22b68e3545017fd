package broker

import (
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Capabilities are what a broker can do for one queue, as data: the engine
// and the commands read them instead of asking "is this an SQS queue?".
type Capabilities struct {
	// Label is the broker's name as users know it ("Amazon SQS",
	// "RabbitMQ", "Kafka"), used in refusals.
	Label string
	// Hold is how a read holds a message.
	Hold Hold
	// Removal is how a handled message leaves the queue.
	Removal Removal
	// Ordering is the order the broker keeps.
	Ordering Ordering
	// Counts is whether the broker reports a queue's depth, and how exactly.
	Counts Counts
	// ReadCounts is true when reading a message without removing it is
	// counted against it (SQS ApproximateReceiveCount; a RabbitMQ quorum
	// queue's delivery count, which has a limit), false when a read leaves
	// no trace (Kafka offsets, RabbitMQ classic queues' redelivered flag
	// aside).
	ReadCounts bool
	// ReleaseKeepsOrder is true when a released message goes back to its
	// place (RabbitMQ classic queues, Kafka offsets), false when it may come
	// back anywhere (SQS standard queues, RabbitMQ quorum queues).
	ReleaseKeepsOrder bool
	// NativeMove is true when the broker can move the whole queue itself
	// (SQS message move tasks: redrive --engine native).
	NativeMove bool
	// MaxBatchEntries and MaxBatchBytes bound one read or publish batch
	// (SQS: 10 entries, 1 MiB); MaxMessageBytes one message (0 = no limit
	// dlqctl enforces); MaxAttributes the attributes or headers of one
	// message (0 = no limit).
	MaxBatchEntries int
	MaxBatchBytes   int
	MaxMessageBytes int
	MaxAttributes   int
	// MaxHold is the longest a message can be held from its first read
	// (SQS: 12 h); 0 = as long as the connection lives.
	MaxHold time.Duration
	// DedupWindow is how long the destination drops a copy with the same
	// deduplication id (SQS FIFO: 5 min); 0 = no deduplication.
	DedupWindow time.Duration
	// Sharing is how several dlqctl processes share one queue.
	Sharing Sharing
}

// Hold is how a read holds a message until it is removed or given back.
type Hold int

// Holds.
const (
	// HoldLease: a lease that expires unless extended (SQS visibility
	// timeout); a lost lease lets someone else read the message.
	HoldLease Hold = iota + 1
	// HoldDelivery: an unacknowledged delivery, held as long as the
	// channel lives (RabbitMQ); it never expires, it returns when the
	// connection closes.
	HoldDelivery
	// HoldNone: nothing is held; reads are free, by offset (Kafka).
	HoldNone
)

func (h Hold) String() string {
	switch h {
	case HoldLease:
		return "a lease with a visibility timeout"
	case HoldDelivery:
		return "an unacknowledged delivery that lasts as long as the connection"
	case HoldNone:
		return "nothing: reads are free, by offset"
	}
	return "unknown"
}

// Removal is how a handled message leaves its queue.
type Removal int

// Removals.
const (
	// RemovePerMessage: each message is deleted or acknowledged on its own
	// (SQS delete, AMQP basic.ack).
	RemovePerMessage Removal = iota + 1
	// RemoveCommitOffset: a consumer group's committed offset moves past
	// the handled records of a partition, only over a contiguous run of
	// them (Kafka); nothing is deleted.
	RemoveCommitOffset
)

func (r Removal) String() string {
	switch r {
	case RemovePerMessage:
		return "each message is removed on its own"
	case RemoveCommitOffset:
		return "a committed offset moves past handled records"
	}
	return "unknown"
}

// Ordering is the order a broker keeps.
type Ordering int

// Orderings.
const (
	// OrderNone: no order (SQS standard; RabbitMQ quorum queues after a
	// requeue).
	OrderNone Ordering = iota + 1
	// OrderQueue: one order per queue, kept by releases (RabbitMQ classic
	// queues).
	OrderQueue
	// OrderGroupLock: per message group, and a held message locks its
	// group: nothing more of it is handed out until it is removed or
	// released (SQS FIFO).
	OrderGroupLock
	// OrderPartition: per partition, by offset (Kafka).
	OrderPartition
)

func (o Ordering) String() string {
	switch o {
	case OrderNone:
		return "none"
	case OrderQueue:
		return "queue order"
	case OrderGroupLock:
		return "per message group, a held message locking its group"
	case OrderPartition:
		return "per partition"
	}
	return "unknown"
}

// Counts is whether a broker reports queue depths.
type Counts int

// Counts.
const (
	CountsNone Counts = iota
	// CountsApproximate: reported, eventually consistent (SQS: up to a
	// minute behind); good for progress, never the proof a run is complete.
	CountsApproximate
	// CountsExact: reported as they are (RabbitMQ ready/unacked, Kafka
	// watermarks less committed offsets, transaction markers aside).
	CountsExact
)

// Sharing is how several processes share one queue.
type Sharing int

// Sharings.
const (
	// ShareCompeting: competing consumers, each message to one of them
	// (SQS, RabbitMQ).
	ShareCompeting Sharing = iota + 1
	// ShareGroup: the broker assigns partitions to the members of a
	// consumer group (Kafka).
	ShareGroup
)

// Requirement is a flag that only some brokers can honour.
type Requirement struct {
	// Flag is the flag as typed, e.g. "--engine native".
	Flag string
	// Needs reports whether caps can honour the flag.
	Needs func(caps Capabilities) bool
	// Why says, for a broker that cannot, why not; "{broker}" stands for
	// the broker's Label and "{hold}" for how it holds messages.
	Why string
	// Instead is what to do instead.
	Instead string
}

// Refuse checks the requirements against caps and returns the first one
// not met as a bad-input error (exit 2) naming the broker and the way out.
func Refuse(caps Capabilities, reqs ...Requirement) error {
	for _, r := range reqs {
		if r.Needs(caps) {
			continue
		}
		why := strings.NewReplacer("{broker}", caps.Label, "{hold}", caps.Hold.String()).Replace(r.Why)
		return errs.BadInputf("%s cannot be used with %s: %s; %s", r.Flag, caps.Label, why, r.Instead)
	}
	return nil
}
