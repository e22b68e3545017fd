// Package redrive moves dead-lettered messages back to where they can be
// processed: to the queue each came from, or to a recovery queue. It owns
// the plan (dry run), the mover pipeline (selection, routing, exact copies,
// rate limit and ramp, guards, journal, resume), the canary verdict and the
// native move-task driver.
//
// The mover reads from a Source. QueueSource reads an SQS dead-letter queue;
// other sources (an S3 archive for `restore`) plug in by implementing the
// same interface. The pipeline guarantees, for every source: a message is
// acknowledged (removed from the source) only after its copy was accepted by
// the destination and recorded durably in the run's journal.
package redrive

import (
	"context"
	"errors"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

// Item is one message offered by a Source.
type Item struct {
	// Record is the message record (body, attributes, system attributes).
	Record *queue.Record
	// Parsed is the decoded JSON body (nil when the body is not JSON), as
	// returned by inspect.Decode.
	Parsed any
	// Handle is the source's own reference to the message (an SQS receipt,
	// an archive offset); the pipeline never looks inside.
	Handle any
}

// ErrSourceDone is returned by Source.Next when the source has nothing more
// to offer, ever (an archive read to its end). A queue source instead
// returns an empty batch and lets the pipeline decide when to stop.
var ErrSourceDone = errors.New("source exhausted")

// Source offers messages to the mover. All methods may be called from
// several goroutines at once.
type Source interface {
	// Name identifies the source in reports and journals.
	Name() string
	// Next returns up to max (≤ 10) items, decoded (inspect.Decode sets
	// Record.Redrive, Envelope, Failure; Parsed is its result). An empty
	// batch means "nothing right now"; ErrSourceDone means "nothing more".
	// It must not lose items when ctx ends mid-call. Items stay reserved
	// for the caller (held invisible, for a queue) until they are acked or
	// released, or the source is closed.
	Next(ctx context.Context, max int) ([]Item, error)
	// Ack removes items whose copies are durable. It returns one error per
	// item (nil: removed). Archive sources have nothing to remove and
	// return all nil.
	Ack(ctx context.Context, items []Item) []error
	// Release gives items back unmoved (visibility 0 for a queue).
	Release(ctx context.Context, items []Item) error
	// Close releases everything still reserved. It must work after ctx was
	// cancelled.
	Close(ctx context.Context) error
}

// QueueSource is an SQS queue (normally the DLQ) as a Source. Received
// messages are held under a lease with a heartbeat, so they stay invisible
// while they wait for rate tokens or guards, and Close releases what is left.
type QueueSource struct {
	c     *queue.Client
	q     *queue.Queue
	lease *queue.Lease
	wait  time.Duration
	stop  context.CancelFunc
}

// NewQueueSource starts a lease heartbeat on q; call Close when done.
// visibility is how long received messages stay hidden between heartbeats;
// wait is the long-poll wait of each receive.
func NewQueueSource(c *queue.Client, q *queue.Queue, visibility, wait time.Duration) *QueueSource {
	if wait <= 0 {
		wait = time.Second
	}
	s := &QueueSource{c: c, q: q, lease: queue.NewLease(c, q, visibility), wait: wait}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.lease.Run(ctx)
	return s
}

// Queue is the queue read.
func (s *QueueSource) Queue() *queue.Queue { return s.q }

// Name is the queue name.
func (s *QueueSource) Name() string { return s.q.Name }

// Held is the number of messages currently held.
func (s *QueueSource) Held() int { return s.lease.Len() }

// Next receives up to max messages and holds them. The receive itself is
// not cut short by ctx: a long poll abandoned mid-flight could leave the
// messages it returned invisible with nobody holding them.
func (s *QueueSource) Next(ctx context.Context, max int) ([]Item, error) {
	msgs, err := s.c.Receive(context.WithoutCancel(ctx), s.q, max, s.lease.Visibility(), s.wait)
	if err != nil {
		return nil, err
	}
	s.lease.Add(msgs...)
	items := make([]Item, len(msgs))
	for i, m := range msgs {
		parsed := inspect.Decode(&m.Record)
		items[i] = Item{Record: &m.Record, Parsed: parsed, Handle: m}
	}
	return items, nil
}

func messages(items []Item) []*queue.Message {
	msgs := make([]*queue.Message, 0, len(items))
	for _, it := range items {
		if m, ok := it.Handle.(*queue.Message); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// Ack deletes the items from the queue.
func (s *QueueSource) Ack(ctx context.Context, items []Item) []error {
	msgs := messages(items)
	failed, err := s.c.Delete(ctx, s.q, msgs)
	errs := make([]error, len(items))
	var done []*queue.Message
	for i, it := range items {
		m, ok := it.Handle.(*queue.Message)
		if !ok {
			errs[i] = errors.New("item was not received from this queue")
			continue
		}
		if ferr, bad := failed[m]; bad {
			errs[i] = ferr
			if errors.Is(ferr, queue.ErrLeaseLost) {
				done = append(done, m) // no longer ours to release
			}
			continue
		}
		if err != nil {
			errs[i] = err
			continue
		}
		done = append(done, m)
	}
	s.lease.Forget(done...)
	return errs
}

// Release makes the items visible again.
func (s *QueueSource) Release(ctx context.Context, items []Item) error {
	return s.lease.Release(ctx, messages(items))
}

// Close stops the heartbeat and releases every message still held.
func (s *QueueSource) Close(ctx context.Context) error {
	s.stop()
	return s.lease.ReleaseAll(ctx)
}
