package amqp

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// BrokerPublisher is the broker.Publisher of a RabbitMQ endpoint: its own
// connection, a confirm-mode channel, mandatory publishes.
type BrokerPublisher struct {
	ep   *Endpoint
	pub  *Publisher
	conn *amqp091.Connection
}

var _ broker.Publisher = (*BrokerPublisher)(nil)

// OpenPublisher opens a publishing connection.
func (e *Endpoint) OpenPublisher(ctx context.Context) (broker.Publisher, error) {
	conn, err := e.dial(ctx, "publisher")
	if err != nil {
		return nil, err
	}
	p, err := NewPublisher(conn, e.cfg.ConfirmWindow)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &BrokerPublisher{ep: e, pub: p, conn: conn}, nil
}

// Prepare builds the copy of rec for dest: body and properties as they
// were, headers without the dead-lettering ones, the death history and
// the redrive marker added, CC set for the route's other routing keys.
func (p *BrokerPublisher) Prepare(rec *record.Record, dest broker.Destination, opt broker.CopyOptions) (broker.Outgoing, string) {
	route, ok := dest.Target.(Route)
	if !ok {
		return broker.Outgoing{}, "destination is not a RabbitMQ exchange or queue"
	}
	// A record read in this process carries its delivery: the copy is
	// made from it, each header given the value the record's attribute
	// would give it (the same copy, without the trip through the record).
	// A record read back (an archive, a plan) is turned into one.
	var m Message
	native, fromDelivery := nativeOf(rec)
	if fromDelivery {
		m = *native
		if !m.Timestamp.IsZero() {
			m.Timestamp = m.Timestamp.UTC() // as the record keeps it (the same second on the wire)
		}
	} else {
		var err error
		if m, err = DeliveryOf(rec); err != nil {
			return broker.Outgoing{}, err.Error()
		}
	}
	if len(m.Body) > MaxMessageBytes {
		return broker.Outgoing{}, fmt.Sprintf("body of %d bytes is over RabbitMQ's default max_message_size (%d)", len(m.Body), MaxMessageBytes)
	}
	now := opt.Now
	if now.IsZero() {
		now = p.ep.cfg.Now()
	}
	pub, err := republish(m, route, rec.MessageID, RepublishOptions{RunID: opt.RunID, Now: now}, fromDelivery)
	if err != nil {
		if fromDelivery && !errors.Is(err, ErrNoRoute) {
			return broker.Outgoing{}, fmt.Sprintf("message %s: %v", rec.MessageID, err)
		}
		return broker.Outgoing{}, err.Error()
	}
	return broker.Outgoing{Size: len(pub.Msg.Body), Marked: true, Native: pub}, ""
}

// Publish publishes a batch and waits for its confirms: nil per entry when
// confirmed and not returned; broker.Rejected for a return (unroutable), a
// negative confirm or a missing exchange; any other error is an unknown
// outcome.
func (p *BrokerPublisher) Publish(ctx context.Context, dest broker.Destination, batch []broker.Outgoing) ([]broker.Result, error) {
	if p.pub == nil {
		return nil, errors.New("amqp: a dry run's publisher does not publish")
	}
	pubs := make([]Publishing, len(batch))
	for i, o := range batch {
		pp, ok := o.Native.(Publishing)
		if !ok {
			return nil, errors.New("amqp: an entry was not prepared by this publisher")
		}
		pubs[i] = pp
	}
	res := p.pub.Publish(ctx, pubs)
	out := make([]broker.Result, len(res))
	for i, r := range res {
		switch {
		case r.Err == nil:
			// RabbitMQ assigns no id to a message: the journal records the
			// copy's message-id (or record id) and its confirm.
			id := pubs[i].Msg.MessageId
			if id == "" {
				id = "confirm"
			}
			out[i].ID = id + "#" + strconv.FormatUint(r.Seq, 10)
		case errors.Is(r.Err, ErrUnroutable), errors.Is(r.Err, ErrNacked), errors.Is(r.Err, ErrBadMessage), errors.Is(r.Err, ErrNotFound), errors.Is(r.Err, ErrAuth):
			out[i].Err = broker.Rejected(r.Err)
		default:
			out[i].Err = r.Err
		}
	}
	return out, nil
}

// Close closes the channel and the connection.
func (p *BrokerPublisher) Close(ctx context.Context) error {
	if p.pub == nil {
		return nil
	}
	err := p.pub.Close()
	if cerr := p.conn.Close(); err == nil && cerr != nil && !errors.Is(cerr, amqp091.ErrClosed) {
		err = cerr
	}
	return err
}

// Preparer is a publisher that only prepares copies (a dry run's plan):
// Publish fails, nothing is connected.
func (e *Endpoint) Preparer() broker.Publisher { return &BrokerPublisher{ep: e} }

// DestinationDepth is a destination's depth: a queue's (reached through
// the default exchange); an exchange has none (broker.ErrUnsupported).
func (e *Endpoint) DestinationDepth(ctx context.Context, d broker.Destination) (broker.Depth, error) {
	r, ok := d.Target.(Route)
	if !ok || r.Exchange != "" || len(r.RoutingKeys) == 0 {
		return broker.Depth{}, fmt.Errorf("%s: %w (an exchange has no depth)", d.Label, broker.ErrUnsupported)
	}
	conn, err := e.dial(ctx, "depth")
	if err != nil {
		return broker.Depth{}, err
	}
	defer conn.Close()
	n, err := readyCount(conn, r.RoutingKeys[0])
	if err != nil {
		return broker.Depth{}, err
	}
	return broker.Depth{Ready: int64(n), Exact: true}, nil
}

// nativeOf returns the delivery a record was read from, when it was read
// by this process (Source.Next keeps it on the record).
func nativeOf(rec *record.Record) (*Message, bool) {
	if a := rec.System.AMQP; a != nil {
		if m, ok := a.Native.(*Message); ok && m != nil {
			return m, true
		}
	}
	return nil, false
}

// UnpacedBatch is the read and publish batch of an unpaced move out of
// this queue (UnpacedBatch; broker.UnpacedBatcher).
func (e *Endpoint) UnpacedBatch(workers, limit int) (entries, bytes int) {
	return UnpacedBatch(e.cfg, workers, limit), MaxBatchBytes
}

// CheckDestination refuses a destination on another server or vhost:
// dlqctl redrives within one vhost (broker.DestinationScoper).
func (e *Endpoint) CheckDestination(dest broker.Endpoint) ([]string, error) {
	d, ok := dest.(*Endpoint)
	if !ok || d.ref.HostPort() != e.ref.HostPort() || d.ref.VHost != e.ref.VHost {
		return nil, errors.New("is on another RabbitMQ server or vhost; dlqctl redrives within one vhost (archive and restore move messages between servers)")
	}
	return nil, nil
}

var (
	_ broker.Preparer           = (*Endpoint)(nil)
	_ broker.UnpacedBatcher     = (*Endpoint)(nil)
	_ broker.DestinationScoper  = (*Endpoint)(nil)
	_ broker.DestinationDepther = (*Endpoint)(nil)
)
