package amqp_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/brokertest"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// harness runs the conformance suite on the stack's RabbitMQ, on classic
// or quorum queues.
type harness struct {
	r         *rig
	queueType string
}

var _ brokertest.Harness = (*harness)(nil)

func (h *harness) Name() string { return "amqp/" + h.queueType }

func (h *harness) Features() brokertest.Features {
	return brokertest.Features{
		KeepsOrder: h.queueType == amqp.TypeClassic,
		// A RabbitMQ hold is lost with its channel, and every delivery of
		// the channel with it: the suite's case (one hold lost, its
		// neighbour kept) cannot happen. Losing a channel is covered by
		// TestEndpointCrashReturnsHeldAndStaleAckIsLeaseLost.
		LosableHold: false,
		// The suite's classic queues refuse what would take them over
		// 1 MiB (overflow reject-publish): a 1.5 MiB message is nacked
		// alone. A quorum queue checks the limit before a publish, not for
		// it (it accepts the message that goes over), so nothing makes it
		// refuse one entry between two it takes; nacks and returns of
		// mixed routes are covered by
		// TestPublishReportsUnroutableAndMissingExchangePerEntry.
		PerEntryRejection: h.queueType == amqp.TypeClassic,
		// basic.ack has no reply: after a crash the broker may not have
		// applied an ack (a quorum queue settles through its Raft log,
		// and a channel holds settles back while the queue is slow), and
		// redelivers the message, marked redelivered.
		UnconfirmedAck: true,
		HeaderTypes:    []string{"String", "Number", "Binary"},
	}
}

func (h *harness) NewQueue(t *testing.T, opt brokertest.QueueOptions) broker.Endpoint {
	t.Helper()
	name := prefix(t) + ".conf"
	ch, err := h.r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	args := amqp091.Table{"x-max-length-bytes": int64(1 << 20), "x-overflow": "reject-publish"}
	if h.queueType == amqp.TypeQuorum {
		args["x-queue-type"] = "quorum"
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := h.r.conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
			ch.Close()
		}
	})
	return h.r.endpoint(t, name)
}

func (h *harness) Put(t *testing.T, ep broker.Endpoint, msgs []brokertest.Msg) {
	t.Helper()
	ch, err := h.r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		hd := amqp091.Table{}
		for k, v := range m.Headers {
			switch k {
			case "bin":
				hd[k] = v
			case "num":
				n, _ := strconv.ParseInt(string(v), 10, 64)
				hd[k] = n
			default:
				hd[k] = string(v)
			}
		}
		dc, err := ch.PublishWithDeferredConfirm("", ep.Name(), true, false, amqp091.Publishing{Headers: hd, Body: []byte(m.Body), DeliveryMode: amqp091.Persistent})
		if err != nil || !dc.Wait() {
			t.Fatalf("put: %v", err)
		}
	}
}

func (h *harness) Count(t *testing.T, ep broker.Endpoint) int {
	t.Helper()
	// Returned deliveries reach the queue asynchronously (a quorum queue
	// through its log): wait for the count to settle.
	last, same := -1, 0
	for i := 0; i < 100 && same < 5; i++ {
		d, err := ep.Depth(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := int(d.Ready)
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	return last
}

func (h *harness) Drain(t *testing.T, ep broker.Endpoint, settle time.Duration) []brokertest.Msg {
	t.Helper()
	var out []brokertest.Msg
	deadline := time.Now().Add(settle)
	for {
		ds := h.r.drain(t, ep.Name())
		for _, d := range ds {
			m := brokertest.Msg{Body: string(d.Body), Headers: map[string][]byte{}}
			for k, v := range d.Headers {
				if k == "x-delivery-count" {
					continue // the quorum queue's annotation of this delivery, not a header of the message
				}
				switch x := v.(type) {
				case []byte:
					m.Headers[k] = x
				case string:
					m.Headers[k] = []byte(x)
				default:
					m.Headers[k] = []byte(fmt.Sprint(x))
				}
			}
			out = append(out, m)
		}
		if len(ds) == 0 && (len(out) > 0 || time.Now().After(deadline)) {
			return out
		}
		if time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *harness) LoseHold(t *testing.T, ep broker.Endpoint, src broker.Source, m broker.Message) {
	t.Helper()
	// RabbitMQ holds a delivery as long as its channel lives: closing the
	// channel (a network cut, a consumer timeout) returns it.
	src.(*amqp.Source).CloseChannelForTest()
}

func (h *harness) Crash(t *testing.T, src broker.Source) { src.(*amqp.Source).CrashForTest() }

func (h *harness) Unpublishable(t *testing.T, ep broker.Endpoint) brokertest.Msg {
	// Over the queue's max-length-bytes with overflow reject-publish: the
	// broker nacks it, and takes its small neighbours.
	return brokertest.Msg{Body: `{"big":"` + strings.Repeat("x", 3<<19) + `"}`}
}

// Beside the shared suite (TestConformance below), on one queue: release
// and close give every message back; a killed run resumed loses nothing
// (what it acked may come back, marked as a redelivery, and is not copied
// again); a copy keeps body and headers byte for byte.
func TestHarnessReleaseCrashAndCopies(t *testing.T) {
	for _, qt := range []string{amqp.TypeClassic, amqp.TypeQuorum} {
		t.Run(qt, func(t *testing.T) {
			h := &harness{r: newRig(t), queueType: qt}
			ctx := context.Background()
			ep := h.NewQueue(t, brokertest.QueueOptions{})
			var put []brokertest.Msg
			for i := range 20 {
				put = append(put, brokertest.Msg{Body: fmt.Sprintf(`{"id":%d,"s":"héllo \u0000 <&>"}`, i),
					Headers: map[string][]byte{"bin": {0, 0xfe, 0xff, byte(i)}, "num": []byte(strconv.Itoa(1000 + i)), "h-String": []byte("v ✓")}})
			}
			h.Put(t, ep, put)
			// Release 3, close: all 20 come back.
			src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, src)
			if len(got) != 20 {
				t.Fatalf("read %d", len(got))
			}
			if err := src.Release(ctx, got[:3]); err != nil {
				t.Fatal(err)
			}
			if err := src.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if n := h.Count(t, ep); n != 20 {
				t.Fatalf("after release+close %d, want 20", n)
			}
			// Ack 8, crash: a second run gets exactly the other 12.
			first, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			read := readAll(t, first)
			done := map[string]bool{}
			for i, e := range first.Ack(ctx, read[:8]) {
				if e != nil {
					t.Fatal(e)
				}
				done[read[i].Record.Body] = true
			}
			h.Crash(t, first)
			second, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// An acknowledgement is not confirmed (AMQP 0-9-1; a quorum
			// queue applies it through its Raft log): the second run may
			// read again what the first acked right before it died (ci33,
			// quorum: all 8), marked as a redelivery. As the shared suite's
			// KilledRunResumedLosesNothing, the re-run removes those
			// without copying them again (a redrive's journal lists them).
			var again []broker.Message
			fresh := func() (n int) {
				for _, m := range again {
					if !done[m.Record.Body] {
						n++
					}
				}
				return n
			}
			for deadline := time.Now().Add(30 * time.Second); fresh() < 12 && time.Now().Before(deadline); {
				again = append(again, readAll(t, second)...)
			}
			// A copy of each of the others to the same queue, before
			// acking: byte for byte.
			pub, err := ep.OpenPublisher(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dest, _ := ep.Target(ctx)
			var batch []broker.Outgoing
			for _, m := range again {
				if done[m.Record.Body] {
					continue
				}
				out, skip := pub.Prepare(m.Record, dest, broker.CopyOptions{RunID: "conf", Now: time.Now()})
				if skip != "" {
					t.Fatal(skip)
				}
				batch = append(batch, out)
			}
			res, err := pub.Publish(ctx, dest, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			pub.Close(ctx)
			resumed := 0
			for i, e := range second.Ack(ctx, again) {
				if e != nil {
					t.Fatal(e)
				}
				if m := again[i]; done[m.Record.Body] {
					resumed++
					if m.Record.System.ReceiveCount < 2 {
						t.Errorf("%s, acked by the first run, was read again unmarked (receive count %d)", m.Record.Body, m.Record.System.ReceiveCount)
					}
				}
				done[again[i].Record.Body] = true
			}
			if resumed > 0 {
				t.Logf("%d message(s) acked by the killed run were read again, marked as redeliveries", resumed)
			}
			second.Close(ctx)
			if len(done) != 20 {
				t.Fatalf("removed %d distinct of 20", len(done))
			}
			copies := h.Drain(t, ep, 5*time.Second)
			if len(copies) != 12 {
				t.Fatalf("%d copies, want 12", len(copies))
			}
			want := map[string]brokertest.Msg{}
			for _, m := range put {
				want[m.Body] = m
			}
			for _, c := range copies {
				w, ok := want[c.Body]
				if !ok {
					t.Fatalf("copy body %q changed", c.Body)
				}
				for k, v := range w.Headers {
					if string(c.Headers[k]) != string(v) {
						t.Errorf("header %s = %q, want %q", k, c.Headers[k], v)
					}
				}
				if _, ok := c.Headers["dlqctl-redrive"]; !ok || len(c.Headers) != len(w.Headers)+1 {
					t.Errorf("headers %v: want the originals and the marker", c.Headers)
				}
			}
		})
	}
}

// TestConformance runs the shared broker suite on a classic and a quorum
// queue of the stack's RabbitMQ.
func TestConformance(t *testing.T) {
	for _, qt := range []string{amqp.TypeClassic, amqp.TypeQuorum} {
		t.Run(qt, func(t *testing.T) {
			brokertest.Run(t, &harness{r: newRig(t), queueType: qt})
		})
	}
}
