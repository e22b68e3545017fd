package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestProgressNDJSONEventsCarryType(t *testing.T) {
	var out, errOut bytes.Buffer
	p := NewProgress(Test(nil, &out, &errOut, true), NDJSON)
	p.Update(Stats{Op: "redrive", Done: 5, Total: 10, Rate: 2.5}, true)
	p.Message(MessageEvent{MessageID: "m1", Action: "moved", Destination: "orders"})
	p.Guard(GuardEvent{Name: "max-returns", State: "tripped", Value: 0.5, Limit: 0.1})
	if err := p.Summary(map[string]any{"moved": 5}); err != nil {
		t.Fatal(err)
	}
	p.Done()
	if errOut.Len() != 0 {
		t.Fatalf("ndjson mode wrote to stderr: %q", errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{EventProgress, EventMessage, EventGuard, EventSummary}
	if len(lines) != len(want) {
		t.Fatalf("got %d events, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d not JSON: %v", i, err)
		}
		if m["type"] != want[i] {
			t.Fatalf("line %d type %v, want %s", i, m["type"], want[i])
		}
	}
	if !strings.Contains(lines[0], `"done":5`) || !strings.Contains(lines[3], `"moved":5`) {
		t.Fatalf("event fields missing: %s", out.String())
	}
}

func TestProgressBarOnlyOnTerminal(t *testing.T) {
	var out, errOut bytes.Buffer
	p := NewProgress(Test(nil, &out, &errOut, false), Table)
	p.Update(Stats{Op: "redrive", Done: 1}, true)
	p.Done()
	if out.Len()+errOut.Len() != 0 {
		t.Fatalf("piped run printed progress: out=%q err=%q", out.String(), errOut.String())
	}
	out.Reset()
	p = NewProgress(Test(nil, &out, &errOut, true), Table)
	p.Update(Stats{Op: "redrive", Done: 3, Total: 6, Rate: 10, Target: 20, ETA: 90, Guard: "ok"}, true)
	got := errOut.String()
	for _, w := range []string{"3/6", "10/s", "target 20/s", "ETA 1m", "guard ok", "[============"} {
		if !strings.Contains(got, w) {
			t.Fatalf("bar %q lacks %q", got, w)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("bar went to stdout: %q", out.String())
	}
}
