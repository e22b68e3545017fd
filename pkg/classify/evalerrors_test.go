package classify

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func filterSelector(t *testing.T, src string) *Selector {
	t.Helper()
	f, err := inspect.CompileFilter(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSelector(nil, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func recordWithID(id, body string) (*record.Record, any) {
	rec, parsed := decodedRecord(body, nil)
	rec.MessageID = id
	return rec, parsed
}

func TestFilterFailingOnEveryMessageRefusesAtRefuseAfter(t *testing.T) {
	s := filterSelector(t, ".body | tonumber > 3")
	for i := 1; i < RefuseAfter; i++ {
		rec, parsed := recordWithID(fmt.Sprintf("m-%d", i), "hello")
		ok, err := s.Select(rec, parsed)
		var ee *EvalError
		if ok || !errors.As(err, &ee) || IsRefusal(err) {
			t.Fatalf("message %d: selected=%v err=%v; want a per-message EvalError", i, ok, err)
		}
	}
	rec, parsed := recordWithID("m-last", "hello")
	ok, err := s.Select(rec, parsed)
	if ok || !IsRefusal(err) || errs.Code(err) != errs.ExitUsage {
		t.Fatalf("message %d: selected=%v err=%v; want the refusal (exit 2)", RefuseAfter, ok, err)
	}
	msg := err.Error()
	for _, want := range []string{"--filter '.body | tonumber > 3'", "failed on every message read", "message m-1:", `"hello"`, "(.body | tonumber > 3)?", "nothing was changed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not contain %q", msg, want)
		}
	}
	// Once refused, a message that evaluates cleanly is not selected either.
	good, gp := recordWithID("m-good", "7")
	if ok, err := s.Select(good, gp); ok || !IsRefusal(err) {
		t.Errorf("after the refusal: selected=%v err=%v; want nothing selected", ok, err)
	}
	sum := s.Errors()
	if sum == nil || sum.Count != RefuseAfter || sum.FirstID != "m-1" || !strings.Contains(sum.FirstError, "tonumber cannot be applied") || sum.Expression != "--filter '.body | tonumber > 3'" {
		t.Errorf("Errors() = %+v", sum)
	}
}

func TestMixedMessagesCountErrorsAndNeverRefuse(t *testing.T) {
	s := filterSelector(t, ".body | tonumber > 3")
	var told []string
	var mu sync.Mutex
	s.OnError(func(e EvalError) {
		mu.Lock()
		told = append(told, e.MessageID)
		mu.Unlock()
	})
	// A few text bodies first, then a number: the clean one decides.
	selected := 0
	for i := 0; i < 3*RefuseAfter; i++ {
		body := "text"
		if i == 5 || i%4 == 0 && i > 5 {
			body = "9"
		}
		rec, parsed := recordWithID(fmt.Sprintf("m-%d", i), body)
		ok, err := s.Select(rec, parsed)
		if IsRefusal(err) {
			t.Fatalf("message %d refused a run whose message 5 evaluated cleanly: %v", i, err)
		}
		if ok {
			selected++
			if body != "9" {
				t.Fatalf("message %d with a text body selected", i)
			}
		}
	}
	if want := 1 + (3*RefuseAfter-1-8)/4 + 1; selected != want {
		t.Errorf("selected %d, want %d", selected, want)
	}
	sum := s.Errors()
	if sum == nil || sum.Count != 3*RefuseAfter-selected || sum.FirstID != "m-0" {
		t.Errorf("Errors() = %+v; want %d errors, first m-0", sum, 3*RefuseAfter-selected)
	}
	if err := s.Refusal(); err != nil {
		t.Errorf("Refusal() = %v for a filter that evaluated cleanly", err)
	}
	if len(told) != VerboseErrors || told[0] != "m-0" {
		t.Errorf("OnError told %d errors (first %v), want the first %d", len(told), told, VerboseErrors)
	}
}

func TestFewMessagesAllFailingRefuseAtTheEnd(t *testing.T) {
	s := filterSelector(t, ".json.amount | ascii_downcase")
	for i := 0; i < 3; i++ {
		rec, parsed := recordWithID(fmt.Sprintf("m-%d", i), `{"amount": 12}`)
		if _, err := s.Select(rec, parsed); IsRefusal(err) {
			t.Fatalf("refused after %d messages, before RefuseAfter", i+1)
		}
	}
	err := s.Refusal()
	if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "(3 message(s); first: message m-0: ascii_downcase cannot be applied to: number (12))") {
		t.Fatalf("Refusal() = %v", err)
	}
	rec, parsed := recordWithID("late", `{"amount": "X"}`)
	if ok, err := s.Select(rec, parsed); ok || !IsRefusal(err) {
		t.Errorf("after the end-of-run refusal: selected=%v err=%v", ok, err)
	}
}

func TestNoErrorsNoSummaryNoRefusal(t *testing.T) {
	s := filterSelector(t, ".json == null")
	rec, parsed := recordWithID("m", "{}")
	if ok, err := s.Select(rec, parsed); ok || err != nil {
		t.Fatalf("selected=%v err=%v", ok, err)
	}
	if s.Errors() != nil || s.Refusal() != nil {
		t.Errorf("a clean run reports errors %+v / refusal %v", s.Errors(), s.Refusal())
	}
	var nilSel *Selector
	if nilSel.Errors() != nil || nilSel.Refusal() != nil {
		t.Error("nil selector reports errors")
	}
	// Nothing evaluated at all (an empty queue) is no refusal either.
	if filterSelector(t, ".body | tonumber").Refusal() != nil {
		t.Error("a selection that evaluated nothing refused")
	}
}

func TestRuleErrorNamesTheRuleAndDoesNotSelect(t *testing.T) {
	rs, err := Parse([]byte(`
rules:
  - name: big-amount
    when: '.json.amount | ascii_downcase | startswith("big")'
    class: big
    action: archive
  - include: builtin
`), "team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSelector(rs, []string{"transient"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A timeout message: the failing rule falls through to the built-in
	// transient rule, but a message whose rules failed is never selected.
	rec, parsed := recordWithID("m-1", `{"amount": 5, "eventId":"e","eventType":"A","eventVersion":1,"failure_reason":"timeout"}`)
	ok, err := s.Select(rec, parsed)
	var ee *EvalError
	if ok || !errors.As(err, &ee) || !ee.Rule {
		t.Fatalf("selected=%v err=%v; want a rule EvalError", ok, err)
	}
	if rec.Class != ClassTransient {
		t.Errorf("class %q; the failing rule should fall through to the next one", rec.Class)
	}
	if want := `rule "big-amount" (team.yaml:3)`; ee.What != want {
		t.Errorf("What = %q, want %q", ee.What, want)
	}
	err = s.Refusal()
	if err == nil || !strings.Contains(err.Error(), `rule "big-amount" (team.yaml:3) failed on every message read`) || !strings.Contains(err.Error(), "fix the rule's when") {
		t.Errorf("Refusal() = %v", err)
	}
}

func TestConcurrentSelectionRefusedOnlyWithoutACleanMessage(t *testing.T) {
	// Workers race: whichever decides first, a refused run selected
	// nothing, and a run that selected something is never refused.
	for round := 0; round < 20; round++ {
		s := filterSelector(t, ".body | tonumber > 0")
		var wg sync.WaitGroup
		var mu sync.Mutex
		selected, refusals := 0, 0
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 40; i++ {
					body := "text"
					if w == 7 && i == 39 {
						body = "1"
					}
					rec, parsed := recordWithID(fmt.Sprintf("w%d-%d", w, i), body)
					ok, err := s.Select(rec, parsed)
					mu.Lock()
					if ok {
						selected++
					}
					if IsRefusal(err) {
						refusals++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if selected > 0 && (refusals > 0 || s.Refusal() != nil) {
			t.Fatalf("round %d: %d selected and %d refusals", round, selected, refusals)
		}
		if selected == 0 && s.Refusal() == nil {
			t.Fatalf("round %d: nothing selected, every other message failed, and no refusal", round)
		}
	}
}
