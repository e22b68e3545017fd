package broker

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// CanaryMargin is added to the time a failing message needs to come back
// to its dead-letter queue: the consumer's first read, the dead-lettering
// and the canary's own poll.
const CanaryMargin = 30 * time.Second

// DefaultCanaryWindow is how long a canary watches when its broker knows
// that no destination dead-letters into the watched queue (nothing is
// known to wait for) and --verify-for is not given.
const DefaultCanaryWindow = 2 * time.Minute

// CanaryWindow is how long a message that always fails needs, at most, to
// come back to a dead-letter queue after a canary sent it to one of its
// destinations, as that queue's broker computes it.
type CanaryWindow struct {
	// Known is false when the broker cannot know it (Kafka: a consumer
	// decides when a record goes to a dead-letter topic); Reason then says
	// why, and a canary needs --verify-for.
	Known bool
	// Returns is false when no destination dead-letters into the queue
	// (Need is 0; Reason says so): nothing is known to wait for.
	Returns bool
	// Need is the time a failing message needs to come back (with
	// CanaryMargin) when Known and Returns.
	Need time.Duration
	// Reason is the derivation in one line, in the broker's words
	// ("maxReceiveCount 5 × visibility timeout 2m0s of orders, + 30s").
	Reason string
}

// CanaryWindower is an Endpoint — the dead-letter queue a canary watches —
// whose broker can say how long a failing message needs to come back to
// it. dests are the destinations the canary's copies go to; nil means
// "back where they came from" (redrive --to source): the broker finds the
// queues that dead-letter into this one. An Endpoint that is not a
// CanaryWindower cannot know (a canary without --verify-for is refused).
type CanaryWindower interface {
	CanaryWindow(ctx context.Context, dests []Destination) (CanaryWindow, error)
}

// PositionMarker is an Endpoint — the dead-letter queue a canary watches —
// whose messages keep positions that only grow (Kafka: each partition's
// offsets). MarkEnd takes where the queue ends now; the test it returns
// says whether a record read later was already in the queue then. A canary
// marks the end before its run moves anything: a message with the body of
// one of its copies that was already there is an older duplicate (a
// producer's retry dead-lettered twice), not a copy that came back.
type PositionMarker interface {
	MarkEnd(ctx context.Context) (alreadyThere func(*record.Record) bool, err error)
}
