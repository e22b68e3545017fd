package amqp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// TestCanaryWindowFromQueueArguments: the window of a RabbitMQ DLQ is read
// from the dead-lettering setup of the queues that feed it (queue
// arguments, through the management API): the source's message TTL plus
// each retry queue's TTL on the way (+ 30 s), named in the reason; a quorum
// queue's delivery limit is named; a destination that does not dead-letter
// into the DLQ gives no return time, and says so.
func TestCanaryWindowFromQueueArguments(t *testing.T) {
	r := newRig(t)
	p := prefix(t)
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	src, retry, dlq, plain, quorum := p+".work", p+".work.retry", p+".work.dlq", p+".plain", p+".quorum"
	retryX, dlx := p+".retry.x", p+".dlx"
	for _, x := range []string{retryX, dlx} {
		if err := ch.ExchangeDeclare(x, "fanout", false, true, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	decl := []struct {
		name string
		args amqp091.Table
		bind string
	}{
		{dlq, nil, dlx},
		// A retry queue: holds what the work queue dead-letters for 4 s,
		// then dead-letters it into the DLQ.
		{retry, amqp091.Table{"x-message-ttl": int64(4000), "x-dead-letter-exchange": dlx}, retryX},
		{src, amqp091.Table{"x-message-ttl": int64(1500), "x-dead-letter-exchange": retryX}, ""},
		{quorum, amqp091.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(7), "x-dead-letter-exchange": dlx}, ""},
		{plain, nil, ""},
	}
	for _, d := range decl {
		durable := d.args["x-queue-type"] == "quorum"
		if _, err := ch.QueueDeclare(d.name, durable, !durable, false, false, d.args); err != nil {
			t.Fatal(err)
		}
		if d.bind != "" {
			if err := ch.QueueBind(d.name, "", d.bind, false, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		if c, err := r.conn.Channel(); err == nil {
			for _, q := range []string{quorum, src, retry, dlq, plain} {
				_, _ = c.QueueDelete(q, false, false, false)
			}
			c.Close()
		}
	})
	ep := r.endpoint(t, dlq)
	ctx := context.Background()
	target := func(q string) []broker.Destination {
		d, err := r.endpoint(t, q).Target(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return []broker.Destination{d}
	}

	w, err := ep.CanaryWindow(ctx, target(src))
	want := 1500*time.Millisecond + 4*time.Second + broker.CanaryMargin
	if err != nil || !w.Known || !w.Returns || w.Need != want {
		t.Fatalf("work queue (TTL 1.5s) through a retry queue (TTL 4s): %+v %v; want %s", w, err, want)
	}
	for _, s := range []string{"queue " + src + " (message TTL 1.5s)", "through " + retry + " (message TTL 4s)", "into " + dlq, "+ 30s"} {
		if !strings.Contains(w.Reason, s) {
			t.Errorf("reason %q does not say %q", w.Reason, s)
		}
	}

	w, err = ep.CanaryWindow(ctx, target(quorum))
	if err != nil || !w.Returns || w.Need != broker.CanaryMargin || !strings.Contains(w.Reason, "delivery limit 7") || !strings.Contains(w.Reason, "a rejection dead-letters at once") {
		t.Fatalf("quorum queue with a delivery limit, no TTL: %+v %v; want 30s, the limit named", w, err)
	}

	// Back to the sources (nil): the longest of every queue feeding it.
	if w, err = ep.CanaryWindow(ctx, nil); err != nil || w.Need != want {
		t.Fatalf("to source: %+v %v; want the work queue's %s", w, err, want)
	}

	w, err = ep.CanaryWindow(ctx, target(plain))
	if err != nil || !w.Known || w.Returns || !strings.Contains(w.Reason, "dead-letters into "+dlq+", so there is no return time") {
		t.Fatalf("a queue without a dead-letter exchange: %+v %v; want no return, said", w, err)
	}
}
