// Package pipeline is dlqctl's one message pipeline: it reads messages from
// a Source (an SQS queue read through leases, an S3 archive), decides per
// message what to do, hands the chosen ones to a Sink (a queue to send to,
// S3 parts, a read-only callback, a dry-run plan) and acknowledges a message
// at its source only after the sink reported its copy durable.
//
// Every command that touches messages runs on it: redrive and restore (sink:
// a queue, with the run journal), archive (sink: verified S3 parts), and the
// triage reads sample, group and classify (sink: a callback that keeps every
// message held until the end, so each is seen once and nothing is consumed).
// What the engine owns, so that no command has to get it right on its own:
//
//   - the receive loop with its workers, the rate limiter and the ramp;
//   - holding: a message the run has received stays invisible until it is
//     acknowledged, or released when the run ends — also on errors, on
//     Ctrl-C and when the sink refuses it;
//   - accounting: every message received ends in exactly one bucket
//     (delivered, resumed, skipped, refused, unknown outcome, not acked,
//     lease lost), and the run is "complete" only when the end-of-run
//     reconciliation found nothing left that it did not account for;
//   - the end of the run: a source that can always be sent more (an
//     Ender: a queue) is asked whether reading is over when a receive comes
//     back empty. It answers from what it knows — empty answers, calls
//     whose outcome is unknown (waited for, or reported), ordering groups
//     locked behind messages the run holds (reported as blocked) — never
//     from a broker's approximate counts, which only add a note;
//   - progress, guard and message events.
//
// The queue-specific parts — leases, receipt handles, message groups,
// deduplication ids — live behind the Source and Sink seams (QueueSource
// here, the sinks in their packages), so another broker can be a new
// Source/Sink pair without changes to the engine.
package pipeline

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Item is one message offered by a Source (the broker seam's Message:
// record, parsed body, the source's opaque handle).
type Item = broker.Message

// ErrSourceDone is returned by Source.Next when the source has nothing more
// to offer, ever (an archive read to its end). A queue source instead
// returns an empty batch and lets the engine decide when the run is over.
var ErrSourceDone = broker.ErrSourceDone

// Source offers messages: the broker seam's Source (docs/brokers.md). All
// methods may be called from several goroutines.
type Source = broker.Source

// The end-of-reading contract of sources that can always be sent more (a
// queue) is the broker seam's (package broker): the engine asks an Ender,
// and reads its neutral EndState.
type (
	Ender      = broker.Ender
	RunState   = broker.RunState
	EndState   = broker.EndState
	CountsNote = broker.CountsNote
)

// Verb says what the engine does with an item.
type Verb int

// Verbs of a Decision.
const (
	// Deliver hands the item to the sink (grouped by Key).
	Deliver Verb = iota
	// Skip keeps the item held until the run ends, then releases it, so it
	// is not received again by this run; Reason says why.
	Skip
	// AckOnly removes the item from the source without delivering it: its
	// copy is already durable (sent by an earlier attempt of the run).
	AckOnly
	// Release gives the item back at once (e.g. beyond --max).
	Release
)

// Decision is the sink's verdict on one item.
type Decision struct {
	Verb Verb
	// Key groups items for one Deliver call (a destination queue URL, an
	// archive part); Deliver receives items of one key only.
	Key string
	// Payload is the sink's prepared form of the item (an SQS send entry).
	Payload any
	// Size is the payload's size in bytes, for batch limits (0 = ignore).
	Size int
	// Reason is why an item is skipped or released.
	Reason string
	// Label is what reports show for the item's destination (queue name).
	Label string
}

// Outcome is a sink's answer for one delivered item.
type Outcome struct {
	// Err is nil when the sink accepted the item (durable once the commit
	// is). A *RefusedError means the destination refused this item (it
	// stays at the source); any other error means the outcome is unknown
	// (the item may or may not have been delivered) and stops the run.
	Err error
	// Detail is shown with the item's event (the destination's message id).
	Detail string
}

// RefusedError is a per-item refusal by the destination.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused wraps err as a per-item refusal.
func Refused(err error) error { return &RefusedError{Err: err} }

// UndeliveredError means the sink did not deliver the item at all (it
// could not start: e.g. the journal of an earlier batch failed); the item
// is released and the run stops with Err.
type UndeliveredError struct{ Err error }

func (e *UndeliveredError) Error() string { return e.Err.Error() }
func (e *UndeliveredError) Unwrap() error { return e.Err }

// Undelivered wraps err as "not delivered, stop the run".
func Undelivered(err error) error { return &UndeliveredError{Err: err} }

// Commit is the durability of a delivered batch: Done closes when Err is
// known. A nil Commit means the accepted items are already durable.
type Commit interface {
	Done() <-chan struct{}
	Err() error
}

// Sink receives the items the run delivers.
type Sink interface {
	// Prepare decides one item. Called concurrently by the workers.
	Prepare(ctx context.Context, it Item) (Decision, error)
	// Deliver hands over a batch of items of one Key (≤ 10 entries, ≤ 1 MiB
	// of Size) from worker w (0 ≤ w < Options.Workers; a sink may keep
	// per-worker state). It returns one Outcome per item and the batch's
	// commit: the engine acks the accepted items once it reports them
	// durable. ctx is not cancelled by an interrupt: a batch begun is
	// finished.
	Deliver(ctx context.Context, w int, key string, items []Item, payloads []any) ([]Outcome, Commit)
	// Flush makes buffered deliveries durable now (an open archive part),
	// so their items can be acked — and on a FIFO queue, their groups
	// unlocked. It reports whether anything was buffered. The engine calls
	// it when the source runs dry and once after the workers stopped.
	Flush(ctx context.Context) (bool, error)
}

// GuardEvent is a guard changing state (paused, cleared, tripped).
type GuardEvent struct {
	Name   string  `json:"name"`
	State  string  `json:"state"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Detail string  `json:"detail,omitempty"`
}

// Guard checks, every Guards.Every, whether the run is hurting something;
// a non-nil event pauses or stops it. final is the check after the workers
// stopped.
type Guard func(ctx context.Context, s Snapshot, final bool) *GuardEvent

// Guard actions.
const (
	GuardPause = "pause"
	GuardAbort = "abort"
)

// Guards configure the guard loop.
type Guards struct {
	Check GuardFuncs
	// OnGuard is GuardPause (hold delivering until the condition clears or
	// PauseTimeout passes, then abort) or GuardAbort (default).
	OnGuard      string
	PauseTimeout time.Duration
	// Every is the check interval (default 10s).
	Every time.Duration
}

// GuardFuncs are the checks, evaluated in order; the first event wins.
type GuardFuncs []Guard

// Snapshot is the progress of a run.
type Snapshot struct {
	Received  int64
	Delivered int64 // acked after a durable delivery
	Resumed   int64
	Total     int64
	Skipped   int64
	Failed    int64
	Rate      float64 // recent deliveries per second
	Target    float64 // current rate step; 0 = unlimited
	Elapsed   time.Duration
	ETA       time.Duration
	Guard     string
}

// Event is what happened to one message.
type Event struct {
	MessageID string
	// Action: delivered, resumed, skipped, failed, unknown, not-acked,
	// lease-lost, read.
	Action string
	// Dest is the decision's Label.
	Dest   string
	Detail string
	Class  string
	Reason string
}

// Reporter receives progress; every field is optional. Calls come from
// several goroutines.
type Reporter struct {
	Progress func(Snapshot)
	Event    func(Event)
	Guard    func(GuardEvent)
}
