package amqp_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/pkg/broker"
)

// TestSourceCloseAfterRunContextEnds: a consuming run's context ends (the
// pipeline cancels it when the run is over, Ctrl-C cancels it) and then
// the source is closed. The consumer's lifetime is the source's: ending
// the read's context must not cancel the consumer behind the source's
// back — the client library did, from a goroutine of its own, racing the
// source's own basic.cancel and channel.close on the same channel
// ("unexpected command received" on the client, or a basic.cancel on a
// closed channel that makes RabbitMQ close the whole connection). After a
// read's context ended the source still reads, every close succeeds, and
// every message held but not acknowledged goes back to the queue.
func TestSourceCloseAfterRunContextEnds(t *testing.T) {
	r := newRig(t)
	names := r.seed(t, amqpseed.Default(prefix(t)))
	count := func() int {
		ch, err := r.conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		q, err := ch.QueueDeclarePassive(names.DLQ, true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return q.Messages
	}
	ready := count()
	if ready == 0 {
		t.Fatal("the seed dead-lettered nothing")
	}
	ep := r.endpoint(t, names.DLQ)
	acked := 0
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		src, err := ep.OpenSource(context.Background(), broker.SourceOptions{Mode: broker.Consume, Wait: 2 * time.Second, MaxHeld: 2})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := src.Next(ctx, 2)
		if err != nil || len(ms) == 0 {
			t.Fatalf("iteration %d: read %d, %v", i, len(ms), err)
		}
		cancel() // that read's context ends
		time.Sleep(50 * time.Millisecond)
		// Remove them (prefetch 2: RabbitMQ delivers more only then).
		for _, err := range src.Ack(context.Background(), ms) {
			if err != nil {
				t.Fatal(err)
			}
		}
		acked += len(ms)
		more, err := src.Next(context.Background(), 2)
		if err != nil || len(more) == 0 {
			t.Fatalf("iteration %d: after the first read's context ended the source reads nothing more (%d, %v): its consumer was cancelled behind its back", i, len(more), err)
		}
		if err := src.Close(context.Background()); err != nil {
			t.Fatalf("iteration %d: closing the source: %v", i, err)
		}
	}
	// Everything held went back.
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := count()
		if n == ready-acked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages back in the queue", n, ready-acked)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
