package redrive

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// A dry run without a selection that classifies still says which classes
// would move (the built-in rules', and that they are): a replay of
// permanent failures shows before it happens. A selection's own classes
// are kept as they are.
func TestPlanShowsTheBuiltInClassesOfAnUnselectedRun(t *testing.T) {
	timeout := func(id string) *record.Record {
		return rec(id, `{"orderId":1}`, map[string]record.Attribute{"error": {Type: "String", Value: "java.net.SocketTimeoutException: Read timed out"}})
	}
	bad := func(id string) *record.Record {
		return rec(id, `{"orderId":1}`, map[string]record.Attribute{"error": {Type: "String", Value: "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}')"}})
	}
	p := &Planner{RunID: "dry-run", Router: digestRouter{}, Publisher: digestPublisher{}}
	for _, r := range []*record.Record{timeout("1"), timeout("2"), bad("3")} {
		ev, err := p.Add(t.Context(), r, inspect.Decode(r))
		if err != nil || ev.Action != "would-move" || ev.Class == "" {
			t.Fatalf("%s: %+v, %v", r.MessageID, ev, err)
		}
	}
	pl := p.Plan(0, nil, 0)
	if got := pl.ByDestination["orders"]; got[classify.ClassTransient] != 2 || got[classify.ClassPermanent] != 1 || len(got) != 2 || pl.ClassesFrom != ClassesFromBuiltin {
		t.Fatalf("plan by class %v from %q; want 2 transient and 1 permanent from the built-in rules", got, pl.ClassesFrom)
	}

	sel, err := classify.NewSelector(nil, []string{classify.ClassTransient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p = &Planner{RunID: "dry-run", Router: digestRouter{}, Publisher: digestPublisher{}, Select: sel}
	for _, r := range []*record.Record{timeout("1"), bad("2")} {
		if _, err := p.Add(t.Context(), r, inspect.Decode(r)); err != nil {
			t.Fatal(err)
		}
	}
	if pl := p.Plan(0, nil, 0); pl.ByDestination["orders"][classify.ClassTransient] != 1 || pl.WouldMove != 1 || pl.ClassesFrom != "" {
		t.Fatalf("plan with --class transient: %v from %q, would move %d", pl.ByDestination, pl.ClassesFrom, pl.WouldMove)
	}
}

// The plan counts what would move by the queue (topic) each message was
// dead-lettered from, where the message says; one that does not say is
// not counted.
func TestPlanCountsWhereMessagesWereDeadLetteredFrom(t *testing.T) {
	from := func(id, arn string) *record.Record {
		r := rec(id, `{"orderId":1}`, nil)
		r.System.SourceQueueARN = arn
		return r
	}
	p := &Planner{RunID: "dry-run", Router: digestRouter{}, Publisher: digestPublisher{}}
	for _, r := range []*record.Record{
		from("1", "arn:aws:sqs:eu-west-1:123456789012:orders"), from("2", "arn:aws:sqs:eu-west-1:123456789012:orders"),
		from("3", "arn:aws:sqs:eu-west-1:123456789012:payments"), from("4", ""),
	} {
		if _, err := p.Add(t.Context(), r, inspect.Decode(r)); err != nil {
			t.Fatal(err)
		}
	}
	if pl := p.Plan(0, nil, 0); pl.WouldMove != 4 || pl.Sources["orders"] != 2 || pl.Sources["payments"] != 1 || len(pl.Sources) != 2 {
		t.Fatalf("sources %v (would move %d); want orders 2, payments 1", pl.Sources, pl.WouldMove)
	}
}
