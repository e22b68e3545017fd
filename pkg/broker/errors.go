package broker

import "errors"

// Errors every broker package returns (wrapped, with its own words) for
// the situations the engine and the commands must tell apart. Test with
// errors.Is.
var (
	// ErrLeaseLost: the run no longer holds the message (an SQS receipt
	// handle gone stale, an AMQP channel closed under a delivery): it was
	// NOT removed and will be read again. Never counted as moved.
	ErrLeaseLost = errors.New("the hold on the message was lost")
	// ErrHeldLimit: the source cannot hold more messages (SQS's in-flight
	// limit, the run's own cap, a RabbitMQ consumer's full prefetch); the
	// run ends partial. A source wraps it with what the limit is and the
	// way out in its broker's terms ("%w: …"): the run's note shows that.
	ErrHeldLimit = errors.New("limit of held messages reached")
	// ErrNotFound: the queue, exchange or topic does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAccessDenied: the credentials may not do this (or were refused).
	ErrAccessDenied = errors.New("access denied")
	// ErrUnreachable: the broker or endpoint could not be reached
	// (connection refused, unknown host, a failed TLS handshake, a
	// timeout); NetProblem says which.
	ErrUnreachable = errors.New("unreachable")
	// ErrRejected: the destination refused this entry; it was certainly
	// not published (Result.Err).
	ErrRejected = errors.New("rejected by the destination")
	// ErrUnsupported: the broker cannot do this (Depth on a broker without
	// counts); Capabilities says so beforehand.
	ErrUnsupported = errors.New("not supported by this broker")
	// ErrPeekUnsafe: reading the queue without consuming it would change
	// it in a way the user would not expect (RabbitMQ: push messages of a
	// quorum queue over its delivery limit). Bad input: nothing was read.
	ErrPeekUnsafe = errors.New("peeking this queue is unsafe")
)

// Rejected wraps err as a per-entry refusal (errors.Is(…, ErrRejected)),
// keeping err's text.
func Rejected(err error) error { return &rejectedError{err} }

type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }
func (e *rejectedError) Unwrap() []error {
	return []error{e.err, ErrRejected}
}

// Skip reasons a Router or Publisher gives for a message it cannot route or
// copy unchanged; they appear in plans, reports and NDJSON events.
const (
	// SkipNoSource: the message does not say where it came from, and the
	// queue has no single source to fall back to.
	SkipNoSource = "no source"
	// SkipSourceGone: the source the message names does not exist.
	SkipSourceGone = "source queue missing"
	// SkipTooLarge: the copy would exceed the destination's size limit.
	SkipTooLarge = "too large for destination"
	// SkipTooManyAttrs: the copy would exceed the destination's attribute
	// or header limit.
	SkipTooManyAttrs = "too many attributes"
)
