package brokertest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Run runs every behaviour of the suite against the harness's broker, one
// subtest each. A behaviour the broker declares it does not have is logged,
// never silently passed.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != nil && !c.needs(h.Features()) {
				t.Skipf("%s does not have %s (Features)", h.Name(), c.feature)
			}
			c.run(t, h)
		})
	}
}

type testCase struct {
	name    string
	feature string
	needs   func(Features) bool
	run     func(t *testing.T, h Harness)
}

var cases = []testCase{
	{name: "PeekLeavesTheQueueAsItWas", run: peekLeavesTheQueueAsItWas},
	{name: "ReleasedMessagesComeBack", run: releasedMessagesComeBack},
	{name: "LostHoldIsDetectedAndNeverCountedAsMoved", feature: "losable holds", needs: func(f Features) bool { return f.LosableHold }, run: lostHoldIsDetected},
	{name: "PublishKeepsBodyAndHeadersByteForByte", run: publishKeepsBodyAndHeaders},
	{name: "PerEntryPublishFailuresAreReportedPerEntry", feature: "per-entry rejection", needs: func(f Features) bool { return f.PerEntryRejection }, run: perEntryFailures},
	{name: "KilledRunResumedLosesNothing", run: killedRunResumedLosesNothing},
	{name: "EveryMessageEndsInExactlyOneBucket", run: everyMessageInOneBucket},
}

// hold is the hold the suite reads with: short, so what a crashed run held
// comes back within a test.
const hold = 6 * time.Second

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// msgs makes n distinct messages with headers of every type the broker
// round-trips (and bytes that are not UTF-8 for binary ones).
func msgs(h Harness, n int, prefix string) []Msg {
	out := make([]Msg, n)
	for i := range out {
		hd := map[string][]byte{}
		for _, typ := range h.Features().HeaderTypes {
			switch typ {
			case "Binary":
				hd["bin"] = []byte{0, 1, 2, 0xfe, 0xff, byte(i)}
			case "Number":
				hd["num"] = []byte(strconv.Itoa(1000 + i))
			default:
				hd["h-"+typ] = []byte(fmt.Sprintf("%s value %d ✓ <&>", typ, i))
			}
		}
		out[i] = Msg{Body: fmt.Sprintf(`{"id":"%s-%d","note":"héllo 🌍 \u0000 <&>"}`, prefix, i), Headers: hd}
	}
	return out
}

// readAll reads src until the broker says it is done or reads come back
// empty three times in a row, and returns what it handed out, in order.
func readAll(t *testing.T, ctx context.Context, src broker.Source, want int) []broker.Message {
	t.Helper()
	var got []broker.Message
	empty := 0
	for empty < 3 && ctx.Err() == nil {
		batch, err := src.Next(ctx, 10)
		if errors.Is(err, broker.ErrSourceDone) {
			got = append(got, batch...)
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, batch...)
		if len(batch) == 0 {
			if len(got) >= want {
				empty++
			}
			continue
		}
		empty = 0
	}
	return got
}

func bodies(ms []broker.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Record.Body
	}
	return out
}

func msgBodies(ms []Msg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func peekLeavesTheQueueAsItWas(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Ordered: h.Features().KeepsOrder, Hold: hold})
	put := msgs(h, 12, "peek")
	h.Put(t, ep, put)
	ctx := ctxFor(t, 2*time.Minute)
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Peek, Hold: hold, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, ctx, src, len(put))
	if err := src.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !sameSet(bodies(got), msgBodies(put)) {
		t.Fatalf("peek read %d messages, put %d: %q", len(got), len(put), bodies(got))
	}
	if n := h.Count(t, ep); n != len(put) {
		t.Fatalf("after a peek the queue holds %d messages, want %d", n, len(put))
	}
	after := h.Drain(t, ep, 10*time.Second)
	if h.Features().KeepsOrder {
		if fmt.Sprint(msgBodies(after)) != fmt.Sprint(msgBodies(put)) {
			t.Fatalf("after a peek the order is %q, want %q", msgBodies(after), msgBodies(put))
		}
	} else if !sameSet(msgBodies(after), msgBodies(put)) {
		t.Fatalf("after a peek the queue holds %q, want %q", msgBodies(after), msgBodies(put))
	}
}

func releasedMessagesComeBack(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Hold: hold})
	put := msgs(h, 7, "rel")
	h.Put(t, ep, put)
	ctx := ctxFor(t, 2*time.Minute)
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Hold: hold, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, ctx, src, len(put))
	if len(got) != len(put) {
		t.Fatalf("read %d of %d", len(got), len(put))
	}
	if err := src.Release(ctx, got[:3]); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := src.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	back := h.Drain(t, ep, 10*time.Second)
	if !sameSet(msgBodies(back), msgBodies(put)) {
		t.Fatalf("after Release and Close the queue holds %q, want every message back: %q", msgBodies(back), msgBodies(put))
	}
}

func lostHoldIsDetected(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Hold: hold, StrictHolds: true})
	put := msgs(h, 2, "lost")
	h.Put(t, ep, put)
	ctx := ctxFor(t, 2*time.Minute)
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Hold: hold, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(context.Background())
	got := readAll(t, ctx, src, len(put))
	if len(got) != len(put) {
		t.Fatalf("read %d of %d", len(got), len(put))
	}
	lost, kept := got[0], got[1]
	h.LoseHold(t, ep, src, lost)
	errs := src.Ack(ctx, []broker.Message{lost, kept})
	if len(errs) != 2 || !errors.Is(errs[0], broker.ErrLeaseLost) {
		t.Fatalf("Ack of a message whose hold was lost: %v; want an error wrapping broker.ErrLeaseLost", errs)
	}
	if errs[1] != nil {
		t.Fatalf("Ack of a message still held: %v", errs[1])
	}
	if n := h.Count(t, ep); n != 1 {
		t.Fatalf("after acking a lost and a held message the queue holds %d, want 1 (the lost one is not removed)", n)
	}
}

func publishKeepsBodyAndHeaders(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Ordered: h.Features().KeepsOrder, Hold: hold})
	ctx := ctxFor(t, 2*time.Minute)
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	dest, err := ep.Target(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := msgs(h, 5, "pub")
	var batch []broker.Outgoing
	for i, m := range want {
		rec := toRecord(m, fmt.Sprintf("orig-%d", i))
		out, skip := pub.Prepare(rec, dest, broker.CopyOptions{RunID: "conformance", Now: time.Now()})
		if skip != "" {
			t.Fatalf("Prepare skipped message %d: %s", i, skip)
		}
		if !out.Marked {
			t.Errorf("message %d was not marked", i)
		}
		batch = append(batch, out)
	}
	res, err := pub.Publish(ctx, dest, batch)
	if err != nil || len(res) != len(batch) {
		t.Fatalf("Publish: %v (%d results for %d)", err, len(res), len(batch))
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("entry %d: %v", i, r.Err)
		}
	}
	got := h.Drain(t, ep, 10*time.Second)
	if len(got) != len(want) {
		t.Fatalf("published %d, the queue holds %d", len(want), len(got))
	}
	byBody := map[string]Msg{}
	for _, g := range got {
		byBody[g.Body] = g
	}
	for _, w := range want {
		g, ok := byBody[w.Body]
		if !ok {
			t.Errorf("body %q did not arrive byte for byte", w.Body)
			continue
		}
		if _, ok := g.Headers[record.MarkerAttribute]; !ok {
			t.Errorf("%q arrived without the redrive marker", w.Body)
		}
		for k, v := range w.Headers {
			if !bytes.Equal(g.Headers[k], v) {
				t.Errorf("%q: header %s is %q, want %q", w.Body, k, g.Headers[k], v)
			}
		}
		if len(g.Headers) != len(w.Headers)+1 {
			t.Errorf("%q: headers %v, want %v and the marker", w.Body, g.Headers, w.Headers)
		}
	}
}

// toRecord is m as a source would have read it.
func toRecord(m Msg, id string) *record.Record {
	attrs := map[string]record.Attribute{}
	for k, v := range m.Headers {
		switch k {
		case "bin":
			attrs[k] = record.Attribute{Type: "Binary", Base64: base64.StdEncoding.EncodeToString(v)}
		case "num":
			attrs[k] = record.Attribute{Type: "Number", Value: string(v)}
		default:
			attrs[k] = record.Attribute{Type: "String", Value: string(v)}
		}
	}
	return &record.Record{MessageID: id, Body: m.Body, BodySHA256: record.SHA256Hex(m.Body), Attributes: attrs, OrderingKey: m.OrderingKey,
		System: record.System{MessageGroupID: m.OrderingKey}}
}

func perEntryFailures(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Hold: hold})
	ctx := ctxFor(t, 2*time.Minute)
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	dest, err := ep.Target(ctx)
	if err != nil {
		t.Fatal(err)
	}
	good := msgs(h, 2, "entry")
	entries := []Msg{good[0], h.Unpublishable(t, ep), good[1]}
	var batch []broker.Outgoing
	for i, m := range entries {
		out, skip := pub.Prepare(toRecord(m, fmt.Sprintf("e-%d", i)), dest, broker.CopyOptions{RunID: "conformance", Now: time.Now()})
		if skip != "" {
			t.Fatalf("Prepare skipped entry %d: %s", i, skip)
		}
		batch = append(batch, out)
	}
	res, err := pub.Publish(ctx, dest, batch)
	if err != nil || len(res) != 3 {
		t.Fatalf("Publish: %v (%d results); want per-entry results, no call error", err, len(res))
	}
	if res[0].Err != nil || res[2].Err != nil || !errors.Is(res[1].Err, broker.ErrRejected) {
		t.Fatalf("results %+v; want the good entries published and the bad one broker.ErrRejected", res)
	}
	got := h.Drain(t, ep, 10*time.Second)
	if !sameSet(msgBodies(got), msgBodies(good)) {
		t.Fatalf("the queue holds %q, want exactly the two good entries", msgBodies(got))
	}
}

// killedRunResumedLosesNothing: a run that sent 8 of 20 messages (its
// journal says so), acked those 8 and was killed (the other 12 held, not
// acknowledged, not released) is resumed with that journal, as redrive
// resumes: the re-run reads everything still in the queue, sends what the
// journal does not list and removes without sending again what it does.
// Nothing is lost and nothing is sent twice. A broker that confirms acks
// (Features.UnconfirmedAck false) never hands the re-run a message the
// first run acked; one that does not (RabbitMQ: the ack may not have been
// applied when the connection died) may, but only marked as a redelivery
// (ReceiveCount ≥ 2), so that a consumer without a journal can still tell
// it may have been processed — the re-run counts it as resumed.
func killedRunResumedLosesNothing(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Hold: hold})
	put := msgs(h, 20, "kill")
	h.Put(t, ep, put)
	ctx := ctxFor(t, 3*time.Minute)
	first, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Hold: hold, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	read := readAll(t, ctx, first, len(put))
	if len(read) != len(put) {
		t.Fatalf("read %d of %d", len(read), len(put))
	}
	sent := map[string]int{} // body -> copies sent, over both runs
	journal := map[string]bool{}
	for _, m := range read[:8] {
		sent[m.Record.Body]++
		journal[m.Record.Body] = true // durable before the ack, as the mover's
	}
	for i, e := range first.Ack(ctx, read[:8]) {
		if e != nil {
			t.Fatalf("Ack %d: %v", i, e)
		}
	}
	h.Crash(t, first) // the other 12 were held, not acknowledged, not released
	second, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Hold: hold, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(context.Background())
	var again []broker.Message
	take := func(got []broker.Message) {
		for _, m := range got {
			if !journal[m.Record.Body] {
				sent[m.Record.Body]++
			}
		}
		again = append(again, got...)
	}
	deadline := time.Now().Add(hold + 30*time.Second)
	for len(sent) < len(put) && time.Now().Before(deadline) {
		take(readAll(t, ctx, second, 1))
	}
	take(readAll(t, ctx, second, 0)) // and whatever else comes back
	resumed := 0
	for i, e := range second.Ack(ctx, again) {
		m := again[i]
		if e != nil {
			t.Fatalf("Ack after resume %d: %v", i, e)
		}
		if !journal[m.Record.Body] {
			continue
		}
		resumed++
		if !h.Features().UnconfirmedAck {
			t.Errorf("%q was removed by the first run and read again", m.Record.Body)
		}
		if m.Record.System.ReceiveCount < 2 {
			t.Errorf("%q, acked by the killed run, was read again unmarked (receive count %d): a consumer could not tell it may have been processed", m.Record.Body, m.Record.System.ReceiveCount)
		}
	}
	for body, n := range sent {
		if n != 1 {
			t.Errorf("%q was sent %d times over the two runs", body, n)
		}
	}
	if len(sent) != len(put) {
		t.Fatalf("the two runs sent %d distinct messages of %d: something was lost", len(sent), len(put))
	}
	if resumed > 0 {
		t.Logf("%d message(s) acked by the killed run came back (the broker had not applied the acks); the journal kept them from being sent twice", resumed)
	}
	if n := h.Count(t, ep); n != 0 {
		t.Fatalf("after both runs the queue holds %d", n)
	}
}

// oddSink accepts every other message and refuses the rest, as a
// destination that refuses some entries would.
type oddSink struct{}

func (oddSink) Prepare(_ context.Context, it pipeline.Item) (pipeline.Decision, error) {
	return pipeline.Decision{Verb: pipeline.Deliver, Key: "k", Payload: it.Record.Body, Label: "dest"}, nil
}

func (oddSink) Deliver(_ context.Context, _ int, _ string, items []pipeline.Item, _ []any) ([]pipeline.Outcome, pipeline.Commit) {
	out := make([]pipeline.Outcome, len(items))
	for i, it := range items {
		var n int
		fmt.Sscanf(it.Record.Body[len(`{"id":"bucket-`):], "%d", &n)
		if n%2 == 1 {
			out[i].Err = pipeline.Refused(errors.New("refused by the test destination"))
		}
	}
	return out, nil
}

func (oddSink) Flush(context.Context) (bool, error) { return false, nil }

func everyMessageInOneBucket(t *testing.T, h Harness) {
	ep := h.NewQueue(t, QueueOptions{Hold: hold})
	put := msgs(h, 30, "bucket")
	h.Put(t, ep, put)
	ctx := ctxFor(t, 3*time.Minute)
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Hold: hold, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Run(ctx, src, oddSink{}, pipeline.Options{Workers: 3})
	if cerr := src.Close(context.Background()); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	sum := res.Delivered + res.Resumed + res.SkippedTotal() + res.Released + res.Refused + res.Unknown + res.NotAcked
	if res.Received != len(put) || sum != res.Received {
		t.Fatalf("received %d of %d; buckets delivered %d resumed %d skipped %d released %d refused %d unknown %d not-acked %d sum to %d",
			res.Received, len(put), res.Delivered, res.Resumed, res.SkippedTotal(), res.Released, res.Refused, res.Unknown, res.NotAcked, sum)
	}
	if res.Delivered != len(put)/2 || res.Refused != len(put)/2 || res.Complete {
		t.Fatalf("delivered %d, refused %d, complete %v; want %d, %d and not complete", res.Delivered, res.Refused, res.Complete, len(put)/2, len(put)/2)
	}
	if n := h.Count(t, ep); n != res.Refused {
		t.Fatalf("the queue holds %d after the run, want the %d refused ones", n, res.Refused)
	}
}
