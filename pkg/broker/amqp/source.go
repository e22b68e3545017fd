package amqp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// handle is a delivery's place: the consumer generation (a new channel
// after the old one closed) and its delivery tag. Never printed.
type handle struct {
	gen int
	tag uint64
}

// Source reads a queue on its own connection. Peek: deliveries are held
// until Close, which returns them all with basic.nack(requeue=true).
// Consume: Ack removes (basic.ack), Release returns (basic.nack requeue).
type Source struct {
	ep   *Endpoint
	mode broker.Mode
	opt  broker.SourceOptions
	conn *amqp091.Connection
	raw  net.Conn // the TCP connection under conn

	// readMu: one Next receives at a time (its batch is consecutive).
	readMu sync.Mutex
	mu     sync.Mutex
	c      *Consumer
	gen    int
	held   map[uint64]bool // delivery tags held in the current generation
	// released: deliveries given back by Release, returned to the queue at
	// Close (a requeue now would hand them to this run again).
	released map[uint64]bool
	read     int
	limit    int // peek: the ready count at the start (read no further)
	done     bool
	closed   bool
	// stopped: the consumer was cancelled at the end of reading.
	stopped bool
	// lastDelivery is when a read last returned a delivery (or the open).
	lastDelivery time.Time
}

var _ broker.Source = (*Source)(nil)
var _ broker.Ender = (*Source)(nil)

// OpenSource opens a reading of the queue (see Source).
func (e *Endpoint) OpenSource(ctx context.Context, opt broker.SourceOptions) (broker.Source, error) {
	return e.OpenReader(ctx, opt)
}

// OpenReader is OpenSource with the concrete type.
func (e *Endpoint) OpenReader(ctx context.Context, opt broker.SourceOptions) (*Source, error) {
	if e.isExchange {
		return nil, errs.BadInputf("%s is an exchange: dlqctl reads queues (amqp://HOST/VHOST/QUEUE)", e.display)
	}
	if opt.Mode == broker.Peek {
		if err := e.NeedManagement("reading without consuming (to know the queue type and delivery limit)"); err != nil {
			return nil, errs.BadInput(err)
		}
		if err := CheckPeekSafe(e.info); err != nil {
			return nil, errs.BadInput(err)
		}
	} else if e.info.Type == TypeStream {
		return nil, errs.BadInputf("queue %q is a stream: reading a stream removes nothing, so RabbitMQ cannot move or discard its messages; sample, group and classify read it by offset, and redrive --dry-run or archive without --delete copy nothing out of it either: publish from it with a stream consumer of your own", e.ref.Queue)
	}
	var raw net.Conn
	conn, err := e.dialWith(ctx, "source", func(c net.Conn) { raw = c })
	if err != nil {
		return nil, err
	}
	s := &Source{ep: e, mode: opt.Mode, opt: opt, conn: conn, raw: raw, held: map[uint64]bool{}, released: map[uint64]bool{}, lastDelivery: time.Now()}
	if opt.Mode == broker.Peek && e.info.Type != TypeStream {
		n, err := readyCount(conn, e.ref.Queue)
		if err != nil {
			conn.Close()
			return nil, err
		}
		s.limit = n
	} else if e.info.Type == TypeStream {
		s.limit = int(e.info.Messages)
	}
	return s, nil
}

// Name is the endpoint's display.
func (s *Source) Name() string { return s.ep.display }

func (s *Source) prefetch() int {
	p := s.ep.cfg.Prefetch
	if s.opt.MaxHeld > 0 {
		// The run's own cap: lower (a small sample) or higher (an archive
		// that holds everything it reads until its parts are verified).
		p = min(s.opt.MaxHeld, 65535)
	}
	if s.mode == broker.Peek && s.limit > 0 && s.limit < p {
		p = s.limit
	}
	return max(p, 1)
}

// consumer returns the live consumer, opening a new one (a new
// generation) when the channel closed.
func (s *Source) consumer(ctx context.Context) (*Consumer, error) {
	if s.c != nil && !s.c.ch.IsClosed() {
		return s.c, nil
	}
	if s.c != nil && s.mode == broker.Peek {
		// A peek's held deliveries returned to the queue with the channel:
		// reading on would hand them out again.
		return nil, fmt.Errorf("the channel to %s closed during the peek (its messages went back to the queue): %w", s.ep.display, broker.ErrLeaseLost)
	}
	c, err := Consume(ctx, s.conn, s.ep.ref.Queue, s.ep.info.Type, ConsumeOptions{Prefetch: s.prefetch(), Tag: consumerTag(s.opt.Share)})
	if err != nil {
		return nil, err
	}
	s.c, s.gen, s.held, s.released = c, s.gen+1, map[uint64]bool{}, map[uint64]bool{}
	return c, nil
}

// Next returns up to max deliveries: it waits up to the read's Wait (or
// Config.Idle) for the first, then takes what has already arrived. A
// consuming read answers an empty batch when nothing is ready (End decides
// the end); a peek ErrSourceDone once everything ready at the start was
// read.
func (s *Source) Next(ctx context.Context, max int) ([]broker.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("source closed")
	}
	if s.done || (s.mode == broker.Peek && s.read >= s.limit) {
		s.done = true
		s.mu.Unlock()
		return nil, broker.ErrSourceDone
	}
	c, err := s.consumer(ctx)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	gen := s.gen
	if s.mode == broker.Peek {
		max = min(max, s.limit-s.read)
	}
	s.mu.Unlock()
	// Wait without the lock: other workers ack and release meanwhile.
	// One read at a time takes its batch and records it as held before
	// the next read starts: a batch is a run of consecutive deliveries,
	// which Ack can then remove with one basic.ack(multiple).
	s.readMu.Lock()
	defer s.readMu.Unlock()
	wait := s.opt.Wait
	if wait <= 0 {
		wait = s.ep.cfg.Idle
	}
	// Deliveries stream in behind the first: room for a whole batch up to
	// the prefetch (the records point into it, so it is not copied).
	room := min(max, s.prefetch())
	if room < 0 {
		room = 0
	}
	got := make([]Message, 0, room)
	var recvErr error
	for len(got) < max {
		d := wait
		if len(got) > 0 {
			// What has arrived, and what arrives within a short linger:
			// deliveries stream in behind the first one.
			d = lingerFor
		}
		m, ok, err := c.Next(ctx, d)
		if err != nil {
			recvErr = err
			break
		}
		if !ok {
			break
		}
		got = append(got, m)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]broker.Message, 0, len(got))
	now, id := s.ep.cfg.Now(), s.ep.ID()
	if len(got) > 0 {
		s.lastDelivery = time.Now()
	}
	// A batch's records, their AMQP parts and handles are one allocation
	// each (a batch is handled, acked and dropped together).
	recs := make([]record.Record, len(got))
	syss := make([]record.AMQPSystem, len(got))
	hs := make([]handle, len(got))
	for i, m := range got {
		s.read++
		if c.stream {
			_ = c.Ack(m.DeliveryTag) // stream credit: removes nothing
		} else if gen == s.gen {
			s.held[m.DeliveryTag] = true
		}
		rec := &recs[i]
		fillRecord(rec, &syss[i], m, id, s.ep.info.Type, now, s.opt.Lean)
		// The delivery stays with its record: a copy is made from it.
		rec.System.AMQP.Native = &got[i]
		hs[i] = handle{gen: gen, tag: m.DeliveryTag}
		bm := broker.Message{Record: rec, Handle: &hs[i]}
		if s.opt.Decode != nil {
			bm.Parsed = s.opt.Decode(rec)
		}
		out = append(out, bm)
	}
	if recvErr != nil {
		if len(out) > 0 {
			return out, nil // handed out; the error comes back next call
		}
		if errors.Is(recvErr, ErrConsumerCancelled) && s.mode == broker.Consume {
			return nil, nil // a new channel next call; held handles are stale
		}
		return nil, recvErr
	}
	if len(out) == 0 {
		n, err := readyCount(s.conn, s.ep.ref.Queue)
		if err != nil {
			return nil, err
		}
		switch {
		case s.mode == broker.Peek:
			// Nothing arrived within the wait although the count said
			// more: others hold them, or they expired.
			s.done = true
			return nil, broker.ErrSourceDone
		case n == 0:
			// Consume: nothing ready now. Deliveries the run holds may
			// still be given back, and other consumers may return what
			// they hold: the run's end is decided by End (end.go) once
			// nothing is in progress, not here.
			return nil, nil
		case len(s.held)+len(s.released) >= s.prefetch():
			// Full prefetch: RabbitMQ delivers nothing more to this run.
			// Given-back deliveries (not selected, or returned) are held
			// to the end, else RabbitMQ would hand them to the run again.
			return nil, fmt.Errorf("%w: this run holds %d deliveries unacknowledged, its prefetch (--amqp-prefetch), %d of them not selected or given back and kept until the end so they are not delivered to it again, and RabbitMQ delivers no more while %d are ready in %s; raise --amqp-prefetch above the number of messages the run skips (at most 65535), or move or archive those first",
				broker.ErrHeldLimit, len(s.held)+len(s.released), len(s.released), n, s.ep.ref.Queue)
		}
	}
	return out, nil
}

// lingerFor is how long a read waits for more deliveries after the first.
const lingerFor = 2 * time.Millisecond

// Ack removes messages (consume mode). A delivery of a channel that has
// since closed went back to the queue: ErrLeaseLost, not removed. When
// the messages are every delivery the channel still has outstanding up to
// the newest of them (one worker's batch, read in one go, finished before
// the batches behind it), one basic.ack(multiple) removes them all; what
// is left is acknowledged one by one.
func (s *Source) Ack(ctx context.Context, msgs []broker.Message) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errsOut := make([]error, len(msgs))
	var tags []uint64
	var idx []int
	for i, m := range msgs {
		h, ok := m.Handle.(*handle)
		switch {
		case !ok || h == nil:
			errsOut[i] = errors.New("not a RabbitMQ delivery")
		case s.c == nil || h.gen != s.gen || s.c.ch.IsClosed() || !s.held[h.tag]:
			errsOut[i] = fmt.Errorf("message %s: its channel closed, the delivery went back to the queue: %w", m.Record.MessageID, broker.ErrLeaseLost)
		case s.mode == broker.Peek:
			// A peek removes nothing: the message stays held until Close
			// gives it back.
		default:
			tags, idx = append(tags, h.tag), append(idx, i)
		}
	}
	upTo := s.ackablePrefix(tags)
	if upTo > 0 {
		if err := s.c.AckUpTo(upTo); err != nil {
			for j, tag := range tags {
				if tag <= upTo {
					errsOut[idx[j]] = fmt.Errorf("message %s: %v: %w", msgs[idx[j]].Record.MessageID, err, broker.ErrLeaseLost)
				}
			}
		} else {
			for _, tag := range tags {
				if tag <= upTo {
					delete(s.held, tag)
				}
			}
		}
	}
	for j, tag := range tags {
		if tag <= upTo {
			continue
		}
		if err := s.c.Ack(tag); err != nil {
			errsOut[idx[j]] = fmt.Errorf("message %s: %v: %w", msgs[idx[j]].Record.MessageID, err, broker.ErrLeaseLost)
			continue
		}
		delete(s.held, tag)
	}
	return errsOut
}

// ackablePrefix returns the newest tag t of tags such that every delivery
// the channel has outstanding (held, or given back and kept to the end)
// up to t is in tags: basic.ack(t, multiple) then removes exactly those.
// 0 when there is no such prefix of two or more. s.mu must be held.
func (s *Source) ackablePrefix(tags []uint64) uint64 {
	if len(tags) < 2 {
		return 0
	}
	mine := make(map[uint64]struct{}, len(tags))
	var newest uint64
	for _, t := range tags {
		mine[t] = struct{}{}
		newest = max(newest, t)
	}
	// The oldest outstanding delivery that is not in tags bounds the prefix.
	bound := newest + 1
	for _, m := range []map[uint64]bool{s.held, s.released} {
		for t := range m {
			if _, ok := mine[t]; !ok && t < bound {
				bound = t
			}
		}
	}
	var upTo uint64
	n := 0
	for _, t := range tags {
		if t < bound {
			upTo = max(upTo, t)
			n++
		}
	}
	if n < 2 {
		return 0
	}
	return upTo
}

// Release gives messages back. They return to the queue when the source
// closes (one basic.nack multiple, requeue): requeued at once they would
// be handed to this run again (classic queues put them back at the head).
func (s *Source) Release(ctx context.Context, msgs []broker.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		h, ok := m.Handle.(*handle)
		if !ok || h == nil || h.gen != s.gen || !s.held[h.tag] {
			continue // that channel closed: already back in the queue
		}
		delete(s.held, h.tag)
		s.released[h.tag] = true
	}
	return nil
}

// Close returns everything held (one basic.nack multiple, requeue) and
// closes the connection; the broker returns whatever a broken connection
// still held. It never waits more than closeTimeout for the broker's
// answers: past it the TCP connection is cut, which returns everything
// held just the same.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	done := make(chan error, 1)
	go func() { done <- s.closeLocked(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeTimeout):
		if s.raw != nil {
			_ = s.raw.Close()
		}
		return fmt.Errorf("RabbitMQ did not answer the close of %s within %s: the connection was cut, so the broker returns every message this run held", s.ep.ref.Queue, closeTimeout)
	}
}

// closeTimeout bounds Close.
const closeTimeout = 15 * time.Second

func (s *Source) closeLocked(ctx context.Context) error {
	var err error
	if s.c != nil {
		// Up to the newest delivery still outstanding: acknowledged ones
		// are gone (a nack naming one is a channel error).
		var upTo uint64
		for _, m := range []map[uint64]bool{s.held, s.released} {
			for tag := range m {
				upTo = max(upTo, tag)
			}
		}
		if upTo == 0 {
			s.c.cancel()
			err = s.c.Close()
		} else {
			err = s.c.ReleaseAll(upTo)
		}
		if s.mode == broker.Peek && err == nil && s.ep.info.Type != TypeStream {
			waitReady(context.WithoutCancel(ctx), s.conn, s.ep.ref.Queue, s.limit, 5*time.Second)
		}
	}
	if cerr := s.conn.Close(); err == nil && cerr != nil && !errors.Is(cerr, amqp091.ErrClosed) {
		err = cerr
	}
	return err
}
