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
	// Seq is the publish's sequence number on its channel (the delivery
	// tag of its confirm); 0 when it was not published.
	Seq uint64
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

// Publisher publishes with mandatory routing and publisher confirms,
// Window messages outstanding at most per call. Concurrent calls use
// channels of their own (a pool), so one call's wait for confirms never
// holds up another's. A message counts as published only when the broker
// confirmed it and did not return it.
type Publisher struct {
	conn   *amqp091.Connection
	window int

	mu     sync.Mutex
	free   []*pubChannel
	closed bool
}

// pubChannel is one confirm-mode channel with its returns.
type pubChannel struct {
	ch      *amqp091.Channel
	returns chan amqp091.Return
	closed  chan *amqp091.Error
	// closeErr is the reason the channel closed (once read).
	closeErr *amqp091.Error
}

// NewPublisher opens a confirm-mode channel on conn.
func NewPublisher(conn *amqp091.Connection, window int) (*Publisher, error) {
	if window <= 0 {
		window = 256
	}
	p := &Publisher{conn: conn, window: window}
	c, err := p.open()
	if err != nil {
		return nil, err
	}
	p.free = append(p.free, c)
	return p, nil
}

func (p *Publisher) open() (*pubChannel, error) {
	ch, err := p.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("opening a channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("enabling publisher confirms: %w", err)
	}
	// Returns are read after the confirms of their window: the buffer
	// holds a whole window, so the connection's reader never blocks on it.
	return &pubChannel{ch: ch,
		returns: ch.NotifyReturn(make(chan amqp091.Return, p.window+1)),
		closed:  ch.NotifyClose(make(chan *amqp091.Error, 1)),
	}, nil
}

func (p *Publisher) get() (*pubChannel, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("publisher closed")
	}
	for len(p.free) > 0 {
		c := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		if !c.ch.IsClosed() {
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()
	return p.open()
}

func (p *Publisher) put(c *pubChannel) {
	if c == nil || c.ch.IsClosed() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.ch.Close()
		return
	}
	p.free = append(p.free, c)
}

// Close closes the publisher's channels.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var first error
	for _, c := range p.free {
		if err := c.ch.Close(); err != nil && first == nil && !errors.Is(err, amqp091.ErrClosed) {
			first = err
		}
	}
	p.free = nil
	return first
}

// Publish publishes every entry, Window at a time, and reports one result
// per entry in order. ctx cancels waiting; entries not confirmed by then
// report ErrNotConfirmed (they may still arrive).
func (p *Publisher) Publish(ctx context.Context, entries []Publishing) []PublishResult {
	res := make([]PublishResult, len(entries))
	var c *pubChannel
	for start := 0; start < len(entries); start += p.window {
		end := min(start+p.window, len(entries))
		if c == nil || c.ch.IsClosed() {
			var err error
			if c, err = p.get(); err != nil {
				for i := start; i < len(entries); i++ {
					res[i].Err = err
				}
				return res
			}
		}
		c.publishWindow(ctx, entries[start:end], res[start:end])
	}
	p.put(c)
	return res
}

func (c *pubChannel) publishWindow(ctx context.Context, entries []Publishing, res []PublishResult) {
	dcs := make([]*amqp091.DeferredConfirmation, len(entries))
	for i, e := range entries {
		if err := e.Msg.Headers.Validate(); err != nil {
			// A header the protocol cannot carry: this entry only.
			res[i].Err = fmt.Errorf("%w: %v", ErrBadMessage, err)
			continue
		}
		dc, err := c.ch.PublishWithDeferredConfirmWithContext(ctx, e.Exchange, e.RoutingKey, true, false, e.Msg)
		if err != nil {
			for j := i; j < len(entries); j++ {
				res[j].Err = fmt.Errorf("publishing to exchange %q: %w", e.Exchange, err)
			}
			break
		}
		dcs[i] = dc
		res[i].Seq = dc.DeliveryTag
	}
	for i, dc := range dcs {
		if dc == nil {
			continue
		}
		ack, err := dc.WaitContext(ctx)
		switch {
		case err != nil:
			res[i].Err = fmt.Errorf("%w: %v", ErrNotConfirmed, err)
		case !ack && c.ch.IsClosed():
			res[i].Err = c.closedError(entries[i])
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
		case rr, ok := <-c.returns:
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

func (c *pubChannel) closedError(e Publishing) error {
	// A channel exception (404: the exchange does not exist; 403) closes
	// the channel: say which.
	if c.closeErr == nil {
		select {
		case e, ok := <-c.closed:
			if ok && e != nil {
				c.closeErr = e
			}
		default:
		}
	}
	if ce := c.closeErr; ce != nil {
		switch ce.Code {
		case amqp091.NotFound:
			return fmt.Errorf("publishing to exchange %q: %w: %s", e.Exchange, ErrNotFound, ce.Reason)
		case amqp091.AccessRefused:
			return fmt.Errorf("publishing to exchange %q: %w: %s", e.Exchange, ErrAuth, ce.Reason)
		}
		return fmt.Errorf("publishing to exchange %q: %w", e.Exchange, ce)
	}
	return ErrNotConfirmed
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
