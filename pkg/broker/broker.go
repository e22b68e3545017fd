// Package broker is the seam between dlqctl's one engine (package
// pipeline, and the commands' domain packages above it) and the message
// brokers it reads dead letters from and sends copies to: Amazon SQS,
// RabbitMQ (AMQP 0-9-1) and Kafka, one package each under pkg/broker.
//
// The contract is small on purpose (docs/brokers.md tells it in prose):
//
//   - a Ref is a queue reference as the user typed it, parsed once
//     (ParseRef): which broker, and a display form without credentials;
//   - an Endpoint is a Ref resolved by its broker package: it says what the
//     broker can do (Capabilities, as data — never learned by a type
//     assertion), opens a Source to read and a Publisher to send, gives a
//     Router for "back to where it came from", and names itself without
//     credentials;
//   - a Source hands out Messages (a broker-neutral record.Record, the
//     decoded body, an opaque Handle) and removes or gives them back;
//   - a Publisher sends prepared copies with one Result per entry;
//   - errors a command must tell apart are broker-neutral sentinels
//     (ErrLeaseLost, ErrHeldLimit, ErrNotFound, ErrAccessDenied, ErrRejected).
//
// Meaning stays with the broker package: what "hold", "ack" and "release"
// do on the wire (a visibility change, a basic.nack with requeue, not
// committing an offset), when reading is over, what a copy must carry. The
// engine only keeps the promises every broker shares: a message leaves its
// source only after its copy is durable somewhere else, and every message
// read ends in exactly one bucket of the run's accounting.
//
// Only cmd's factory knows the broker packages: it parses a reference,
// picks the package by Ref.Broker with a plain switch and hands the Ref to
// that package's Open. No init() registration, no mutable registry.
package broker

import (
	"context"
	"errors"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Broker names (Ref.Broker, Endpoint.Broker, record.Record.Broker).
const (
	SQS   = record.BrokerSQS
	AMQP  = record.BrokerAMQP
	Kafka = record.BrokerKafka
)

// Endpoint is a queue (or topic) reference resolved by its broker package.
// Its String never carries credentials: it is what every output, journal,
// manifest and error names.
type Endpoint interface {
	// Broker is SQS, AMQP or Kafka.
	Broker() string
	// String is the display form, credentials redacted (Ref.Display, or a
	// resolved form such as an SQS queue URL).
	String() string
	// Name is the short name for tables (queue or topic name).
	Name() string
	// ID is the stable identity records carry in record.Record.Queue (an
	// SQS queue ARN, amqp://HOST/VHOST/QUEUE, kafka://HOSTS/TOPIC), without
	// credentials.
	ID() string
	// Capabilities says what the broker can do for this queue.
	Capabilities() Capabilities
	// OpenSource reads the queue. Close the Source when done: it gives back
	// everything still held.
	OpenSource(ctx context.Context, opt SourceOptions) (Source, error)
	// OpenPublisher sends copies; Target makes this endpoint a destination.
	OpenPublisher(ctx context.Context) (Publisher, error)
	// Target is this endpoint as a publish destination (--to, restore).
	Target(ctx context.Context) (Destination, error)
	// RouterToSource routes each message read from this endpoint back to
	// where it was dead-lettered from (redrive --to source).
	RouterToSource(ctx context.Context) (Router, error)
	// Depth is what the broker says the queue holds (Capabilities.Counts
	// says how far to trust it; CountsNone brokers return ErrUnsupported).
	Depth(ctx context.Context) (Depth, error)
}

// Depth is a queue's depth as its broker reports it.
type Depth struct {
	// Ready messages a read could return now (SQS visible, RabbitMQ
	// ready, Kafka: high watermark − committed offset, summed).
	Ready int64 `json:"ready"`
	// Held messages delivered and not yet removed or given back (SQS in
	// flight, RabbitMQ unacknowledged; Kafka: 0).
	Held int64 `json:"held"`
	// Delayed messages not yet deliverable (SQS delay queues).
	Delayed int64 `json:"delayed"`
	// Exact is false when the counts are approximate (SQS: eventually
	// consistent, up to a minute behind).
	Exact bool `json:"exact"`
}

// Mode says whether a read may remove messages.
type Mode int

// Read modes.
const (
	// Peek reads without consuming: everything read is given back (SQS:
	// visibility 0; RabbitMQ: nack with requeue; Kafka: no offset commit).
	// Ack on a peeking Source removes nothing: what it acks stays held until
	// Close gives it back (archive without --delete).
	Peek Mode = iota
	// Consume removes what is acknowledged (SQS: delete; RabbitMQ: ack;
	// Kafka: commit past it once everything before it is handled).
	Consume
)

// SourceOptions configure a Source.
type SourceOptions struct {
	Mode Mode
	// Hold is how long a received message stays held between heartbeats
	// (lease brokers: the SQS visibility timeout; 0 = the broker's
	// default). Brokers whose Capabilities.Hold is not HoldLease ignore it;
	// cmd refuses the flag for them (Refusal).
	Hold time.Duration
	// Wait is how long one read waits for messages (a long poll).
	Wait time.Duration
	// MaxHeld caps the messages held at once (0 = the broker's limit less
	// headroom).
	MaxHeld int
	// Decode decodes a record (envelope, failure, marker) and returns the
	// parsed body; nil leaves records as read.
	Decode func(*record.Record) any
	// Share is this process's part of a run several processes share
	// (--rate-share I/N; the zero value: alone). Competing-consumer brokers
	// ignore it; Kafka joins the group with it.
	Share Share
}

// Share is the I-th of N processes of one run (I from 1; N 0 or 1: alone).
type Share struct{ I, N int }

// Message is one message a Source hands out.
type Message struct {
	// Record is the broker-neutral record, decoded (Envelope, Failure,
	// Redrive) when SourceOptions.Decode is set.
	Record *record.Record
	// Parsed is the decoded JSON body (nil when the body is not JSON).
	Parsed any
	// Handle is the source's own reference to the message (an SQS receipt,
	// an AMQP delivery tag, a Kafka partition and offset); the engine never
	// looks inside and never prints it.
	Handle any
}

// ErrSourceDone is returned by Source.Next when the source has nothing
// more to offer in this run: an archive read to its end, a Kafka topic read
// to the high watermarks taken at the start, a RabbitMQ queue that came
// back empty with nothing of it unacknowledged elsewhere.
var ErrSourceDone = errors.New("source exhausted")

// Source offers messages. All methods may be called from several
// goroutines.
type Source interface {
	// Name identifies the source in reports and journals (no credentials).
	Name() string
	// Next returns up to max messages (max ≤ Capabilities.MaxBatchEntries).
	// An empty batch means "nothing right now"; ErrSourceDone "nothing
	// more"; an error wrapping ErrHeldLimit "cannot hold more". It must not
	// lose messages when ctx ends mid-call. Messages stay held until acked
	// or released, or the source is closed. A redelivery of a message the
	// run already holds is not returned again.
	Next(ctx context.Context, max int) ([]Message, error)
	// Ack removes messages whose copies are durable, one error per message
	// (nil: removed). An error wrapping ErrLeaseLost means the message was
	// NOT removed because its hold was lost: it will be read again.
	Ack(ctx context.Context, msgs []Message) []error
	// Release gives messages back unprocessed, as they were.
	Release(ctx context.Context, msgs []Message) error
	// Close gives back everything still held. It must work after ctx was
	// cancelled.
	Close(ctx context.Context) error
}

// Reconciler is a Source that can say, at the end of a run, what it knows
// is left that the run could not read. The engine puts those messages in
// the run's accounting (each in exactly one bucket) and never calls a run
// complete while any is left.
type Reconciler interface {
	Leftover(ctx context.Context) (Leftover, error)
}

// Leftover is what a source knows it could not hand out.
type Leftover struct {
	// Blocked: messages behind an ordering lock (an SQS FIFO group, a Kafka
	// partition) held by a message the run could not remove.
	Blocked int `json:"blocked,omitempty"`
	// Unread: ready messages no read returned.
	Unread int `json:"unread,omitempty"`
	// HeldElsewhere: messages held by another consumer, or taken by a read
	// whose answer was lost; they come back within ReturnAfter.
	HeldElsewhere int           `json:"held_elsewhere,omitempty"`
	ReturnAfter   time.Duration `json:"-"`
	// Note says it in one sentence, in the broker's words.
	Note string `json:"note,omitempty"`
}

// Destination is where a Router or Endpoint.Target sends copies.
type Destination struct {
	// Key groups copies for one Publish call: copies with the same Key go
	// to the same place in one batch.
	Key string
	// Label names the destination in reports (no credentials).
	Label string
	// Target is the broker package's own form (an SQS queue, an exchange
	// and routing keys, a topic); only its Publisher looks inside.
	Target any
}

// Router picks where a message goes: a Destination, or a skip reason.
type Router interface {
	// Route returns the destination of rec, or skip ("no source",
	// "source queue missing", ...) when there is none; err stops the run.
	Route(ctx context.Context, rec *record.Record) (dest Destination, skip string, err error)
	// Describe names the routing for plans and prompts.
	Describe() string
}

// CopyOptions say how a copy is marked.
type CopyOptions struct {
	// RunID names the run in the redrive marker.
	RunID string
	// DedupKey seeds deterministic deduplication ids where the broker has
	// them (SQS FIFO); "" uses RunID.
	DedupKey string
	Now      time.Time
}

// Outgoing is a copy prepared by a Publisher.
type Outgoing struct {
	// Size counts against Capabilities.MaxBatchBytes.
	Size int
	// Marked is false when the redrive marker could not be added without
	// changing the message (SQS's 10-attribute limit): the run's journal
	// is then the only record of the redrive.
	Marked bool
	// Native is the Publisher's own form of the copy.
	Native any
}

// Result is the outcome of one entry of a Publish.
type Result struct {
	// ID is the destination's id of the copy (an SQS message id, a Kafka
	// partition/offset; "" when the broker gives none).
	ID string
	// Err is nil when the copy is durable at the destination (SQS accepted
	// the send, RabbitMQ confirmed it, Kafka acknowledged it with acks=all).
	// An error wrapping ErrRejected means it was certainly not published
	// (the message stays at its source); any other error means the outcome
	// is unknown.
	Err error
}

// Publisher sends copies. Methods may be called from several goroutines.
type Publisher interface {
	// Prepare builds the exact copy of rec for dest — body byte for byte,
	// every attribute or header, the ordering key, dlqctl's redrive marker
	// — or returns a skip reason when the broker cannot carry the message
	// unchanged (too large, too many attributes, no message group for a
	// FIFO destination).
	Prepare(rec *record.Record, dest Destination, opt CopyOptions) (Outgoing, string)
	// Publish sends one batch (≤ MaxBatchEntries entries, ≤ MaxBatchBytes
	// of Size) to dest and returns one Result per entry. A non-nil error
	// means the call failed as a whole: entries without their own error
	// have an unknown outcome.
	Publish(ctx context.Context, dest Destination, batch []Outgoing) ([]Result, error)
	// Close flushes and releases the connection.
	Close(ctx context.Context) error
}
