// Package amqpseed dead-letters messages for real on a RabbitMQ server:
// rejection (plain, and Spring AMQP's RepublishMessageRecoverer headers),
// TTL expiry (queue TTL and per-message expiration), max-length overflow
// and a quorum queue's delivery limit. Tests, the demo and benchmarks use
// it; every message reaches the DLQ through the broker's own
// dead-lettering, except the Spring recoverer's, which publishes like
// Spring does.
package amqpseed

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// Options configure Seed.
type Options struct {
	// Prefix names everything: PREFIX.orders (topic exchange and queue),
	// PREFIX.dlx (fanout), PREFIX.dlq, ...
	Prefix string
	// Rejected, Spring, Expired, PerMessageTTL, MaxLen, DeliveryLimit:
	// how many messages to dead-letter each way.
	Rejected, Spring, Expired, PerMessageTTL, MaxLen, DeliveryLimit int
	// QuorumDLQ makes the DLQ a quorum queue (DLQDeliveryLimit sets its
	// own delivery limit when > 0).
	QuorumDLQ        bool
	DLQDeliveryLimit int
}

// Default is a small mixed incident: 12 messages in the DLQ.
func Default(prefix string) Options {
	return Options{Prefix: prefix, Rejected: 3, Spring: 2, Expired: 2, PerMessageTTL: 1, MaxLen: 2, DeliveryLimit: 2}
}

// Total is the number of messages the DLQ holds after Seed.
func (o Options) Total() int {
	return o.Rejected + o.Spring + o.Expired + o.PerMessageTTL + o.MaxLen + o.DeliveryLimit
}

// Names of what Seed declares.
type Names struct {
	Exchange, DLX, DLQ             string
	Orders, TTL, Capped, Quorum    string
	Audit                          string
	OrdersKey, TTLKey, CappedKey   string
	QuorumKey, AuditKey, SpringKey string
}

// NamesFor returns the names Seed uses for prefix.
func NamesFor(prefix string) Names {
	return Names{
		Exchange: prefix + ".orders", DLX: prefix + ".dlx", DLQ: prefix + ".dlq",
		Orders: prefix + ".orders", TTL: prefix + ".orders.ttl", Capped: prefix + ".orders.capped",
		Quorum: prefix + ".orders.quorum", Audit: prefix + ".audit",
		OrdersKey: "orders.created", TTLKey: "ttl.order", CappedKey: "capped.order",
		QuorumKey: "quorum.order", AuditKey: "audit.orders", SpringKey: "orders.spring",
	}
}

// Topology declares the exchanges and queues (idempotent).
func Topology(ch *amqp091.Channel, o Options) (Names, error) {
	n := NamesFor(o.Prefix)
	if err := ch.ExchangeDeclare(n.Exchange, "topic", true, false, false, false, nil); err != nil {
		return n, err
	}
	if err := ch.ExchangeDeclare(n.DLX, "fanout", true, false, false, false, nil); err != nil {
		return n, err
	}
	dlqArgs := amqp091.Table{}
	if o.QuorumDLQ {
		dlqArgs["x-queue-type"] = "quorum"
		if o.DLQDeliveryLimit > 0 {
			dlqArgs["x-delivery-limit"] = int64(o.DLQDeliveryLimit)
		}
	}
	type q struct {
		name, key string
		args      amqp091.Table
	}
	dl := amqp091.Table{"x-dead-letter-exchange": n.DLX}
	with := func(extra amqp091.Table) amqp091.Table {
		t := amqp091.Table{}
		for k, v := range dl {
			t[k] = v
		}
		for k, v := range extra {
			t[k] = v
		}
		return t
	}
	qs := []q{
		{n.Orders, "orders.#", with(nil)},
		{n.TTL, "ttl.#", with(amqp091.Table{"x-message-ttl": int64(20)})},
		{n.Capped, "capped.#", with(amqp091.Table{"x-max-length": int64(1)})},
		{n.Quorum, "quorum.#", with(amqp091.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(1)})},
		{n.Audit, "audit.#", nil},
	}
	for _, x := range qs {
		if _, err := ch.QueueDeclare(x.name, true, false, false, false, x.args); err != nil {
			return n, fmt.Errorf("declaring %s: %w", x.name, err)
		}
		if err := ch.QueueBind(x.name, x.key, n.Exchange, false, nil); err != nil {
			return n, err
		}
	}
	if _, err := ch.QueueDeclare(n.DLQ, true, false, false, false, dlqArgs); err != nil {
		return n, fmt.Errorf("declaring %s: %w", n.DLQ, err)
	}
	if err := ch.QueueBind(n.DLQ, "", n.DLX, false, nil); err != nil {
		return n, err
	}
	return n, nil
}

// Delete removes what Topology declared.
func Delete(ch *amqp091.Channel, prefix string) {
	n := NamesFor(prefix)
	for _, q := range []string{n.Orders, n.TTL, n.Capped, n.Quorum, n.Audit, n.DLQ} {
		_, _ = ch.QueueDelete(q, false, false, false)
	}
	_ = ch.ExchangeDelete(n.Exchange, false, false)
	_ = ch.ExchangeDelete(n.DLX, false, false)
}

// Body is the JSON body of seeded message i.
func Body(prefix, kind string, i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"eventId": fmt.Sprintf("%s-%s-%d", prefix, kind, i), "eventType": "OrderCreated", "eventVersion": 2,
		"producer": "orders-api", "correlationId": fmt.Sprintf("corr-%d", i), "tenantId": "acme",
		"payload": map[string]any{"orderId": i, "amount": 10 + i, "kind": kind},
	})
	return b
}

// Seed declares the topology and dead-letters o's messages into the DLQ,
// waiting until it holds them all.
func Seed(ctx context.Context, conn *amqp091.Connection, o Options) (Names, error) {
	ch, err := conn.Channel()
	if err != nil {
		return Names{}, err
	}
	defer ch.Close()
	n, err := Topology(ch, o)
	if err != nil {
		return n, err
	}
	if err := ch.Confirm(false); err != nil {
		return n, err
	}
	before, err := ch.QueueDeclarePassive(n.DLQ, true, false, false, false, nil)
	if err != nil {
		return n, err
	}
	pub := func(key string, p amqp091.Publishing) error {
		return publishConfirmed(ctx, ch, n.Exchange, key, p)
	}
	msg := func(kind string, i int) amqp091.Publishing {
		return amqp091.Publishing{
			ContentType: "application/json", DeliveryMode: amqp091.Persistent,
			MessageId: fmt.Sprintf("%s-%s-%d", o.Prefix, kind, i), CorrelationId: fmt.Sprintf("corr-%d", i),
			Timestamp: time.Now().UTC().Truncate(time.Second), Type: "OrderCreated", AppId: "orders-api",
			Headers: amqp091.Table{"eventType": "OrderCreated", "tenant": "acme"},
			Body:    Body(o.Prefix, kind, i),
		}
	}
	// Rejected by a consumer (basic.nack requeue=false). The first also
	// went to the audit queue through CC: x-death keeps both keys.
	for i := 0; i < o.Rejected; i++ {
		p := msg("rejected", i)
		if i == 0 {
			p.Headers["CC"] = []any{n.AuditKey}
		}
		if err := pub(n.OrdersKey, p); err != nil {
			return n, err
		}
	}
	if err := rejectAll(ctx, conn, n.Orders, o.Rejected, false); err != nil {
		return n, err
	}
	// Spring AMQP's RepublishMessageRecoverer: the listener failed, the
	// recoverer publishes to the DLX with the exception headers and the
	// original exchange/routing key (no x-death).
	for i := 0; i < o.Spring; i++ {
		p := msg("spring", i)
		p.Headers["x-exception-message"] = fmt.Sprintf("Listener threw exception: java.lang.IllegalStateException: order %d has no customer", i)
		p.Headers["x-exception-stacktrace"] = "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener threw exception\n\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1762)\nCaused by: java.lang.IllegalStateException: order has no customer\n\tat com.acme.orders.OrderListener.onOrder(OrderListener.java:42)\n"
		p.Headers["x-original-exchange"] = n.Exchange
		p.Headers["x-original-routingKey"] = n.SpringKey
		if err := publishConfirmed(ctx, ch, n.DLX, n.SpringKey, p); err != nil {
			return n, err
		}
	}
	// Queue TTL expiry.
	for i := 0; i < o.Expired; i++ {
		if err := pub(n.TTLKey, msg("expired", i)); err != nil {
			return n, err
		}
	}
	// Per-message TTL (x-death keeps original-expiration).
	for i := 0; i < o.PerMessageTTL; i++ {
		p := msg("msgttl", i)
		p.Expiration = "5"
		if err := pub(n.TTLKey, p); err != nil {
			return n, err
		}
	}
	// Max-length overflow (drop-head dead-letters the oldest): the queue
	// holds 1, so MaxLen+1 publishes push MaxLen out; the last is purged
	// at the end (it never died).
	if o.MaxLen > 0 {
		for i := 0; i <= o.MaxLen; i++ {
			if err := pub(n.CappedKey, msg("maxlen", i)); err != nil {
				return n, err
			}
		}
		if _, err := ch.QueuePurge(n.Capped, false); err != nil {
			return n, err
		}
	}
	// Quorum delivery limit 1: returned twice, dead-lettered.
	for i := 0; i < o.DeliveryLimit; i++ {
		if err := pub(n.QuorumKey, msg("deliverylimit", i)); err != nil {
			return n, err
		}
	}
	for round := 0; round < 3 && o.DeliveryLimit > 0; round++ {
		if err := rejectAll(ctx, conn, n.Quorum, 0, true); err != nil {
			return n, err
		}
	}
	// Wait for the broker to dead-letter everything.
	want := before.Messages + o.Total()
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, err := ch.QueueDeclarePassive(n.DLQ, true, false, false, false, nil)
		if err != nil {
			return n, err
		}
		if q.Messages >= want {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("seed: %s holds %d messages, want %d", n.DLQ, q.Messages, want)
		}
		if o.DeliveryLimit > 0 {
			_ = rejectAll(ctx, conn, n.Quorum, 0, true)
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func publishConfirmed(ctx context.Context, ch *amqp091.Channel, exchange, key string, p amqp091.Publishing) error {
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, false, false, p)
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("seed: publish to %s/%s nacked", exchange, key)
	}
	return nil
}

// rejectAll consumes what queue holds now (want > 0: wait for that many)
// and rejects each: requeue=false dead-letters, requeue=true returns (a
// quorum queue counts the return toward its delivery limit).
func rejectAll(ctx context.Context, conn *amqp091.Connection, queue string, want int, requeue bool) error {
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	got := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, ok, err := ch.Get(queue, false)
		if err != nil {
			return err
		}
		if !ok {
			if got >= want || time.Now().After(deadline) {
				if got < want {
					return fmt.Errorf("seed: %s: rejected %d of %d", queue, got, want)
				}
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err := d.Nack(false, requeue); err != nil {
			return err
		}
		got++
		if requeue && want == 0 && got > 1000 {
			return nil
		}
	}
}

// Bulk dead-letters n small rejected messages into PREFIX.dlq fast: a
// windowed confirmed publish to PREFIX.orders, then one consumer that
// rejects (requeue=false) in batches with basic.nack multiple. For
// benchmarks; Topology must have been declared (Seed with zero counts).
func Bulk(ctx context.Context, conn *amqp091.Connection, prefix string, n int) error {
	names := NamesFor(prefix)
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return err
	}
	const window = 500
	var pending []*amqp091.DeferredConfirmation
	flush := func() error {
		for _, dc := range pending {
			ok, err := dc.WaitContext(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("bulk: publish nacked")
			}
		}
		pending = pending[:0]
		return nil
	}
	for i := 0; i < n; i++ {
		body := Body(prefix, "bulk", i)
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, names.Exchange, names.OrdersKey, false, false, amqp091.Publishing{
			ContentType: "application/json", DeliveryMode: amqp091.Persistent, MessageId: fmt.Sprintf("%s-bulk-%d", prefix, i),
			Headers: amqp091.Table{"eventType": "OrderCreated", "tenant": "acme"}, Body: body,
		})
		if err != nil {
			return err
		}
		pending = append(pending, dc)
		if len(pending) == window {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	cc, err := conn.Channel()
	if err != nil {
		return err
	}
	defer cc.Close()
	if err := cc.Qos(1000, 0, false); err != nil {
		return err
	}
	ds, err := cc.ConsumeWithContext(ctx, names.Orders, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	got := 0
	for got < n {
		select {
		case d, ok := <-ds:
			if !ok {
				return fmt.Errorf("bulk: consumer closed after %d", got)
			}
			got++
			if got%250 == 0 || got == n {
				if err := d.Nack(true, false); err != nil {
					return err
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return fmt.Errorf("bulk: rejected %d of %d", got, n)
		}
	}
	// Wait until the DLQ holds them.
	for {
		q, err := ch.QueueDeclarePassive(names.DLQ, true, false, false, false, nil)
		if err != nil {
			return err
		}
		if q.Messages >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
