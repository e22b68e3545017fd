package amqp_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

type rig struct {
	env  testenv.RabbitMQ
	conn *amqp091.Connection
	mgmt *amqp.Management
	ref  amqp.Ref
}

func newRig(t testing.TB) *rig {
	t.Helper()
	env := testenv.RequireRabbitMQ(t)
	ref, err := amqp.ParseRef(env.QueueRef("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := amqp.Dial(ctx, ref, amqp.ConnOptions{ConnectionName: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	mgmt, err := amqp.NewManagement(ref, env.ManagementURL, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{env: env, conn: conn, mgmt: mgmt, ref: ref}
}

func prefix(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

func (r *rig) seed(t *testing.T, o amqpseed.Options) amqpseed.Names {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := amqpseed.Seed(ctx, r.conn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ch, err := r.conn.Channel()
		if err == nil {
			amqpseed.Delete(ch, o.Prefix)
			ch.Close()
		}
	})
	return n
}

func (r *rig) info(t *testing.T, q string) amqp.QueueInfo {
	t.Helper()
	// The management API's counts trail the queue by a stats interval;
	// the queue's type and arguments do not.
	qi, err := r.mgmt.Queue(context.Background(), "/", q)
	if err != nil {
		t.Fatal(err)
	}
	return qi
}

func (r *rig) peekAll(t *testing.T, q string) []amqp.Message {
	t.Helper()
	var got []amqp.Message
	_, err := amqp.Peek(context.Background(), r.conn, r.info(t, q), amqp.PeekOptions{Idle: 2 * time.Second}, func(m amqp.Message) error {
		got = append(got, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// drain consumes (acks) everything in q, returning message ids in order.
func (r *rig) drain(t *testing.T, q string) []amqp091.Delivery {
	t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var out []amqp091.Delivery
	for {
		d, ok, err := ch.Get(q, false)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
	}
}

func msgIDs(ms []amqp.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageId)
	}
	return out
}

func TestSeedDeadLettersEveryWayAndXDeathDecodes(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Default(prefix(t))
	n := r.seed(t, o)
	msgs := r.peekAll(t, n.DLQ)
	if len(msgs) != o.Total() {
		t.Fatalf("peeked %d messages, want %d: %v", len(msgs), o.Total(), msgIDs(msgs))
	}
	byReason := map[string]int{}
	for _, m := range msgs {
		reason := m.Deaths.FirstReason
		if reason == "" {
			if _, ok := m.Headers["x-exception-message"]; ok {
				reason = "spring"
			}
		}
		byReason[reason]++
		if !m.Deaths.Dead() {
			continue
		}
		f, ok := m.Deaths.First()
		if !ok || f.Count < 1 || f.Time.IsZero() || f.Exchange != n.Exchange || len(f.RoutingKeys) == 0 {
			t.Errorf("%s: first death %+v", m.MessageId, f)
		}
		switch {
		case strings.Contains(m.MessageId, "-rejected-0"):
			// Published with CC: x-death keeps both routing keys.
			if !slices.Equal(f.RoutingKeys, []string{n.OrdersKey, n.AuditKey}) || f.Queue != n.Orders {
				t.Errorf("rejected-0 first death %+v, want keys [%s %s] from %s", f, n.OrdersKey, n.AuditKey, n.Orders)
			}
		case strings.Contains(m.MessageId, "-msgttl-"):
			if f.OriginalExpiration != "5" || f.Reason != amqp.ReasonExpired {
				t.Errorf("per-message TTL death %+v, want original-expiration 5", f)
			}
		case strings.Contains(m.MessageId, "-deliverylimit-"):
			if f.Queue != n.Quorum {
				t.Errorf("delivery limit death %+v", f)
			}
		}
	}
	want := map[string]int{amqp.ReasonRejected: 3, "spring": 2, amqp.ReasonExpired: 3, amqp.ReasonMaxLen: 2, amqp.ReasonDeliveryLimit: 2}
	if fmt.Sprint(byReason) != fmt.Sprint(want) {
		t.Errorf("reasons %v, want %v", byReason, want)
	}
}

func TestPeekReturnsEverythingInOrder(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 25}
	n := r.seed(t, o)
	first := msgIDs(r.peekAll(t, n.DLQ))
	second := msgIDs(r.peekAll(t, n.DLQ))
	if len(first) != 25 || !slices.Equal(first, second) {
		t.Fatalf("second peek saw %v, first %v", second, first)
	}
	// A bounded peek (Max) reads the head and returns it in place.
	var head []string
	res, err := amqp.Peek(context.Background(), r.conn, r.info(t, n.DLQ), amqp.PeekOptions{Max: 5}, func(m amqp.Message) error {
		head = append(head, m.MessageId)
		return nil
	})
	if err != nil || !res.Truncated || res.ReadyAtStart != 25 || !slices.Equal(head, first[:5]) {
		t.Fatalf("Max 5: %v %+v %v", head, res, err)
	}
	got := r.drain(t, n.DLQ)
	var drained []string
	for _, d := range got {
		drained = append(drained, d.MessageId)
	}
	if !slices.Equal(drained, first) {
		t.Fatalf("queue after peeks %v, want %v (order kept, nothing lost)", drained, first)
	}
}

func TestPeekRefusesQuorumQueueWithDeliveryLimit(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 2, QuorumDLQ: true, DLQDeliveryLimit: 3}
	n := r.seed(t, o)
	qi := r.info(t, n.DLQ)
	if qi.Type != amqp.TypeQuorum {
		t.Fatalf("type %q", qi.Type)
	}
	if l, ok := qi.DeliveryLimit(); !ok || l != 3 {
		t.Fatalf("delivery limit %d %v", l, ok)
	}
	_, err := amqp.Peek(context.Background(), r.conn, qi, amqp.PeekOptions{}, func(amqp.Message) error {
		t.Fatal("delivered a message")
		return nil
	})
	if !errors.Is(err, amqp.ErrPeekUnsafe) || !strings.Contains(err.Error(), "delivery limit 3") {
		t.Fatalf("err = %v", err)
	}
	// Nothing was touched: both messages are still ready, never delivered.
	got := r.drain(t, n.DLQ)
	if len(got) != 2 {
		t.Fatalf("queue holds %d, want 2", len(got))
	}
	for _, d := range got {
		if d.Redelivered {
			t.Errorf("%s was delivered by the refused peek", d.MessageId)
		}
	}
}

func TestPeekQuorumWithoutLimitCountsDeliveries(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 3, QuorumDLQ: true}
	n := r.seed(t, o)
	first := r.peekAll(t, n.DLQ)
	second := r.peekAll(t, n.DLQ)
	if len(first) != 3 || len(second) != 3 {
		t.Fatalf("peeked %d then %d", len(first), len(second))
	}
	slices.SortFunc(second, func(a, b amqp.Message) int { return strings.Compare(a.MessageId, b.MessageId) })
	for _, m := range second {
		// The first peek's return counted as a delivery attempt.
		if m.DeliveryCount < 1 {
			t.Errorf("%s: x-delivery-count %d after one peek, want >= 1", m.MessageId, m.DeliveryCount)
		}
	}
}

func TestStreamIsReadByOffsetWithoutSideEffects(t *testing.T) {
	r := newRig(t)
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q := prefix(t) + ".stream"
	if _, err := ch.QueueDeclare(q, true, false, false, false, amqp091.Table{"x-queue-type": "stream"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false) })
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		dc, err := ch.PublishWithDeferredConfirm("", q, false, false, amqp091.Publishing{MessageId: fmt.Sprint("s", i), Body: []byte("x")})
		if err != nil || !dc.Wait() {
			t.Fatal(err)
		}
	}
	// The management API counts a stream's messages with a delay.
	var qi amqp.QueueInfo
	for i := 0; i < 100; i++ {
		qi = r.info(t, q)
		if qi.Messages >= 4 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for round := range 2 {
		var got []string
		var offs []int64
		_, err := amqp.Peek(context.Background(), r.conn, qi, amqp.PeekOptions{Idle: time.Second}, func(m amqp.Message) error {
			got, offs = append(got, m.MessageId), append(offs, m.StreamOffset)
			return nil
		})
		if err != nil || !slices.Equal(got, []string{"s0", "s1", "s2", "s3"}) || offs[0] != 0 || offs[3] != 3 {
			t.Fatalf("round %d: %v %v %v", round, got, offs, err)
		}
	}
}

func TestRepublishToFirstDeathRoute(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 1, Expired: 1}
	n := r.seed(t, o)
	ctx := context.Background()
	qi := r.info(t, n.DLQ)
	c, err := amqp.Consume(ctx, r.conn, n.DLQ, qi.Type, amqp.ConsumeOptions{Prefetch: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pub, err := amqp.NewPublisher(r.conn, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	// The audit queue got its CC copy when the message was first published.
	if got := len(r.drain(t, n.Audit)); got != 1 {
		t.Fatalf("audit holds %d before the redrive, want 1", got)
	}
	now := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
	for range 2 {
		m, ok, err := c.Next(ctx, 5*time.Second)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		route, err := amqp.SourceRoute(m)
		if err != nil {
			t.Fatal(err)
		}
		p, err := amqp.Republish(m, route, m.MessageId, amqp.RepublishOptions{RunID: "run1", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		res := pub.Publish(ctx, []amqp.Publishing{p})
		if res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		if err := c.Ack(m.DeliveryTag); err != nil {
			t.Fatal(err)
		}
	}
	// The rejected message went back to orders, with its CC copy to audit;
	// the expired one to the TTL queue (where it expires again: the route
	// is faithful, the TTL is the queue's).
	orders := r.drain(t, n.Orders)
	audit := r.drain(t, n.Audit)
	if len(orders) != 1 || len(audit) != 1 {
		t.Fatalf("orders %d audit %d, want 1 and 1", len(orders), len(audit))
	}
	d := orders[0]
	if d.RoutingKey != n.OrdersKey || d.Exchange != n.Exchange {
		t.Errorf("arrived via %q/%q", d.Exchange, d.RoutingKey)
	}
	for k := range d.Headers {
		if amqp.IsDeathHeader(k) || k == "x-delivery-count" {
			t.Errorf("header %s kept", k)
		}
	}
	// CC routed the copy to audit and stays in the message, as it did on
	// the original publish.
	if cc, _ := d.Headers["CC"].([]any); len(cc) != 1 || cc[0] != n.AuditKey {
		t.Errorf("CC header %v, want [%s]", d.Headers["CC"], n.AuditKey)
	}
	if d.Headers["tenant"] != "acme" || d.ContentType != "application/json" || d.Type != "OrderCreated" || d.CorrelationId == "" || d.DeliveryMode != amqp091.Persistent {
		t.Errorf("headers/properties not kept: %+v", d)
	}
	mk, ok := amqp.ReadMarker(d.Headers)
	if !ok || mk.Count != 1 || mk.RunID != "run1" || mk.OriginalID != d.MessageId || !mk.At.Equal(now) {
		t.Errorf("marker %+v %v", mk, ok)
	}
	var hist []amqp.Death
	if s, _ := d.Headers[amqp.DeathHistoryHeader].(string); json.Unmarshal([]byte(s), &hist) != nil || len(hist) != 1 || hist[0].Reason != amqp.ReasonRejected || hist[0].Queue != n.Orders {
		t.Errorf("death history %v", d.Headers[amqp.DeathHistoryHeader])
	}
	if len(r.drain(t, n.DLQ)) != 0 {
		t.Errorf("DLQ not empty after acks")
	}
}

func TestPublishReportsUnroutableAndMissingExchangePerEntry(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t)}
	n := r.seed(t, o)
	pub, err := amqp.NewPublisher(r.conn, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx := context.Background()
	var es []amqp.Publishing
	for i := range 10 {
		key := n.OrdersKey
		if i%3 == 1 {
			key = "nowhere.key"
		}
		es = append(es, amqp.Publishing{Exchange: n.Exchange, RoutingKey: key, Msg: amqp091.Publishing{MessageId: fmt.Sprint(i), Body: []byte("same body")}})
	}
	res := pub.Publish(ctx, es)
	for i, rr := range res {
		if i%3 == 1 {
			if !errors.Is(rr.Err, amqp.ErrUnroutable) {
				t.Errorf("entry %d: %v, want unroutable", i, rr.Err)
			}
		} else if rr.Err != nil {
			t.Errorf("entry %d: %v", i, rr.Err)
		}
	}
	if got := len(r.drain(t, n.Orders)); got != 7 {
		t.Errorf("orders received %d, want 7", got)
	}
	// A missing exchange closes the channel: every entry of that window
	// fails, and the publisher reopens for the next call.
	res = pub.Publish(ctx, []amqp.Publishing{{Exchange: "no-such-exchange-" + o.Prefix, RoutingKey: "k", Msg: amqp091.Publishing{Body: []byte("x")}}})
	if res[0].Err == nil || !errors.Is(res[0].Err, amqp.ErrNotFound) {
		t.Errorf("missing exchange: %v", res[0].Err)
	}
	res = pub.Publish(ctx, []amqp.Publishing{{Exchange: n.Exchange, RoutingKey: n.OrdersKey, Msg: amqp091.Publishing{Body: []byte("y")}}})
	if res[0].Err != nil {
		t.Errorf("after reopen: %v", res[0].Err)
	}
	if err := amqp.CheckExchange(r.conn, "no-such-exchange-"+o.Prefix); !errors.Is(err, amqp.ErrNotFound) {
		t.Errorf("CheckExchange: %v", err)
	}
}

func TestManagementDescribesQueues(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 1}
	n := r.seed(t, o)
	ctx := context.Background()
	ov, err := r.mgmt.Overview(ctx)
	if err != nil || !strings.HasPrefix(ov.RabbitMQVersion, "3.") && !strings.HasPrefix(ov.RabbitMQVersion, "4.") {
		t.Fatalf("overview %+v %v", ov, err)
	}
	q := r.info(t, n.Orders)
	if dlx, ok := q.DeadLetterExchange(); !ok || dlx != n.DLX {
		t.Errorf("DLX %q %v", dlx, ok)
	}
	if q := r.info(t, n.TTL); func() bool { v, ok := q.MessageTTL(); return !ok || v != 20 }() {
		t.Errorf("TTL not read: %+v", q.Arguments)
	}
	if q := r.info(t, n.Quorum); q.Type != amqp.TypeQuorum {
		t.Errorf("quorum type %q", q.Type)
	}
	if _, err := r.mgmt.Queue(ctx, "/", "no-such-queue-"+o.Prefix); !errors.Is(err, amqp.ErrNotFound) {
		t.Errorf("missing queue: %v", err)
	}
	bs, err := r.mgmt.QueueBindings(ctx, "/", n.DLQ)
	if err != nil || !slices.ContainsFunc(bs, func(b amqp.Binding) bool { return b.Source == n.DLX }) {
		t.Errorf("bindings %+v %v", bs, err)
	}
	// Unreachable: one clear sentence naming the URL and the fix.
	bad, _ := amqp.NewManagement(r.ref, "http://127.0.0.1:1", amqp.ConnOptions{})
	_, err = bad.Queue(ctx, "/", n.DLQ)
	if !errors.Is(err, amqp.ErrManagementUnavailable) || !strings.Contains(err.Error(), "--amqp-management-url") {
		t.Errorf("unreachable: %v", err)
	}
	// Wrong password: refused, password not shown.
	wrong, _ := amqp.ParseRef(strings.Replace(r.env.QueueRef("q"), ":"+r.env.Password+"@", ":wrong-pass-123@", 1), nil)
	wm, _ := amqp.NewManagement(wrong, r.env.ManagementURL, amqp.ConnOptions{})
	_, err = wm.Queue(ctx, "/", n.DLQ)
	if !errors.Is(err, amqp.ErrAuth) || strings.Contains(err.Error(), "wrong-pass-123") {
		t.Errorf("wrong password (management): %v", err)
	}
	_, err = amqp.Dial(ctx, wrong, amqp.ConnOptions{})
	if !errors.Is(err, amqp.ErrAuth) || strings.Contains(err.Error(), "wrong-pass-123") {
		t.Errorf("wrong password (AMQP): %v", err)
	}
}

func amqp091Publishing(body string) amqp091.Publishing {
	return amqp091.Publishing{Body: []byte(body), ContentType: "text/plain"}
}
