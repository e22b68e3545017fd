package report

import (
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestCells(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ got, want string }{
		{AgeCell(now, time.Time{}), "-"},
		{AgeCell(now, now.Add(-26*time.Hour)), "1d2h"},
		{ExpiryCell(now, time.Time{}), "-"},
		{ExpiryCell(now, now), "expired"},
		{ExpiryCell(now, now.Add(-time.Minute)), "expired"},
		{ExpiryCell(now, now.Add(3*time.Hour)), "in 3h"},
		{EstimateCell(nil), ""},
		{EstimateCell(&inspect.Estimate{Total: 120, Low: 100, High: 140}), "~120 (100–140)"},
		{HumanBytes(1023), "1023 B"},
		{HumanBytes(1536), "1.5 KiB"},
		{HumanBytes(64 << 20), "64.0 MiB"},
		{HumanBytes(5 << 30), "5.0 GiB"},
		{RuleCounts(map[string]int{"b": 1, "a": 1, "c": 5}), "c:5 a:1 b:1"},
		{RuleCounts(nil), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	g := &inspect.Group{}
	g.ReceiveCount.Min, g.ReceiveCount.Max = 3, 3
	if got := RecvCell(g); got != "3" {
		t.Errorf("RecvCell(3..3) = %q", got)
	}
	g.ReceiveCount.Max = 7
	if got := RecvCell(g); got != "3-7" {
		t.Errorf("RecvCell(3..7) = %q", got)
	}
}

func TestRecordCells(t *testing.T) {
	var none record.Record
	if EventCell(&none) != "" || ErrorCell(&none) != "" {
		t.Fatalf("a record without envelope or failure has cells %q %q", EventCell(&none), ErrorCell(&none))
	}
	r := record.Record{
		Envelope: &record.Envelope{EventType: "OrderCreated", EventVersion: 3},
		Failure:  &record.Failure{Type: "DatabaseTimeout", Reason: "timeout after 3000ms"},
	}
	if got := EventCell(&r); got != "OrderCreated v3" {
		t.Errorf("EventCell = %q", got)
	}
	if got := ErrorCell(&r); got != "DatabaseTimeout: timeout after 3000ms" {
		t.Errorf("ErrorCell = %q", got)
	}
	r.Failure = &record.Failure{Reason: "only a reason"}
	if got := ErrorCell(&r); got != "only a reason" {
		t.Errorf("ErrorCell without a type = %q", got)
	}
	r.Failure = &record.Failure{Source: &record.FailureSource{Note: "no log line mentions this message"}}
	if got := ErrorCell(&r); got != "(logs: no log line mentions this message)" {
		t.Errorf("ErrorCell of a logs search that found nothing = %q", got)
	}
}

// TestClassTally: each summary row counts the rules that decided its
// messages and carries the note of the one that decided most.
func TestClassTally(t *testing.T) {
	rules := &classify.Rules{
		Rules: []*classify.Rule{
			{Name: "timeouts", Class: "transient", Action: "redrive", Note: "the dependency timed out"},
			{Name: "throttled", Class: "transient", Action: "redrive", Note: "rate limited"},
		},
		Default: classify.Outcome{Class: "unknown", Action: "investigate", Rule: classify.DefaultRuleName, Note: "no rule matched"},
	}
	tally := NewClassTally()
	for _, rule := range []string{"timeouts", "throttled", "throttled", classify.DefaultRuleName} {
		cls, act := "transient", "redrive"
		if rule == classify.DefaultRuleName {
			cls, act = "unknown", "investigate"
		}
		tally.Add(&record.Record{Class: cls, Action: act, Rule: rule})
	}
	groups := []*inspect.Group{
		{Values: []string{"transient", "redrive"}, Count: 3},
		{Values: []string{"unknown", "investigate"}, Count: 1},
	}
	rows := tally.Classes(groups, rules)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if rows[0].Class != "transient" || RuleCounts(rows[0].Rules) != "throttled:2 timeouts:1" || rows[0].Note != "rate limited" {
		t.Errorf("transient row = %s %q %q", rows[0].Class, RuleCounts(rows[0].Rules), rows[0].Note)
	}
	if rows[1].Class != "unknown" || rows[1].Note != "no rule matched" {
		t.Errorf("unknown row = %s %q", rows[1].Class, rows[1].Note)
	}
	if got := NewClassTally().Classes(nil, rules); got == nil || len(got) != 0 {
		t.Errorf("no groups: %v, want an empty (not nil) list for JSON []", got)
	}
}
