package ui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var now = time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)

// fakeBackend is the one fake of the tests: two DLQs and a fixed set of
// messages, read in batches; runs are recorded, not executed.
type fakeBackend struct {
	items []Item
	runs  [][]string
}

func (f *fakeBackend) ListDLQs(context.Context) ([]DLQ, error) {
	return []DLQ{
		{Ref: "orders-dlq", Name: "orders-dlq", Broker: "sqs", Depth: Depth{Ready: 40, Held: 2}, Warnings: []string{"retention 4d is shorter than source orders' 14d"}},
		{Ref: "kafka://127.0.0.1:9092/payments-dlt", Name: "payments-dlt", Broker: "kafka", Depth: Depth{Ready: 7, Exact: true, Oldest: 5 * time.Hour, OldestKnown: true}},
	}, nil
}

func (f *fakeBackend) Depth(context.Context, string) (Depth, error) { return Depth{Ready: 42}, nil }

func (f *fakeBackend) Read(ctx context.Context, ref string, emit func(ReadUpdate)) error {
	emit(ReadUpdate{Start: true, Depth: int64(len(f.items)), Warnings: []string{"every receive increments ApproximateReceiveCount"}})
	for i := 0; i < len(f.items); i += 4 {
		emit(ReadUpdate{Items: f.items[i:min(i+4, len(f.items))]})
	}
	emit(ReadUpdate{End: true, Complete: true})
	return nil
}

func (f *fakeBackend) Describe(rec *record.Record) Detail {
	return Detail{Body: "{\n  \"order\": \"o-1\"\n}", Explain: "rules: built-in rules\n  YES  transient-timeout: a timeout\n=> class transient, action redrive (rule transient-timeout)", Origin: rec.SourceQueue()}
}

func (f *fakeBackend) Run(ctx context.Context, args []string, event func(RunEvent)) RunResult {
	f.runs = append(f.runs, args)
	event(RunEvent{Type: "progress", Fields: map[string]any{"type": "progress", "op": "redrive", "done": 3.0, "total": 3.0, "skipped": 0.0, "failed": 0.0, "rate": 12.0}})
	return RunResult{Code: 0, Summary: map[string]any{"type": "summary", "status": "completed", "moved": 3.0, "run_id": "20261204T030000-ab12cd",
		"canary": map[string]any{"pass": true, "returned": 0.0}}}
}

// testItems: 6 database timeouts from orders (transient), 3 business
// rejections from payments, 1 plain-text message without context, each
// prepared from its body the way a read prepares it.
func testItems() []Item {
	p := NewPreparer(nil, inspect.NewRedactor(nil))
	var out []Item
	add := func(id, source, body string, age int) {
		rec := record.Record{MessageID: id, Body: body, AgeSeconds: int64(age),
			System: record.System{ReceiveCount: 2, SourceQueueARN: "arn:aws:sqs:us-east-1:000000000000:" + source}}
		if source != "" {
			rec.System.SentAt = now.Add(-time.Duration(age) * time.Second)
		} else {
			rec.System.SourceQueueARN = ""
		}
		parsed := inspect.Decode(&rec)
		out = append(out, *p.Item(&rec, parsed))
	}
	enriched := func(typ, tenant, reason, ftype, class string) string {
		return fmt.Sprintf(`{"original_payload":{"eventId":"e-1","eventType":%q,"eventVersion":1,"producer":"api","tenantId":%q,"payload":{"order":"o-1"}},"failure_reason":%q,"failure_type":%q,"error_class":%q,"attempt_count":3}`,
			typ, tenant, reason, ftype, class)
	}
	for i := range 6 {
		add(fmt.Sprintf("a1b2c3d4-0000-0000-0000-00000000000%d", i), "orders",
			enriched("OrderCreated", "t-acme", fmt.Sprintf("timeout after %dms calling inventory-db", 1000+i), "DatabaseTimeout", "TransientError"), 3600*(i+1))
	}
	for i := range 3 {
		add(fmt.Sprintf("b1b2c3d4-0000-0000-0000-00000000000%d", i), "payments",
			enriched("PaymentCaptured", "t-globex", "insufficient funds for payment p-1", "BusinessRuleViolation", "BusinessError"), 600)
	}
	add("c1b2c3d4-0000-0000-0000-000000000000", "", "hello", 30)
	return out
}

// harness drives a Model with scripted keys, running the commands it
// returns to completion (the fake backend answers at once).
type harness struct {
	t  *testing.T
	m  *Model
	be *fakeBackend
}

func newHarness(t *testing.T, o Options, w, h int) *harness {
	o.Now = func() time.Time { return now }
	o.NoColor = true
	be := &fakeBackend{items: testItems()}
	m := New(context.Background(), be, o, 0)
	hs := &harness{t: t, m: m, be: be}
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.run(m.Init())
	return hs
}

func (h *harness) run(c tea.Cmd) {
	for queue := []tea.Cmd{c}; len(queue) > 0; {
		c, queue = queue[0], queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			return
		default:
			_, next := h.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

func (h *harness) send(msg tea.Msg) {
	_, c := h.m.Update(msg)
	h.run(c)
}

// keys sends keys: names (enter, esc, down, up, space) or single runes.
func (h *harness) keys(ks ...string) {
	for _, k := range ks {
		var msg tea.KeyPressMsg
		switch k {
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "up":
			msg = tea.KeyPressMsg{Code: tea.KeyUp}
		case "space":
			msg = tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
		default:
			r := []rune(k)[0]
			msg = tea.KeyPressMsg{Code: r, Text: k}
		}
		h.send(msg)
	}
}

// golden compares the frame with testdata/NAME.golden (-update rewrites it).
func (h *harness) golden(name string) string {
	h.t.Helper()
	frame := h.m.Render()
	lines := strings.Split(frame, "\n")
	if len(lines) != h.m.h {
		h.t.Fatalf("%s: the frame has %d lines, the terminal %d", name, len(lines), h.m.h)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > h.m.w {
			h.t.Fatalf("%s: line %d is %d cells wide, the terminal %d: %q", name, i+1, n, h.m.w, l)
		}
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(frame), 0o644); err != nil {
			h.t.Fatal(err)
		}
		return frame
	}
	want, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v (run go test ./pkg/ui -update to create it)", err)
	}
	if string(want) != frame {
		h.t.Errorf("%s differs from %s (go test ./pkg/ui -update rewrites it)\n--- got\n%s\n--- want\n%s", name, path, frame, want)
	}
	return frame
}

func TestScreensGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			sz := fmt.Sprintf("%dx%d", size.w, size.h)
			h := newHarness(t, Options{}, size.w, size.h)
			h.golden("dlqs-" + sz)
			h.keys("enter")
			f := h.golden("groups-error-" + sz)
			if !strings.Contains(f, "read all 10") || !strings.Contains(f, "DatabaseTimeout") {
				t.Fatalf("the groups screen does not show what was read:\n%s", f)
			}
			h.keys("g")
			h.golden("groups-class-" + sz)
			h.keys("enter")
			h.golden("messages-" + sz)
			h.keys("enter")
			h.golden("message-" + sz)
			h.keys("esc", "esc", "c")
			h.golden("confirm-canary-" + sz)
			h.keys("y")
			h.golden("run-" + sz)
			h.keys("enter", "?")
			h.golden("help-" + sz)
		})
	}
}

func TestReadOnlyHasNoActionKeys(t *testing.T) {
	h := newHarness(t, Options{ReadOnly: true}, 80, 24)
	h.keys("enter", "g")
	f := h.golden("groups-readonly-80x24")
	if strings.Contains(f, "canary") || strings.Contains(f, "redrive") {
		t.Fatalf("read-only footer offers actions:\n%s", f)
	}
	for _, k := range []string{"d", "c", "R", "a", "/", "t"} {
		h.keys(k)
		if h.m.scr != scrGroups || h.m.typing != inNone {
			t.Fatalf("key %s did something in read-only mode", k)
		}
	}
	h.keys("?")
	if f := h.m.Render(); !strings.Contains(f, "read-only: no action keys") || strings.Contains(f, "R redrive") {
		t.Fatalf("read-only help lists actions:\n%s", f)
	}
	if len(h.be.runs) != 0 {
		t.Fatalf("read-only mode ran %v", h.be.runs)
	}
}

// TestCanaryThenRedriveRunTheCommandLines: the canary and the redrive of
// the class group are exactly the dlqctl command lines shown.
func TestCanaryThenRedriveRunTheCommandLines(t *testing.T) {
	h := newHarness(t, Options{VerifyFor: 3 * time.Second, Global: []string{"--state-dir=/tmp/s"}}, 80, 24)
	h.keys("enter", "2") // class
	h.keys("c")
	if h.m.pending == nil || !strings.Contains(CommandLine(h.m.pending.Args), "dlqctl redrive orders-dlq --class transient --canary 6 --verify-for 3s") {
		t.Fatalf("confirm screen:\n%s", h.m.Render())
	}
	h.keys("y", "enter", "R", "y")
	want := [][]string{
		{"redrive", "orders-dlq", "--class", "transient", "--canary", "6", "--verify-for", "3s", "--state-dir=/tmp/s", "--yes", "-o", "ndjson"},
		{"redrive", "orders-dlq", "--class", "transient", "--state-dir=/tmp/s", "--yes", "-o", "ndjson"},
	}
	if fmt.Sprint(h.be.runs) != fmt.Sprint(want) {
		t.Fatalf("ran %q\nwant %q", h.be.runs, want)
	}
	if log := h.m.Log(); len(log) != 2 || log[1].CommandLine != "dlqctl redrive orders-dlq --class transient --state-dir=/tmp/s --yes -o ndjson" {
		t.Fatalf("session log %+v", log)
	}
}

// TestDeclinedActionRunsNothing: n on the confirmation runs nothing.
func TestDeclinedActionRunsNothing(t *testing.T) {
	h := newHarness(t, Options{}, 80, 24)
	h.keys("enter", "R", "n")
	if len(h.be.runs) != 0 || h.m.scr != scrGroups {
		t.Fatalf("declined, yet ran %v (screen %d)", h.be.runs, h.m.scr)
	}
}

// TestGroupSelectionsSelectExactlyTheGroup: the --filter built for a group
// (or its ids) keeps exactly the group's messages, and --class is used for
// a class group.
func TestGroupSelectionsSelectExactlyTheGroup(t *testing.T) {
	items := testItems()
	a := newAggregate()
	for i := range items {
		a.add(&items[i])
	}
	for k := range GroupKeys {
		for _, g := range a.sorted(k) {
			sel := groupSelection(k, g, a.total, true)
			if GroupKeys[k].Key == "class" {
				if sel.Args[0] != "--class" || sel.Args[1] != g.Value {
					t.Fatalf("class group %s selected by %q", g.Value, sel.Args)
				}
				continue
			}
			flt, err := inspect.CompileFilter(sel.Args[1])
			if err != nil {
				t.Fatalf("key %s group %s: %v", GroupKeys[k].Name, g.Value, err)
			}
			n := 0
			for i := range items {
				rec := items[i].Rec
				parsed := inspect.Decode(&rec)
				in := flt.Keep(&rec, parsed)
				if in != (items[i].Keys[k] == g.Value) {
					t.Fatalf("key %s group %q: filter %s keeps %s = %v", GroupKeys[k].Name, g.Value, sel.Args[1], rec.MessageID, in)
				}
				if in {
					n++
				}
			}
			if n != g.Count {
				t.Fatalf("key %s group %q: filter keeps %d of %d", GroupKeys[k].Name, g.Value, n, g.Count)
			}
		}
	}
}

func TestMarkedMessagesAndTypedFilterAreTheSelection(t *testing.T) {
	h := newHarness(t, Options{}, 80, 24)
	h.keys("enter", "enter", "space", "space", "d")
	if h.m.pending == nil || !strings.Contains(CommandLine(h.m.pending.Args), `--filter '.message_id | IN("a1b2c3d4-0000-0000-0000-000000000000", "a1b2c3d4-0000-0000-0000-000000000001")' --dry-run`) {
		t.Fatalf("marked messages are not the selection:\n%s", h.m.Render())
	}
	h.keys("n", "esc", "/")
	for _, r := range `.class == "business"` {
		h.keys(string(r))
	}
	h.keys("enter", "d")
	if h.m.pending == nil || !strings.Contains(CommandLine(h.m.pending.Args), `dlqctl redrive orders-dlq --filter '.class == "business"' --dry-run -o ndjson`) {
		t.Fatalf("typed filter is not the selection:\n%s", h.m.Render())
	}
}

func TestResizeRedrawsAtTheNewSize(t *testing.T) {
	h := newHarness(t, Options{}, 80, 24)
	h.keys("enter")
	h.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	if lines := strings.Split(h.m.Render(), "\n"); len(lines) != 30 || len([]rune(lines[0])) != 100 {
		t.Fatalf("after a resize to 100x30 the frame is %d lines of %d", len(lines), len([]rune(lines[0])))
	}
}

func TestCommandLineQuotesForAShell(t *testing.T) {
	got := CommandLine([]string{"redrive", "amqp://ops:s3cret@rabbit:5672/%2f/q", "--filter", `.a == "it's"`, "--to", "s3://b/p"})
	if want := `dlqctl redrive 'amqp://ops:***@rabbit:5672/%2f/q' --filter '.a == "it'\''s"' --to s3://b/p`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// TestReadKeepsBoundedMemory: counting 100k messages keeps every count but
// at most maxKept records and maxIDs ids per group.
func TestReadKeepsBoundedMemory(t *testing.T) {
	base := testItems()
	a := newAggregate()
	for i := range 100_000 {
		it := base[i%len(base)]
		it.Rec.MessageID = fmt.Sprintf("m-%d", i)
		a.add(&it)
	}
	if a.total != 100_000 || a.kept > maxKept {
		t.Fatalf("total %d, kept %d records (bound %d)", a.total, a.kept, maxKept)
	}
	for k := range GroupKeys {
		sum := 0
		for _, g := range a.sorted(k) {
			sum += g.Count
			if len(g.IDs) > maxIDs || len(g.Items) > maxKeptPerGroup {
				t.Fatalf("group %s keeps %d ids and %d records", g.Value, len(g.IDs), len(g.Items))
			}
		}
		if sum != 100_000 {
			t.Fatalf("key %s counts %d of 100000", GroupKeys[k].Name, sum)
		}
	}
	// A group larger than the ids it keeps is selected by those ids and
	// says so.
	g := a.sorted(0)[0]
	if sel := groupSelection(0, g, a.total, true); !sel.Partial || sel.N != maxIDs {
		t.Fatalf("selection of a group of %d by %d ids: %+v", g.Count, len(g.IDs), sel.What)
	}
}

// BenchmarkUpdate100k: the model counting a 100k-message read as it
// arrives (batches of 256 through Update, as the backend sends them).
func BenchmarkUpdate100k(b *testing.B) {
	base := testItems()
	for b.Loop() {
		m := New(context.Background(), &fakeBackend{}, Options{NoColor: true}, 0)
		m.agg, m.reading, m.readSeq = newAggregate(), true, 1
		for i := 0; i < 100_000; i += 256 {
			batch := make([]Item, 256) // each batch is new, as the backend sends it
			for j := range batch {
				batch[j] = base[(i+j)%len(base)]
				batch[j].Rec.MessageID = strconv.Itoa(i + j)
			}
			m.Update(readMsg{seq: 1, u: ReadUpdate{Items: batch}})
		}
		_ = m.Render()
	}
}

// TestNoColorFramesArePlainText: with NO_COLOR/--no-color no escape
// sequence is drawn; with colour the cursor row is styled.
func TestNoColorFramesArePlainText(t *testing.T) {
	h := newHarness(t, Options{}, 80, 24)
	h.keys("enter")
	if f := h.m.Render(); strings.Contains(f, "\x1b[") {
		t.Fatalf("a no-colour frame has escape sequences: %q", f)
	}
	c := New(context.Background(), &fakeBackend{items: testItems()}, Options{Now: func() time.Time { return now }}, 0)
	hc := &harness{t: t, m: c, be: &fakeBackend{}}
	hc.run(c.Init())
	if f := c.Render(); !strings.Contains(f, "\x1b[") {
		t.Fatalf("a colour frame has no styling:\n%s", f)
	}
}
