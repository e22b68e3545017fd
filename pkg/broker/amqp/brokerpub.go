package amqp

import (
	"context"
	"errors"
	"fmt"

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
	m, err := DeliveryOf(rec)
	if err != nil {
		return broker.Outgoing{}, err.Error()
	}
	if len(m.Body) > MaxMessageBytes {
		return broker.Outgoing{}, fmt.Sprintf("body of %d bytes is over RabbitMQ's default max_message_size (%d)", len(m.Body), MaxMessageBytes)
	}
	now := opt.Now
	if now.IsZero() {
		now = p.ep.cfg.Now()
	}
	pub, err := Republish(m, route, rec.MessageID, RepublishOptions{RunID: opt.RunID, Now: now})
	if err != nil {
		return broker.Outgoing{}, err.Error()
	}
	return broker.Outgoing{Size: len(pub.Msg.Body), Marked: true, Native: pub}, ""
}

// Publish publishes a batch and waits for its confirms: nil per entry when
// confirmed and not returned; broker.Rejected for a return (unroutable), a
// negative confirm or a missing exchange; any other error is an unknown
// outcome.
func (p *BrokerPublisher) Publish(ctx context.Context, dest broker.Destination, batch []broker.Outgoing) ([]broker.Result, error) {
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
	err := p.pub.Close()
	if cerr := p.conn.Close(); err == nil && cerr != nil && !errors.Is(cerr, amqp091.ErrClosed) {
		err = cerr
	}
	return err
}
