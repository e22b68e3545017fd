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
	// Lean says the reader uses only what a redrive without a selection
	// needs: the message id, body and size, the redrive marker and the
	// route. A broker may then leave out the rest of the record
	// (RabbitMQ: the other headers as attributes and the decoded death
	// history, which the delivery kept on the record still carries; Kafka:
	// the body's SHA-256, which the mover computes where it needs it).
	// Brokers that build their records whole ignore it.
	Lean bool
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
	// (nil: removed, or on a broker whose acknowledgements have no reply —
	// RabbitMQ — asked for: if the process dies before the broker applied
	// it, the message is handed to the next run again, marked as a
	// redelivery, and the run's journal keeps it from being sent twice).
	// An error wrapping ErrLeaseLost means the message was NOT removed
	// because its hold was lost: it will be read again.
	Ack(ctx context.Context, msgs []Message) []error
	// Release gives messages back unprocessed, as they were.
	Release(ctx context.Context, msgs []Message) error
	// Close gives back everything still held. It must work after ctx was
	// cancelled.
	Close(ctx context.Context) error
}

// Ender is a Source that never says "nothing more, ever" (a queue: it can
// always be sent more, and it may hand out again what it handed out). After
// a receive comes back empty the engine asks it whether reading is over;
// the source answers from what it knows of its own calls — for SQS: empty
// long polls, receives the SDK retried after a lost answer, FIFO groups
// the run itself locks — never from a broker's approximate counts, which
// are advisory only (EndState.Counts). What "empty", "unknown outcome" and
// "locked" mean for a broker stays in its source; the engine reads the
// neutral EndState.
type Ender interface {
	// End reports the source's end of reading. run is what the engine still
	// has in hand. With final set (once, after the workers stopped and only
	// when reading ended because the source was drained) the source also
	// fills the report fields (Blocked, Counts) and may call the broker.
	End(ctx context.Context, run RunState, final bool) (EndState, error)
	// EndReading tells the source that reading is over. mayAbandon says
	// that no message can become readable that the run would not read
	// again (it gives nothing back at its end, no peer shares the source,
	// no call with an unknown outcome is pending): the source may then end
	// its pending receives early. Otherwise a receive abandoned mid-flight
	// could take such a message and hide it with nobody holding it.
	EndReading(mayAbandon bool)
}

// RunState is what the engine tells an Ender about the run.
type RunState struct {
	// Busy counts items received and still being decided, delivered or
	// removed: they leave the source soon (or are given back). Until then
	// they may hold back others (a FIFO group's later messages).
	Busy int64
	// QuietSince is when Busy last became 0 (zero while Busy > 0, or when it
	// never was above 0).
	QuietSince time.Time
}

// EndState is an Ender's account of its end, in broker-neutral terms.
type EndState struct {
	// Drained: every message the source could hand this run was handed
	// out; only what Unknown, Blocked or other consumers hold is left.
	Drained bool
	// Unknown is an upper bound of the messages calls with an unknown
	// outcome may have taken (a receive whose answer was lost): nobody
	// holds them until UnknownUntil, when they are back. Zero time: no such
	// call is pending. A run waiting for in-flight messages keeps reading
	// until the source stops reporting them.
	Unknown      int
	UnknownUntil time.Time
	// Blocked (final): messages the run could not read because they wait
	// behind messages it holds to the end in their ordering group (a FIFO
	// group whose earlier message was skipped, or a read that consumes
	// nothing); an estimate. BlockedGroups is the number of such groups.
	Blocked       int
	BlockedGroups int
	// Ordered: the source keeps ordering groups (FIFO), so messages can
	// wait behind others.
	Ordered bool
	// OrderLost (final): messages the broker handed this run after a
	// later message of their ordering group had been handed out (seen in
	// their send times; a message received again is not counted): the
	// group's order is lost in what the run delivered. OrderLostGroups
	// names those groups (sorted, at most 100).
	OrderLost       int
	OrderLostGroups []string
	// Note (final) says in one sentence, in the broker's words, what
	// Blocked and Unknown count and what to do (the run's note when it is
	// partial because of them); empty: the engine says it in general terms.
	Note string
	// Counts (final) are the broker's own counts, advisory: nil when the
	// broker has none or they agree with what the run saw.
	Counts *CountsNote
}

// CountsNote is what a broker's approximate counts said at the end of a
// run when they disagreed with what the run saw. It never decides the end
// of a run or its exit code.
type CountsNote struct {
	// Visible messages the counts still show, and InFlight messages in
	// flight that the run did not hold (other consumers, peers of a shared
	// run — or counts that trail). Both 0: the note is about what the
	// counts could not confirm (FIFO groups held to the end).
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	// Note says it in one sentence.
	Note string `json:"note"`
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
	// MaybeTwice: an earlier attempt of the call whose answer was lost may
	// have published this entry already (a standard SQS queue does not
	// deduplicate): a copy may exist twice, or — with Err — once although
	// the entry was refused in the end. Runs count and report them.
	MaybeTwice bool
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
