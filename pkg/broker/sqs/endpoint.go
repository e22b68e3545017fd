package sqs

import (
	"context"
	"errors"
	"fmt"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Capabilities of SQS queues (docs/brokers.md).
func Capabilities(fifo bool) broker.Capabilities {
	c := broker.Capabilities{
		Label:           "Amazon SQS",
		Broker:          broker.SQS,
		Hold:            broker.HoldLease,
		Removal:         broker.RemovePerMessage,
		Ordering:        broker.OrderNone,
		Counts:          broker.CountsApproximate,
		ReadCounts:      true,
		SentAtByBroker:  true,
		NativeMove:      true,
		MaxNativeRate:   MaxNativeRate,
		MaxBatchEntries: MaxBatchEntries,
		MaxBatchBytes:   MaxBatchBytes,
		MaxMessageBytes: MaxMessageBytes,
		MaxAttributes:   MaxAttributes,
		MaxHold:         MaxVisibility,
		Sharing:         broker.ShareCompeting,
		Backlog:         true,
		ReturnsByDepth:  true,
		LogLookup:       true,
		Retention:       true,
		DepthGrowth:     true,
		DestinationDLQ:  true,
		IAMActions:      true,
	}
	if fifo {
		c.Ordering = broker.OrderGroupLock
		c.DedupWindow = FIFODedupWindow
	}
	return c
}

// Endpoint is an SQS queue as a broker.Endpoint.
type Endpoint struct {
	c *Client
	q *Queue
	// stateDir keeps the hold ledger (WithHoldLedger); tell and warn are
	// told about dead processes' holds and ledger trouble.
	stateDir   string
	tell, warn func(string)
}

// WithHoldLedger makes the sources of the queue keep a hold ledger in
// stateDir (holds.go): what this process may hide is on file while it
// runs, and what dead processes still hide is waited for or reported.
// tell is told (once per source) what dead processes hide; warn about a
// ledger that cannot be written.
func (e *Endpoint) WithHoldLedger(stateDir string, tell, warn func(string)) *Endpoint {
	e.stateDir, e.tell, e.warn = stateDir, tell, warn
	return e
}

// NewEndpoint makes the resolved queue q an Endpoint.
func NewEndpoint(c *Client, q *Queue) *Endpoint { return &Endpoint{c: c, q: q} }

// Open resolves ref (an SQS name, URL, ARN or sqs://NAME) with c.
func Open(ctx context.Context, c *Client, ref broker.Ref) (*Endpoint, error) {
	if ref.Broker != broker.SQS {
		return nil, errors.New("sqs.Open: not an SQS reference")
	}
	q, err := c.Resolve(ctx, ref.Target)
	if err != nil {
		return nil, err
	}
	return NewEndpoint(c, q), nil
}

// Client is the SQS client the endpoint uses.
func (e *Endpoint) Client() *Client { return e.c }

// Queue is the resolved queue.
func (e *Endpoint) Queue() *Queue { return e.q }

// Broker is broker.SQS.
func (e *Endpoint) Broker() string { return broker.SQS }

// String is the queue URL.
func (e *Endpoint) String() string { return e.q.URL }

// Name is the queue name.
func (e *Endpoint) Name() string { return e.q.Name }

// ID is the queue ARN.
func (e *Endpoint) ID() string { return e.q.ARN }

// Capabilities of the queue (standard or FIFO).
func (e *Endpoint) Capabilities() broker.Capabilities { return Capabilities(e.q.FIFO) }

// OpenSource reads the queue through a lease (QueueSource). In Peek mode
// it removes nothing: what the run acks stays held until the run ends, then
// is given back.
func (e *Endpoint) OpenSource(_ context.Context, opt broker.SourceOptions) (broker.Source, error) {
	qo := QueueSourceOptions{Visibility: opt.Hold, Wait: opt.Wait, MaxHeld: opt.MaxHeld, Decode: opt.Decode, StateDir: e.stateDir, Warn: e.warn, Tell: e.tell}
	if e.stateDir != "" {
		dead, err := DeadHolds(e.stateDir, e.q.URL)
		if err != nil && e.warn != nil {
			e.warn(fmt.Sprintf("cannot read the hold ledger in %s (%v): messages a killed dlqctl process still hides are not known to this run", e.stateDir, err))
		}
		qo.DeadHolds = dead
		if waiting := Waiting(dead); len(waiting) > 0 && e.tell != nil {
			what := "this run waits for them before it ends (unless --wait-inflight=false) and then processes them"
			if opt.Mode == broker.Peek {
				what = "this read cannot see them before then and says so at its end"
			}
			e.tell(DescribeDeadHolds(waiting) + ": " + what)
		}
	}
	qs := NewQueueSource(e.c, e.q, qo)
	if opt.Mode == broker.Peek {
		return peekSource{qs}, nil
	}
	return qs, nil
}

// peekSource reads without removing anything: acknowledged messages stay
// held until the run ends, then are released.
type peekSource struct{ *QueueSource }

func (peekSource) Ack(_ context.Context, msgs []broker.Message) []error {
	return make([]error, len(msgs))
}

// EndReading never abandons receives: everything a peek read is held
// until the end and then released, and an abandoned poll could take it.
func (p peekSource) EndReading(bool) { p.QueueSource.EndReading(false) }

// OpenPublisher sends with SendMessageBatch.
func (e *Endpoint) OpenPublisher(context.Context) (broker.Publisher, error) {
	return NewPublisher(e.c), nil
}

// Target is the queue as a destination.
func (e *Endpoint) Target(context.Context) (broker.Destination, error) {
	return QueueTarget(e.q), nil
}

// RouterToSource routes by DeadLetterQueueSourceArn.
func (e *Endpoint) RouterToSource(ctx context.Context) (broker.Router, error) {
	return ToSource(ctx, e.c, e.q)
}

// Depth reads the queue's approximate counts now.
func (e *Endpoint) Depth(ctx context.Context) (broker.Depth, error) {
	cp := *e.q
	if err := e.c.Refresh(ctx, &cp); err != nil {
		return broker.Depth{}, WrapAWSError(err)
	}
	return DepthOf(cp.Counts()), nil
}

// DepthOf is SQS counts as a broker.Depth.
func DepthOf(c Counts) broker.Depth {
	return broker.Depth{Ready: int64(c.Visible), Held: int64(c.InFlight), Delayed: int64(c.Delayed)}
}

// DestinationDepth is the depth (visible + in flight + delayed) of an SQS
// destination (for the backlog guard and canary checks).
func (c *Client) DestinationDepth(ctx context.Context, dest broker.Destination) (broker.Depth, error) {
	q, err := destQueue(dest)
	if err != nil {
		return broker.Depth{}, err
	}
	cp := *q
	if err := c.Refresh(ctx, &cp); err != nil {
		return broker.Depth{}, WrapAWSError(err)
	}
	return DepthOf(cp.Counts()), nil
}

var (
	_ broker.Endpoint = (*Endpoint)(nil)
	_ broker.Ender    = peekSource{}
)

// SourceDestinations are the queues whose redrive policy targets this
// DLQ, as destinations (broker.SourceLister); one that cannot be read is
// left out (empty, not nil, when none can be).
func (e *Endpoint) SourceDestinations(ctx context.Context) ([]broker.Destination, error) {
	urls, err := e.c.SourceQueueURLs(ctx, e.q)
	if err != nil || len(urls) == 0 {
		return nil, err
	}
	out := []broker.Destination{}
	for _, u := range urls {
		q := &Queue{URL: u}
		if e.c.Refresh(ctx, q) == nil {
			out = append(out, QueueTarget(q))
		}
	}
	return out, nil
}

// CheckDestination warns about a FIFO destination of a standard DLQ
// (broker.DestinationScoper): messages without a message group are
// skipped.
func (e *Endpoint) CheckDestination(dest broker.Endpoint) ([]string, error) {
	if d, ok := dest.(*Endpoint); ok && d.q.FIFO && !e.q.FIFO {
		return []string{fmt.Sprintf("%s is FIFO but %s is not: messages without a message group will be skipped", d.q.Name, e.q.Name)}, nil
	}
	return nil, nil
}

var (
	_ broker.DestinationDepther = (*Endpoint)(nil)
	_ broker.SourceLister       = (*Endpoint)(nil)
	_ broker.DestinationScoper  = (*Endpoint)(nil)
)
