package amqp_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func (r *rig) endpoint(t *testing.T, queue string) *amqp.Endpoint {
	t.Helper()
	ref, err := broker.ParseRef(r.env.QueueRef(queue))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := amqp.OpenEndpoint(context.Background(), ref, amqp.Config{ManagementURL: r.env.ManagementURL, Idle: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// readAll reads a source to its end.
func readAll(t *testing.T, src broker.Source) []broker.Message {
	t.Helper()
	var out []broker.Message
	for {
		ms, err := src.Next(context.Background(), 10)
		if errors.Is(err, broker.ErrSourceDone) || len(ms) == 0 && drained(t, src) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms...)
	}
}

// drained asks a consuming source, after an empty read with nothing in
// progress, whether its reading is over (the engine does the same).
func drained(t testing.TB, src broker.Source) bool {
	t.Helper()
	e, ok := src.(broker.Ender)
	if !ok {
		return false
	}
	st, err := e.End(context.Background(), broker.RunState{}, false)
	if err != nil {
		t.Fatal(err)
	}
	return st.Drained
}

func TestEndpointOpenErrors(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// A missing queue: broker.ErrNotFound, one sentence.
	ref, _ := broker.ParseRef(r.env.QueueRef("no-such-queue-" + prefix(t)))
	_, err := amqp.Open(ctx, ref, amqp.Config{ManagementURL: r.env.ManagementURL})
	if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing queue: %v", err)
	}
	// A wrong password: access denied, the password never shown.
	bad := strings.Replace(r.env.QueueRef("q"), ":"+r.env.Password+"@", ":Sup3r-Secret-Pw@", 1)
	ref, _ = broker.ParseRef(bad)
	_, err = amqp.Open(ctx, ref, amqp.Config{ManagementURL: r.env.ManagementURL})
	if !errors.Is(err, broker.ErrAccessDenied) || strings.Contains(err.Error(), "Sup3r-Secret-Pw") {
		t.Errorf("wrong password: %v", err)
	}
	// Credentials from Config (the environment) when the URL has none.
	noCreds := "amqp://" + r.env.HostPort + "/%2f/q"
	ref, _ = broker.ParseRef(noCreds)
	_, err = amqp.Open(ctx, ref, amqp.Config{ManagementURL: r.env.ManagementURL, Username: r.env.Username, Password: r.env.Password})
	if !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("env credentials: %v (want a login and then queue not found)", err)
	}
	// A bad path is bad input (exit 2).
	ref, _ = broker.ParseRef("amqp://" + r.env.HostPort + "/a/b/c")
	_, err = amqp.Open(ctx, ref, amqp.Config{})
	if errs.Code(err) != errs.ExitUsage {
		t.Errorf("bad path: exit %d: %v", errs.Code(err), err)
	}
}

func TestEndpointPeekSourceDecodesAndLeavesTheQueue(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Default(prefix(t))
	n := r.seed(t, o)
	ep := r.endpoint(t, n.DLQ)
	caps := ep.Capabilities()
	if caps.Hold != broker.HoldDelivery || caps.Ordering != broker.OrderQueue || !caps.ReleaseKeepsOrder || caps.ReadCounts {
		t.Errorf("classic capabilities %+v", caps)
	}
	ctx := context.Background()
	var before []string
	for round := range 2 {
		src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Peek})
		if err != nil {
			t.Fatal(err)
		}
		ms := readAll(t, src)
		if err := src.Close(ctx); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.Record.MessageID)
			rec := m.Record
			if rec.Broker != record.BrokerAMQP || rec.Queue != ep.ID() || strings.Contains(rec.Queue, r.env.Password) {
				t.Errorf("record queue/broker %q %q", rec.Queue, rec.Broker)
			}
			a := rec.System.AMQP
			if a == nil || a.Properties.ContentType != "application/json" || a.Properties.AppID != "orders-api" {
				t.Fatalf("system.amqp %+v", a)
			}
			if _, ok := rec.Attributes["x-death"]; ok {
				t.Errorf("x-death left in attributes")
			}
			if rec.Attributes["tenant"].Value != "acme" {
				t.Errorf("headers: %+v", rec.Attributes)
			}
			if strings.Contains(rec.MessageID, "-spring-") {
				if len(a.Deaths) != 0 || rec.Attributes["x-exception-message"].Value == "" {
					t.Errorf("spring record %+v", rec.Attributes)
				}
				continue
			}
			if len(a.Deaths) == 0 || a.FirstDeath == nil || a.FirstDeath.Reason == "" || a.Deaths[0].Time.IsZero() {
				t.Errorf("%s: deaths %+v first %+v", rec.MessageID, a.Deaths, a.FirstDeath)
			}
		}
		if len(ids) != o.Total() {
			t.Fatalf("round %d read %d, want %d", round, len(ids), o.Total())
		}
		if round == 0 {
			before = ids
		} else if !slices.Equal(before, ids) {
			t.Fatalf("second peek %v, first %v", ids, before)
		}
	}
	d, err := ep.Depth(ctx)
	if err != nil || d.Ready != int64(o.Total()) {
		t.Errorf("depth after peeks %+v %v", d, err)
	}
}

func TestEndpointPeekRefusalIsBadInput(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 1, QuorumDLQ: true, DLQDeliveryLimit: 5}
	n := r.seed(t, o)
	ep := r.endpoint(t, n.DLQ)
	if c := ep.Capabilities(); !c.ReadCounts || c.ReleaseKeepsOrder {
		t.Errorf("quorum capabilities %+v", c)
	}
	_, err := ep.OpenSource(context.Background(), broker.SourceOptions{Mode: broker.Peek})
	if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "delivery limit 5") {
		t.Fatalf("exit %d: %v", errs.Code(err), err)
	}
}

// redrive is the loop the engine runs: read, route, prepare, publish,
// acknowledge only what was confirmed.
func redrive(t *testing.T, ep *amqp.Endpoint, runID string) (moved, skipped int, skips []string) {
	t.Helper()
	ctx := context.Background()
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Decode: func(r *record.Record) any { return inspect.DecodeMarker(r) }})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	router, err := ep.RouterToSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(ctx)
	for {
		ms, err := src.Next(ctx, 10)
		if errors.Is(err, broker.ErrSourceDone) || err == nil && len(ms) == 0 && drained(t, src) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var release []broker.Message
		for _, m := range ms {
			if mk := m.Record.Redrive; mk != nil && mk.RunID == runID {
				// Came back during this run (it died again): the engine
				// leaves it for the next run.
				release = append(release, m)
				continue
			}
			dest, skip, err := router.Route(ctx, m.Record)
			if err != nil {
				t.Fatal(err)
			}
			if skip != "" {
				skipped++
				skips = append(skips, skip)
				release = append(release, m)
				continue
			}
			out, skip := pub.Prepare(m.Record, dest, broker.CopyOptions{RunID: runID, Now: time.Now()})
			if skip != "" {
				t.Fatalf("prepare: %s", skip)
			}
			res, err := pub.Publish(ctx, dest, []broker.Outgoing{out})
			if err != nil || res[0].Err != nil {
				t.Fatalf("publish: %v %v", err, res[0].Err)
			}
			if e := src.Ack(ctx, []broker.Message{m})[0]; e != nil {
				t.Fatal(e)
			}
			moved++
		}
		// Released messages return to the queue when the source closes,
		// so this run does not read them again.
		if err := src.Release(ctx, release); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEndpointRedriveToSourceEveryReason(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Default(prefix(t))
	n := r.seed(t, o)
	ep := r.endpoint(t, n.DLQ)
	// The TTL queue would expire the copies again: give it a consumer-free
	// check by reading it right after.
	moved, skipped, skips := redrive(t, ep, "run-1")
	if moved != o.Total() || skipped != 0 {
		t.Fatalf("moved %d skipped %d %v", moved, skipped, skips)
	}
	// rejected (3) + spring (2) back on orders (the spring key matches
	// orders.#), the rejected-0 CC copy on audit, max-length (2) on the
	// capped queue (which holds 1: drop-head dead-letters the other again),
	// delivery-limit (2) on the quorum queue; expired ones expire again.
	if got := len(r.drain(t, n.Orders)); got != o.Rejected+o.Spring {
		t.Errorf("orders got %d, want %d", got, o.Rejected+o.Spring)
	}
	if got := len(r.drain(t, n.Quorum)); got != o.DeliveryLimit {
		t.Errorf("quorum got %d, want %d", got, o.DeliveryLimit)
	}
	// What came back to the DLQ (TTL and max-length again) carries the
	// redrive marker with count 1 and the earlier death history.
	deadline := time.Now().Add(10 * time.Second)
	var back []amqp.Message
	for time.Now().Before(deadline) {
		back = r.peekAll(t, n.DLQ)
		if len(back) >= o.Expired+o.PerMessageTTL+o.MaxLen-1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range back {
		mk, ok := amqp.ReadMarker(m.Headers)
		if !ok || mk.Count != 1 || mk.RunID != "run-1" {
			t.Errorf("%s came back without the marker: %+v", m.MessageId, m.Headers)
		}
		if _, ok := m.Headers[amqp.DeathHistoryHeader]; !ok {
			t.Errorf("%s: no death history", m.MessageId)
		}
		// x-death is the new death only (the old one was stripped).
		if len(m.Deaths.Deaths) != 1 || m.Deaths.Deaths[0].Count != 1 {
			t.Errorf("%s: x-death %+v", m.MessageId, m.Deaths.Deaths)
		}
	}
}

func TestEndpointRouterSkipsWhatItCannotRoute(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 2}
	n := r.seed(t, o)
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// A message published straight into the DLQ (no x-death), and the
	// source exchange deleted under the dead letters.
	if err := ch.Publish("", n.DLQ, false, false, amqp091Publishing("plain")); err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDelete(n.Exchange, false, false); err != nil {
		t.Fatal(err)
	}
	ch.Close()
	ep := r.endpoint(t, n.DLQ)
	moved, skipped, skips := redrive(t, ep, "run-2")
	if moved != 0 || skipped != 3 {
		t.Fatalf("moved %d skipped %d", moved, skipped)
	}
	slices.Sort(skips)
	if !strings.Contains(skips[0], "no x-death") || !strings.Contains(skips[1], "does not exist") {
		t.Errorf("skips %v", skips)
	}
	// Everything is still in the DLQ.
	if got := len(r.drain(t, n.DLQ)); got != 3 {
		t.Errorf("DLQ holds %d, want 3", got)
	}
}

func TestEndpointCrashReturnsHeldAndStaleAckIsLeaseLost(t *testing.T) {
	r := newRig(t)
	o := amqpseed.Options{Prefix: prefix(t), Rejected: 5}
	n := r.seed(t, o)
	ep := r.endpoint(t, n.DLQ)
	ctx := context.Background()
	src, err := ep.OpenReader(ctx, broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	var ms []broker.Message
	for len(ms) < 5 {
		more, err := src.Next(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, more...)
	}
	// The channel under the deliveries closes (a network cut): the
	// broker returns them, and an ack of a stale delivery is a lost hold.
	src.CloseChannelForTest()
	errsAck := src.Ack(ctx, ms[:1])
	if !errors.Is(errsAck[0], broker.ErrLeaseLost) {
		t.Fatalf("stale ack: %v", errsAck[0])
	}
	// Reading on opens a new channel and gets all five again.
	var again []broker.Message
	for len(again) < 5 {
		more, err := src.Next(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, more...)
	}
	if errs := src.Ack(ctx, again); errs[0] != nil || errs[4] != nil {
		t.Fatalf("acks %v", errs)
	}
	src.Close(ctx)
	if got := len(r.drain(t, n.DLQ)); got != 0 {
		t.Errorf("DLQ holds %d after acking all", got)
	}
}

func TestUnpacedBatchLeavesEveryWorkerDeliveries(t *testing.T) {
	for _, c := range []struct {
		prefetch, window, workers, limit, want int
	}{
		{0, 0, 1, 0, 256},         // defaults: one worker takes a whole window
		{0, 0, 4, 0, 125},         // two batches per worker fit the prefetch of 1000
		{0, 0, 8, 0, 62},          // redrive's default concurrency
		{0, 0, 0, 0, 62},          // 0 workers: the pipeline's default, 8
		{0, 0, 200, 0, 10},        // never below the pipeline's batch
		{0, 0, 8, 5, 5},           // --max / --canary caps it
		{65535, 256, 8, 0, 256},   // never above the confirm window
		{20, 256, 8, 0, 10},       // a small prefetch: the floor
		{5000, 1000, 2, 300, 300}, // a limit below the window
	} {
		got := amqp.UnpacedBatch(amqp.Config{Prefetch: c.prefetch, ConfirmWindow: c.window}, c.workers, c.limit)
		if got != c.want {
			t.Errorf("prefetch %d, window %d, %d workers, limit %d: batch %d, want %d", c.prefetch, c.window, c.workers, c.limit, got, c.want)
		}
	}
}
