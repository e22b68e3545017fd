package amqp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// Publishing is one message to publish.
type Publishing struct {
	Exchange   string
	RoutingKey string
	Msg        amqp091.Publishing
}

// PublishResult is the outcome of one Publishing.
type PublishResult struct {
	// Err is nil when the broker confirmed the message and did not return
	// it. Returned messages wrap ErrUnroutable, negative confirms ErrNacked.
	Err error
}

// ErrUnroutable: a mandatory publish matched no queue (basic.return).
var ErrUnroutable = errors.New("unroutable: no queue is bound for it")

// ErrNacked: the broker refused the message (basic.nack), e.g. a full
// queue with overflow reject-publish.
var ErrNacked = errors.New("the broker refused the message (negative publisher confirm)")

// ErrBadMessage: the message cannot be sent as it is (a header of a type
// AMQP 0-9-1 cannot carry); it was not published.
var ErrBadMessage = errors.New("the message cannot be published")

// ErrNotConfirmed: the channel closed before the broker confirmed the
// message; it may or may not have been routed.
var ErrNotConfirmed = errors.New("no publisher confirm before the channel closed (delivery unknown)")

// Publisher publishes with mandatory routing and publisher confirms on its
// own channel, Window messages outstanding at most. A message counts as
// published only when the broker confirmed it and did not return it.
type Publisher struct {
	conn   *amqp091.Connection
	window int

	mu      sync.Mutex
	ch      *amqp091.Channel
	returns chan amqp091.Return
	closed  chan *amqp091.Error
	// closeErr is the reason the current channel closed (once read).
	closeErr *amqp091.Error
}

// NewPublisher opens a confirm-mode channel on conn.
func NewPublisher(conn *amqp091.Connection, window int) (*Publisher, error) {
	if window <= 0 {
		window = 256
	}
	p := &Publisher{conn: conn, window: window}
	if err := p.open(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Publisher) open() error {
	ch, err := p.conn.Channel()
	if err != nil {
		return fmt.Errorf("opening a channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return fmt.Errorf("enabling publisher confirms: %w", err)
	}
	// Returns are read after the confirms of their window: the buffer
	// holds a whole window, so the connection's reader never blocks on it.
	p.returns = ch.NotifyReturn(make(chan amqp091.Return, p.window+1))
	p.closed = ch.NotifyClose(make(chan *amqp091.Error, 1))
	p.closeErr = nil
	p.ch = ch
	return nil
}

// Close closes the channel.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		return nil
	}
	err := p.ch.Close()
	p.ch = nil
	if errors.Is(err, amqp091.ErrClosed) {
		return nil
	}
	return err
}

// Publish publishes every entry, Window at a time, and reports one result
// per entry in order. ctx cancels waiting; entries not confirmed by then
// report ErrNotConfirmed (they may still arrive).
func (p *Publisher) Publish(ctx context.Context, entries []Publishing) []PublishResult {
	res := make([]PublishResult, len(entries))
	p.mu.Lock()
	defer p.mu.Unlock()
	for start := 0; start < len(entries); start += p.window {
		end := min(start+p.window, len(entries))
		p.publishWindow(ctx, entries[start:end], res[start:end])
	}
	return res
}

func (p *Publisher) publishWindow(ctx context.Context, entries []Publishing, res []PublishResult) {
	if p.ch == nil || p.ch.IsClosed() {
		if err := p.open(); err != nil {
			for i := range res {
				res[i].Err = err
			}
			return
		}
	}
	dcs := make([]*amqp091.DeferredConfirmation, len(entries))
	for i, e := range entries {
		if err := e.Msg.Headers.Validate(); err != nil {
			// A header the protocol cannot carry: this entry only.
			res[i].Err = fmt.Errorf("%w: %v", ErrBadMessage, err)
			continue
		}
		dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, e.Exchange, e.RoutingKey, true, false, e.Msg)
		if err != nil {
			for j := i; j < len(entries); j++ {
				res[j].Err = fmt.Errorf("publishing to exchange %q: %w", e.Exchange, err)
			}
			break
		}
		dcs[i] = dc
	}
	for i, dc := range dcs {
		if dc == nil {
			continue
		}
		ack, err := dc.WaitContext(ctx)
		switch {
		case err != nil:
			res[i].Err = fmt.Errorf("%w: %v", ErrNotConfirmed, err)
		case !ack && p.ch.IsClosed():
			res[i].Err = p.closedError(entries[i])
		case !ack:
			res[i].Err = ErrNacked
		}
	}
	// Every return of this window arrived before the confirm of its
	// message (the broker sends basic.return first, and the client
	// dispatches frames in order): match them in publish order.
	next := 0
	for {
		var r amqp091.Return
		select {
		case rr, ok := <-p.returns:
			if !ok {
				return // the channel closed
			}
			r = rr
		default:
			return
		}
		for j := next; j < len(entries); j++ {
			e := entries[j]
			if e.Exchange == r.Exchange && e.RoutingKey == r.RoutingKey && bytes.Equal(e.Msg.Body, r.Body) && e.Msg.MessageId == r.MessageId {
				if res[j].Err == nil || errors.Is(res[j].Err, ErrNacked) {
					res[j].Err = fmt.Errorf("%w (exchange %q, routing key %q: %d %s)", ErrUnroutable, r.Exchange, r.RoutingKey, r.ReplyCode, r.ReplyText)
				}
				next = j + 1
				break
			}
		}
	}
}

func (p *Publisher) closedError(e Publishing) error {
	// A channel exception (404: the exchange does not exist; 403) closes
	// the channel: say which.
	if err := p.channelCloseReason(); err != nil {
		return fmt.Errorf("publishing to exchange %q: %w", e.Exchange, err)
	}
	return ErrNotConfirmed
}

func (p *Publisher) channelCloseReason() error {
	if p.closeErr == nil {
		select {
		case e, ok := <-p.closed:
			if ok && e != nil {
				p.closeErr = e
			}
		default:
		}
	}
	if e := p.closeErr; e != nil {
		{
			if e.Code == amqp091.NotFound {
				return fmt.Errorf("%w: %s", ErrNotFound, e.Reason)
			}
			if e.Code == amqp091.AccessRefused {
				return fmt.Errorf("%w: %s", ErrAuth, e.Reason)
			}
			return e
		}
	}
	return nil
}

// CheckExchange verifies that exchange exists (passive declare on a
// throwaway channel). The default exchange ("") always exists.
func CheckExchange(conn *amqp091.Connection, exchange string) error {
	if exchange == "" {
		return nil
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("opening a channel: %w", err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclarePassive(exchange, "direct", false, false, false, false, nil); err != nil {
		var ae *amqp091.Error
		if errors.As(err, &ae) && ae.Code == amqp091.NotFound {
			return fmt.Errorf("exchange %q: %w", exchange, ErrNotFound)
		}
		return fmt.Errorf("checking exchange %q: %w", exchange, err)
	}
	return nil
}
