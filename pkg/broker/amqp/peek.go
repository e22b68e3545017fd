package amqp

import (
	"context"
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// ErrPeekUnsafe: a peek could change the queue in a way the user would
// not expect (push messages over a quorum queue's delivery limit). Bad
// input: exit 2, nothing changed.
var ErrPeekUnsafe = broker.ErrPeekUnsafe

// PeekOptions configure Peek.
type PeekOptions struct {
	// Max is how many messages to read at most (0: everything that was
	// ready when the peek started).
	Max int
	// Idle is how long to wait for a delivery before concluding the queue
	// has no more (default 2 s).
	Idle time.Duration
	// MaxHold bounds the deliveries held at once (prefetch); Peek reads at
	// most this many (default 10000).
	MaxHold int
}

// PeekResult says what a peek saw.
type PeekResult struct {
	Queue QueueInfo
	// ReadyAtStart is the queue's ready count (basic passive declare,
	// exact) when the peek started.
	ReadyAtStart int
	// Truncated: messages were left unread (Max or MaxHold reached).
	Truncated bool
}

// CheckPeekSafe refuses a peek that could push quorum-queue messages over
// the delivery limit: every peeked message is returned with a requeue,
// which counts as a delivery attempt (RabbitMQ 4.0–4.2 count every return;
// past the limit a message is dead-lettered again, or dropped without a
// dead-letter exchange).
func CheckPeekSafe(q QueueInfo) error {
	if q.Type != TypeQuorum {
		return nil
	}
	lim, ok := q.DeliveryLimit()
	if !ok {
		return nil
	}
	dlx, hasDLX := q.DeadLetterExchange()
	fate := "dropped (the queue has no dead-letter exchange)"
	if hasDLX {
		fate = fmt.Sprintf("dead-lettered again to exchange %q", dlx)
	}
	return fmt.Errorf("%w: queue %q is a quorum queue with delivery limit %d, and each peek returns messages with a requeue that counts toward it; a message past the limit is %s. Lift the limit on this queue (a policy with delivery-limit, -1 on RabbitMQ 4.x) or read it with archive, which acknowledges instead of requeueing",
		ErrPeekUnsafe, q.Name, lim, fate)
}

// Peek reads messages of ref's queue without consuming them: it consumes
// with manual acknowledgement and a bounded prefetch, holds the
// deliveries, and returns every one of them with an explicit
// basic.nack(requeue=true) before returning. Classic queues keep their
// order. Stream queues are read from the first offset (a stream read
// removes nothing). info must be the queue's management description.
func Peek(ctx context.Context, conn *amqp091.Connection, info QueueInfo, o PeekOptions, fn func(Message) error) (res PeekResult, err error) {
	res.Queue = info
	if err := CheckPeekSafe(info); err != nil {
		return res, err
	}
	idle := o.Idle
	if idle <= 0 {
		idle = 2 * time.Second
	}
	hold := o.MaxHold
	if hold <= 0 {
		hold = 10000
	}
	want := o.Max
	// The exact ready count: a passive declare on its own channel (a 404
	// closes the channel it was sent on).
	ready, err := readyCount(conn, info.Name)
	if err != nil {
		return res, err
	}
	res.ReadyAtStart = ready
	if info.Type == TypeStream {
		ready = int(info.Messages)
	}
	if want <= 0 || want > ready {
		want = ready
	}
	if want > hold {
		want, res.Truncated = hold, true
	}
	if o.Max > 0 && o.Max < ready {
		res.Truncated = true
	}
	if want == 0 {
		return res, nil
	}
	c, err := Consume(ctx, conn, info.Name, info.Type, ConsumeOptions{Prefetch: want, Tag: newTag("dlqctl-peek")})
	if err != nil {
		return res, err
	}
	defer func() {
		if rerr := c.ReleaseAll(0); rerr != nil && err == nil {
			err = fmt.Errorf("returning peeked messages to %q: %w (unacknowledged deliveries return to the queue when the connection closes)", info.Name, rerr)
			return
		}
		if info.Type != TypeStream {
			// The broker processes returns asynchronously (a quorum queue
			// through its log): wait, briefly, until they are ready again,
			// so the next reader sees the queue as it was.
			waitReady(ctx, conn, info.Name, res.ReadyAtStart, 5*time.Second)
		}
	}()
	for n := 0; n < want; n++ {
		m, ok, err := c.Next(ctx, idle)
		if err != nil {
			return res, err
		}
		if !ok {
			break // fewer than counted: others hold some, or they expired
		}
		if c.stream {
			_ = c.Ack(m.DeliveryTag) // stream credit, removes nothing
		}
		if err := fn(m); err != nil {
			return res, err
		}
	}
	return res, nil
}

// readyCount returns the queue's ready message count from a passive
// queue.declare (exact at that instant).
func readyCount(conn *amqp091.Connection, queue string) (int, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("opening a channel: %w", err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	if err != nil {
		return 0, consumeError(queue, err)
	}
	return q.Messages, nil
}

// waitReady polls the queue's ready count until it reaches want or the
// timeout passes (other consumers may hold some: never an error).
func waitReady(ctx context.Context, conn *amqp091.Connection, queue string, want int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for d := 5 * time.Millisecond; ; d = min(d*2, 200*time.Millisecond) {
		n, err := readyCount(conn, queue)
		if err != nil || n >= want || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}
