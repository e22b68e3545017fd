// Package brokertest is the conformance suite every broker package passes:
// one table of behaviours the engine relies on, run against the broker's
// real server through a Harness the broker package's tests provide.
//
//	func TestConformance(t *testing.T) {
//		brokertest.Run(t, &myHarness{...})
//	}
//
// Behaviours a broker does not have are declared in Features (never
// skipped silently): a broker without leases does not run the lost-lease
// case, and says so in the test output.
package brokertest

import (
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Harness gives the suite the broker's real parts. Every method fails the
// test (t.Fatal) when the server does not do what was asked.
type Harness interface {
	// Name names the harness in subtests ("sqs/local-aws-sqs", "amqp/classic").
	Name() string
	// Features declares what the broker has.
	Features() Features
	// NewQueue makes an empty queue (or topic) for one case and returns
	// its endpoint; the harness removes it when t ends.
	NewQueue(t *testing.T, opt QueueOptions) broker.Endpoint
	// Put puts messages into the queue the way a producer (or the broker's
	// own dead-lettering) would, without going through dlqctl, in order.
	Put(t *testing.T, ep broker.Endpoint, msgs []Msg)
	// Count is how many messages the queue holds (ready and held), read
	// the way a user would check (waiting for approximate counts to
	// settle, or draining a copy): the proof the suite compares with.
	Count(t *testing.T, ep broker.Endpoint) int
	// Drain reads and removes every message of the queue without dlqctl,
	// in the broker's order, waiting up to settle for stragglers.
	Drain(t *testing.T, ep broker.Endpoint, settle time.Duration) []Msg
	// LoseHold makes the run lose its hold on m, which src handed out: the
	// broker hands it to someone else (SQS: its visibility ends and another
	// receive takes it; RabbitMQ: the channel under the delivery closes).
	// Called only when Features.LosableHold.
	LoseHold(t *testing.T, ep broker.Endpoint, src broker.Source, m broker.Message)
	// Crash ends src as kill -9 would: no release, no acknowledgement, no
	// close handshake; what it held returns the way the broker returns it
	// (SQS: after the visibility timeout, which Crash may shorten for the
	// test; RabbitMQ: at once; Kafka: the committed offset).
	Crash(t *testing.T, src broker.Source)
	// Unpublishable returns a message the broker refuses per entry when
	// published to ep, while other entries of the same batch succeed (SQS:
	// an attribute of an invalid type; RabbitMQ: an unroutable mandatory
	// publish; Kafka: a record over max.message.bytes). Called only when
	// Features.PerEntryRejection.
	Unpublishable(t *testing.T, ep broker.Endpoint) Msg
}

// QueueOptions shape a test queue.
type QueueOptions struct {
	// Ordered asks for a queue that keeps order where the broker has a
	// choice (SQS FIFO, a RabbitMQ classic queue, one Kafka partition).
	Ordered bool
	// Hold is the hold the case reads with (lease brokers); short, so a
	// crashed run's messages come back within the test.
	Hold time.Duration
	// StrictHolds asks for a queue that refuses a stale hold, so a lost
	// one can be detected (SQS: a FIFO queue on a server that checks
	// receipt handles, as AWS does; standard queues there may apply a
	// stale handle to whoever holds the message now).
	StrictHolds bool
}

// Msg is a message as the suite compares it: body and attributes or
// headers byte for byte, and the ordering key.
type Msg struct {
	Body string
	// Headers by name; a value is its exact bytes (binary values too).
	Headers     map[string][]byte
	OrderingKey string
}

// Features is what a broker declares it has; the suite runs the cases
// that apply and logs the ones that do not.
type Features struct {
	// KeepsOrder: a peek leaves the order as it was (compared for Ordered
	// queues).
	KeepsOrder bool
	// LosableHold: a hold can be lost while the run still has the message
	// (leases, channels), and the broker lets a client see it (on a
	// StrictHolds queue): ErrLeaseLost must then be reported.
	LosableHold bool
	// PerEntryRejection: a publish batch can fail for one entry only.
	PerEntryRejection bool
	// UnconfirmedAck: the broker never confirms an Ack (AMQP 0-9-1's
	// basic.ack has no reply): a process killed right after acking can
	// leave acked messages in the queue — a quorum queue applies a settle
	// through its Raft log, and a channel whose queue is slow holds
	// settles back — and a re-run reads them again, marked as
	// redeliveries (ReceiveCount ≥ 2). Without it an Ack that returned
	// nil removed the message: a re-run never reads it again.
	UnconfirmedAck bool
	// HeaderTypes lists header value types the broker round-trips (e.g.
	// "String", "Number", "Binary", "String.custom").
	HeaderTypes []string
}
