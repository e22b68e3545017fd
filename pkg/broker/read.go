package broker

import (
	"context"
	"time"
)

// What the read-only commands (sample, group, classify, queues) ask of an
// endpoint beyond Endpoint: optional interfaces a broker package
// implements where its broker has the notion. The commands ask for them;
// they never ask which broker they talk to.

// PeekChecker is an Endpoint that checks, before a read that gives every
// message back (sample, group, classify), whether such a read is safe —
// an error wrapping ErrPeekUnsafe when it is not (bad input: exit 2,
// nothing changed) — and says what it changes beyond PeekWarner's
// warnings (RabbitMQ: a quorum queue counts each requeue as a delivery).
type PeekChecker interface {
	CheckPeek() (PeekAdvice, error)
}

// PeekAdvice is what a PeekChecker says about a peek, in the broker's
// words.
type PeekAdvice struct {
	// Warnings are shown on stderr before reading.
	Warnings []string
	// Notes are shown with -v.
	Notes []string
}

// ChainLister is an Endpoint that is one stage of a retry chain (Kafka:
// BASE-retry-1, BASE-retry-2, …, BASE-dlt): group --by stage reads every
// stage.
type ChainLister interface {
	// RetryChain returns the references of the chain's other stages, in
	// chain order, without credentials (the factory opens them with the
	// same flags); none when the endpoint is not part of a chain.
	RetryChain(ctx context.Context) ([]string, error)
}

// Grouper is an Endpoint whose reads are tracked by a consumer group
// (Kafka: dlqctl's group, whose committed offsets are the journal);
// messages about a read name it.
type Grouper interface {
	Group() string
}

// NothingPendingNoter is an Endpoint whose read can find nothing pending
// although the queue holds messages (Kafka: records before its group's
// committed offsets), and says so when a read found nothing.
type NothingPendingNoter interface {
	NothingPendingNote() string
}

// TruncationNoter is a Source that may have left records unread for a
// reason the reader must be told (Kafka: records removed by retention
// while the read ran); "" when nothing needs saying.
type TruncationNoter interface {
	TruncatedNote() string
}

// DLQLister is a broker's view of everything one set of credentials
// reaches — an SQS account's region, a RabbitMQ vhost, a Kafka cluster —
// that lists its dead-letter queues (`dlqctl queues`).
type DLQLister interface {
	ListDLQs(ctx context.Context, opt ListOptions) (DLQListing, error)
}

// ListOptions tune a DLQLister.
type ListOptions struct {
	// Prefix keeps the queues or topics whose name starts with it.
	Prefix string
	// Duration writes a duration in table cells and warnings the way the
	// command's output does ("4d", "1h30m").
	Duration func(time.Duration) string
}

// DLQListing is what a DLQLister found, in a form one printer shows for
// every broker.
type DLQListing struct {
	// Items are -o json's array (and -o ndjson's lines), each in the
	// broker's own documented shape; never nil.
	Items []any
	// Columns and Rows are the table (one row per queue or topic).
	Columns []string
	Rows    [][]string
	// Warnings are shown on stderr after the table, each as
	// "NAME: warning".
	Warnings []string
	// None is the sentence shown when nothing was found.
	None string
	// Note is one line shown on stderr after the table ("" for none).
	Note string
}

// Items boxes a lister's rows for DLQListing.Items.
func Items[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// HeldLimiter is an Endpoint whose broker hands a reader at most so many
// messages it has not removed (RabbitMQ: the channel's prefetch). A run
// that holds what it reads until its end (an archive without --delete, a
// dry run) can read no more than that; one that removes as it goes closes
// its batches (archive parts) within it.
type HeldLimiter interface {
	// HeldLimit is the limit for a reader that removes what it handles
	// (removing) or gives everything back at its end; why says where the
	// limit comes from, in words for the user.
	HeldLimit(removing bool) (n int, why string)
}

// RecordDeleter is an Endpoint whose broker can delete, for good, the
// records dlqctl's consumer group has already handled (Kafka: DeleteRecords
// below the committed offsets; archive --delete-records).
type RecordDeleter interface {
	// DeleteHandled deletes them and returns one line per partition it
	// changed (none: nothing below the committed offsets).
	DeleteHandled(ctx context.Context) ([]string, error)
}

// DeadLetterWatcher is a destination Endpoint that names the queue its
// consumers' failures dead-letter to: a restore's canary watches that
// queue for copies coming back.
type DeadLetterWatcher interface {
	// DeadLetterEndpoint opens that queue, ready to be peeked. The error
	// (bad input) says why there is none, or why it cannot be watched.
	DeadLetterEndpoint(ctx context.Context) (Endpoint, error)
}

// DestinationDepther reads the depth of a destination this Endpoint's
// publisher sends to (the backlog guard, --verify-drain, a canary's
// baseline). Brokers without a backlog (Capabilities.Backlog false) do
// not implement it.
type DestinationDepther interface {
	DestinationDepth(ctx context.Context, dest Destination) (Depth, error)
}
