package classify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestNilSelectorMatchesEverything(t *testing.T) {
	var s *Selector
	rec, parsed := decodedRecord("not json", nil)
	if !mustSelect(t, s, rec, parsed) {
		t.Fatal("nil selector rejected a message")
	}
	if rec.Class != "" {
		t.Errorf("nil selector classified: %q", rec.Class)
	}
	if s.Describe() != "all messages" || s.Classifies() || s.Rules() != nil {
		t.Errorf("nil selector: %q", s.Describe())
	}
}

func TestSelectorClassesUseBuiltinRules(t *testing.T) {
	s, err := NewSelector(nil, []string{"transient,permanent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Describe(); got != "classes transient,permanent (built-in rules)" {
		t.Errorf("Describe = %q", got)
	}
	timeout, tp := decodedRecord(`{"eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"timeout after 30000ms"}`, nil)
	plain, pp := decodedRecord(`{"eventId":"e","eventType":"A",`, nil)
	business, bp := decodedRecord(`{"eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"insufficient funds"}`, nil)
	if !mustSelect(t, s, timeout, tp) || !mustSelect(t, s, plain, pp) {
		t.Error("transient or permanent message not selected")
	}
	if mustSelect(t, s, business, bp) {
		t.Error("business message selected by --class transient,permanent")
	}
	if business.Class != ClassBusiness || business.Action != ActionInvestigate {
		t.Errorf("rejected message still carries its classification, got %q/%q", business.Class, business.Action)
	}
}

func TestSelectorFilterSeesClassification(t *testing.T) {
	f, err := inspect.CompileFilter(`.action == "redrive" and .system.receive_count > 3`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSelector(Builtin(), nil, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Describe(); !strings.Contains(got, "all classes (built-in rules)") || !strings.Contains(got, "filter .action") {
		t.Errorf("Describe = %q", got)
	}
	rec, parsed := decodedRecord(`{"eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"HTTP 503 from ledger"}`, nil)
	rec.System.ReceiveCount = 5
	if !mustSelect(t, s, rec, parsed) {
		t.Error("transient message with 5 receives not selected")
	}
	rec.System.ReceiveCount = 1
	if mustSelect(t, s, rec, parsed) {
		t.Error("receive_count 1 selected")
	}
}

func TestSelectorFilterOnlyDoesNotClassify(t *testing.T) {
	f, _ := inspect.CompileFilter(`.json.x == 1`)
	s, err := NewSelector(nil, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	rec, parsed := decodedRecord(`{"x":1}`, nil)
	if !mustSelect(t, s, rec, parsed) || rec.Class != "" {
		t.Errorf("match=%v class=%q", mustSelect(t, s, rec, parsed), rec.Class)
	}
	if s.Describe() != "filter .json.x == 1" {
		t.Errorf("Describe = %q", s.Describe())
	}
}

func TestSelectorUnknownClassIsBadInput(t *testing.T) {
	_, err := NewSelector(nil, []string{"transient", "transiant"}, nil)
	if err == nil || errs.Code(err) != errs.ExitUsage {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{`"transiant"`, "built-in rules", "transient", "schema-mismatch", "unknown"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not mention %q", err, w)
		}
	}
}

// Redrive and archive pipelines call Match from several goroutines.
func TestSelectorConcurrentMatch(t *testing.T) {
	rs, err := Parse([]byte("rules:\n  - name: big\n    when: '.json.amount > 100'\n    class: big\n    action: investigate\n  - include: builtin\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := inspect.CompileFilter(`.class != "business"`)
	s, err := NewSelector(rs, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{`{"amount":500}`, `{"eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"timeout"}`, `{"eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"declined"}`, "{\"amount\":"}
	want := []string{"big", ClassTransient, ClassBusiness, ClassPermanent}
	done := make(chan error)
	for w := 0; w < 8; w++ {
		go func() {
			for i := 0; i < 200; i++ {
				k := i % len(bodies)
				rec, parsed := decodedRecord(bodies[k], nil)
				ok, err := s.Select(rec, parsed)
				if err != nil {
					done <- err
					return
				}
				if rec.Class != want[k] || ok != (want[k] != ClassBusiness) {
					done <- fmt.Errorf("body %q: class %q match %v", bodies[k], rec.Class, ok)
					return
				}
			}
			done <- nil
		}()
	}
	for w := 0; w < 8; w++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// MatchesAll lets a caller skip decoding records: it must be true only for
// a selector whose Match passes every record unseen.
func TestSelectorMatchesAllOnlyWithoutSelection(t *testing.T) {
	var none *Selector
	empty, _ := NewSelector(nil, nil, nil)
	f, _ := inspect.CompileFilter(`.json.x == 1`)
	filtered, _ := NewSelector(nil, nil, f)
	classed, _ := NewSelector(nil, []string{"transient"}, nil)
	ruled, _ := NewSelector(Builtin(), nil, nil)
	enriched, _ := NewSelector(nil, nil, nil)
	enriched.SetEnrich(func(*record.Record) {})
	for name, c := range map[string]struct {
		s    *Selector
		want bool
	}{"nil": {none, true}, "empty": {empty, true}, "filter": {filtered, false}, "class": {classed, false},
		"rules": {ruled, false}, "enrich": {enriched, false}} {
		if got := c.s.MatchesAll(); got != c.want {
			t.Errorf("%s: MatchesAll = %v, want %v", name, got, c.want)
		}
		if c.want {
			rec, parsed := decodedRecord("not json", nil)
			if !mustSelect(t, c.s, rec, parsed) {
				t.Errorf("%s: MatchesAll but Match rejected a record", name)
			}
		}
	}
}

// mustSelect is Select for selections that never fail.
func mustSelect(t testing.TB, s *Selector, rec *record.Record, parsed any) bool {
	t.Helper()
	ok, err := s.Select(rec, parsed)
	if err != nil {
		t.Fatalf("Select(%s): %v", rec.MessageID, err)
	}
	return ok
}

// TestSelectorMinConfidence: --class takes a decision only at or above the
// threshold; a decision named by a generic word alone ("timeout") is below
// the default, one named by a specific phrase or a chain's root is above;
// unknown is always selectable.
func TestSelectorMinConfidence(t *testing.T) {
	s, err := NewSelector(nil, []string{"transient,unknown"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	weak, wp := decodedRecord(`{"eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"timeout"}`, nil)
	root, rp := decodedRecord(`{"eventId":"e","eventType":"A","eventVersion":1,"error":"TypeError: fetch failed\n    at node:internal/deps/undici/undici:13502:13 {\n  [cause]: ConnectTimeoutError: Connect Timeout Error (attempted address: psp.example:443, timeout: 10000ms)\n}"}`, nil)
	conflict, cp := decodedRecord(`{"eventId":"e","eventType":"A","eventVersion":1,"error_type":"TimeoutException","error_code":"ValidationException"}`, nil)
	if mustSelect(t, s, weak, wp) {
		t.Errorf("a generic word (confidence %.2f) selected by --class transient at the default %.2f", weak.Confidence, DefaultMinConfidence)
	}
	if weak.Class != ClassTransient || weak.Confidence >= DefaultMinConfidence {
		t.Errorf("weak decision: %s %.2f", weak.Class, weak.Confidence)
	}
	if !mustSelect(t, s, root, rp) || root.Class != ClassTransient || root.Confidence < ConfRoot-ConfOverruled-1e-9 {
		t.Errorf("root cause decision not selected: %s %.2f", root.Class, root.Confidence)
	}
	if !mustSelect(t, s, conflict, cp) || conflict.Class != ClassUnknown {
		t.Errorf("unknown not selectable: %s %.2f", conflict.Class, conflict.Confidence)
	}
	if err := s.SetMinConfidence(0.5); err != nil {
		t.Fatal(err)
	}
	if !mustSelect(t, s, weak, wp) {
		t.Error("--min-confidence 0.5 does not select a 0.55 decision")
	}
	if !strings.Contains(s.Describe(), "confidence >= 0.5") {
		t.Errorf("Describe = %q", s.Describe())
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if err := s.SetMinConfidence(bad); err == nil || !strings.Contains(err.Error(), "outside 0..1") {
			t.Errorf("SetMinConfidence(%v) = %v", bad, err)
		}
	}
}
