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
	// Broker is the broker's id (SQS, AMQP, Kafka): what a reference's
	// Broker names, and the broker whose connection flags apply.
	Broker string
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
	// SentAtByBroker is true when a record's System.SentAt is the time the
	// broker accepted that very message (SQS's SentTimestamp: a copy
	// dlqctl sent carries its own, kept when it is dead-lettered), not a
	// time the publisher set or copied (RabbitMQ's timestamp property). A
	// canary then tells a copy that lost its marker from an older message
	// with the same body by that time.
	SentAtByBroker bool
	// ReleaseKeepsOrder is true when a released message goes back to its
	// place (RabbitMQ classic queues, Kafka offsets), false when it may come
	// back anywhere (SQS standard queues, RabbitMQ quorum queues).
	ReleaseKeepsOrder bool
	// NativeMove is true when the broker can move the whole queue itself
	// (SQS message move tasks: redrive --engine native; NativeMover), at
	// most MaxNativeRate messages per second.
	NativeMove    bool
	MaxNativeRate int
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

	// What a flag may need (pkg/refuse/table.go declares which flag needs
	// which; NeedX below says it in words).

	// Transactions: a batch of publishes and the source's removal of its
	// originals can be one transaction (Kafka: produce and commit the
	// group's offsets together; redrive --exactly-once).
	Transactions bool
	// DeleteByOffset: the records below an offset can be deleted (Kafka
	// DeleteRecords; archive --delete-records).
	DeleteByOffset bool
	// ConsumerLag: a destination's consumers report their lag per
	// consumer group (Kafka; redrive --max-dest-lag).
	ConsumerLag bool
	// Backlog: a destination has a count of messages waiting to be
	// consumed (SQS visible messages, RabbitMQ ready messages;
	// --max-dest-backlog, --verify-drain).
	Backlog bool
	// ReturnsByDepth: messages that come back to the DLQ during a run
	// show as its depth growing (SQS, RabbitMQ; redrive --max-returns).
	ReturnsByDepth bool
	// LogLookup: a message's id and send time find its consumer's log
	// lines (SQS message ids in CloudWatch Logs; --logs).
	LogLookup bool
	// DeathReasons lists the reasons the broker itself records when it
	// dead-letters a message (RabbitMQ's x-death: rejected, expired,
	// maxlen, delivery_limit; what group --by reason counts); "" when it
	// records none.
	DeathReasons string
	// FailureRecord is where the broker itself records why a message died
	// ("" when it does not).
	FailureRecord string
	// ReplayNote is what every redrive from this broker tells its user
	// about where copies land ("" when nothing needs saying).
	ReplayNote string
	// Retention: messages expire after a retention period (SQS
	// MessageRetentionPeriod, Kafka retention.ms; audit
	// --investigation-window and --sample).
	Retention bool
	// DepthGrowth: check saves this broker's depth readings between runs
	// and compares them (check --max-growth).
	DepthGrowth bool
	// DestinationDLQ: a destination names its own dead-letter queue (an
	// SQS RedrivePolicy, a RabbitMQ dead-letter exchange), which a
	// restore's canary watches (restore --canary).
	DestinationDLQ bool
	// IAMActions: permissions are IAM actions doctor can check per role
	// (doctor --role).
	IAMActions bool
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

// Need is what a flag needs of a broker, as data: whether a broker's
// capabilities have it, and in words what it is and what a broker without
// it does instead. The refusal of a flag on a broker without it is
// generated from these (Refusal), so it reads the same on every broker.
type Need struct {
	// What completes "needs …": "a broker that deletes records by offset".
	What string
	// Has reports whether caps have it.
	Has func(Capabilities) bool
	// Lacks says, for caps without it, what that broker does instead; it
	// starts with the broker's Label: "Amazon SQS removes messages one by
	// one".
	Lacks func(Capabilities) string
}

// Refusal is the one sentence (exit 2) refusing flag on the broker of caps:
// "FLAG needs WHAT (HAVE); LACKS: INSTEAD". have names the brokers that
// have the need ("" leaves it out); instead is the way out.
func (n Need) Refusal(flag string, caps Capabilities, have, instead string) error {
	if have != "" {
		have = " (" + have + ")"
	}
	return errs.BadInputf("%s needs %s%s; %s: %s", flag, n.What, have, n.Lacks(caps), instead)
}

// The needs of dlqctl's broker-specific flags.
var (
	NeedLease = Need{
		What: "a broker that holds messages with a visibility timeout",
		Has:  func(c Capabilities) bool { return c.Hold == HoldLease },
		Lacks: func(c Capabilities) string {
			switch c.Hold {
			case HoldDelivery:
				return c.Label + " holds a message as an unacknowledged delivery for as long as the connection lives"
			case HoldNone:
				return c.Label + " holds nothing, it reads by offset"
			}
			return c.Label + " has no visibility timeout"
		},
	}
	NeedNativeMove = Need{
		What:  "a broker that moves a whole queue itself",
		Has:   func(c Capabilities) bool { return c.NativeMove },
		Lacks: func(c Capabilities) string { return c.Label + " has no server-side move" },
	}
	NeedTransactions = Need{
		What: "a broker that publishes a batch and removes its originals in one transaction",
		Has:  func(c Capabilities) bool { return c.Transactions },
		Lacks: func(c Capabilities) string {
			return c.Label + " removes each message on its own, apart from the publish of its copy"
		},
	}
	NeedDeleteByOffset = Need{
		What:  "a broker that deletes records by offset",
		Has:   func(c Capabilities) bool { return c.DeleteByOffset },
		Lacks: func(c Capabilities) string { return c.Label + " removes messages one by one" },
	}
	NeedConsumerLag = Need{
		What: "a destination whose consumer groups report their lag",
		Has:  func(c Capabilities) bool { return c.ConsumerLag },
		Lacks: func(c Capabilities) string {
			return c.Label + " counts the messages waiting in a queue, not a consumer group's lag"
		},
	}
	NeedBacklog = Need{
		What: "a destination that counts the messages waiting in it",
		Has:  func(c Capabilities) bool { return c.Backlog },
		Lacks: func(c Capabilities) string {
			if c.ConsumerLag {
				return c.Label + " keeps every record in the topic: what waits is its consumer groups' lag"
			}
			return c.Label + " does not count the messages waiting in a destination"
		},
	}
	NeedReturnsByDepth = Need{
		What: "a DLQ whose depth grows when moved messages come back",
		Has:  func(c Capabilities) bool { return c.ReturnsByDepth },
		Lacks: func(c Capabilities) string {
			return c.Label + " keeps every record in the dead-letter topic, so its depth does not show returns"
		},
	}
	NeedLogLookup = Need{
		What: "a broker whose message ids and send times find the consumer's CloudWatch Logs lines",
		Has:  func(c Capabilities) bool { return c.LogLookup },
		Lacks: func(c Capabilities) string {
			if c.FailureRecord != "" {
				return c.Label + " records why a message died in " + c.FailureRecord + ", which --filter and --class already read"
			}
			return c.Label + " message ids do not appear in CloudWatch Logs"
		},
	}
	NeedRetention = Need{
		What: "a broker that expires messages after a retention period",
		Has:  func(c Capabilities) bool { return c.Retention },
		Lacks: func(c Capabilities) string {
			return c.Label + " has no retention period (a queue's TTL is audited as such)"
		},
	}
	NeedDepthGrowth = Need{
		What: "a broker whose depth readings check saves between runs",
		Has:  func(c Capabilities) bool { return c.DepthGrowth },
		Lacks: func(c Capabilities) string {
			return c.Label + " counts pending records per consumer group, which check does not save between runs"
		},
	}
	NeedDestinationDLQ = Need{
		What: "a destination that names its own dead-letter queue",
		Has:  func(c Capabilities) bool { return c.DestinationDLQ },
		Lacks: func(c Capabilities) string {
			return "a " + c.Label + " topic names no dead-letter topic dlqctl could watch"
		},
	}
	NeedParallelWorkers = Need{
		What: "a source several workers can move messages from at once",
		Has:  func(c Capabilities) bool { return c.Ordering != OrderPartition },
		Lacks: func(c Capabilities) string {
			return c.Label + " is read by one worker per process, so that each partition's records are replayed in their order"
		},
	}
	NeedParallelSends = Need{
		What: "a destination several senders can send to at once",
		Has:  func(c Capabilities) bool { return c.Ordering != OrderPartition && c.Ordering != OrderGroupLock },
		Lacks: func(c Capabilities) string {
			if c.Ordering == OrderGroupLock {
				return "an " + c.Label + " FIFO queue keeps a message group's order only from one sender, so a restore sends with one"
			}
			return c.Label + " keeps a key's records in order only from one sender, so a restore sends with one"
		},
	}
	NeedIAMActions = Need{
		What:  "a broker whose permissions are IAM actions",
		Has:   func(c Capabilities) bool { return c.IAMActions },
		Lacks: func(c Capabilities) string { return c.Label + " permissions are not IAM actions" },
	}
)

// NeedBroker is the need of a broker's own flags (its connection flags): a
// reference to that broker, which label and schemes name.
func NeedBroker(id, label, schemes string) Need {
	article := "a "
	if strings.ContainsRune("AEIOU", rune(label[0])) {
		article = "an "
	}
	return Need{
		What:  article + label + " reference (" + schemes + ")",
		Has:   func(c Capabilities) bool { return c.Broker == id },
		Lacks: func(c Capabilities) string { return c.Label + " is reached without it" },
	}
}
