package redrive

import (
	"fmt"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

func filterSelector(t *testing.T, src string) *classify.Selector {
	t.Helper()
	f, err := inspect.CompileFilter(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := classify.NewSelector(nil, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The plan (and the mover: both decide through decide) skips a message the
// filter fails on as "filter error", and stops on the selection's refusal
// before routing anything.
func TestPlanSkipsFilterErrorsAndStopsOnTheRefusal(t *testing.T) {
	p := &Planner{RunID: "dry-run", Select: filterSelector(t, ".body | tonumber > 100")}
	for i, body := range []string{"5", "text", "7", "more text"} {
		r := rec(fmt.Sprint(i), body, nil)
		ev, err := p.Add(t.Context(), r, inspect.Decode(r))
		if err != nil || ev.Action != "skipped" {
			t.Fatalf("%q: %+v, %v", body, ev, err)
		}
	}
	pl := p.Plan(0, nil, 0)
	if pl.Skipped[SkipFiltered] != 2 || pl.Skipped[SkipFilterError] != 2 || pl.WouldMove != 0 {
		t.Fatalf("skipped %v, would move %d; want 2 not selected and 2 filter errors", pl.Skipped, pl.WouldMove)
	}
	if fe := p.Select.Errors(); fe == nil || fe.Count != 2 || fe.FirstID != "1" {
		t.Fatalf("Errors() = %+v", fe)
	}

	all := &Planner{RunID: "dry-run", Select: filterSelector(t, ".body | tonumber")}
	var refusal error
	for i := 0; i < classify.RefuseAfter && refusal == nil; i++ {
		r := rec(fmt.Sprint(i), "text", nil)
		_, refusal = all.Add(t.Context(), r, inspect.Decode(r))
	}
	if errs.Code(refusal) != errs.ExitUsage || all.plan.Skipped[SkipFilterError] != classify.RefuseAfter-1 {
		t.Fatalf("refusal %v (exit %d) after %v; want exit 2 on message %d", refusal, errs.Code(refusal), all.plan.Skipped, classify.RefuseAfter)
	}
}
