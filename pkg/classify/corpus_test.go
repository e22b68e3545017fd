package classify

import (
	"testing"

	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// TestCorpusBuiltinRules classifies every corpus message (testdata/triage:
// Lambda, EventBridge, SNS, CloudEvents, MassTransit, NServiceBus, Spring
// Kafka, Kafka Connect, enriched, generic and plain messages, written by
// Go, Java, .NET, Python, Node and AWS services) with the built-in rules
// and requires the expected class for each. `go test -v -run Corpus`
// prints the per-format accuracy.
func TestCorpusBuiltinRules(t *testing.T) {
	msgs, err := corpus.Load(corpus.Dir("../.."))
	if err != nil {
		t.Fatal(err)
	}
	rs := Builtin()
	tally := corpus.NewTally()
	for _, m := range msgs {
		rec, err := m.Record()
		if err != nil {
			t.Fatal(err)
		}
		o := rs.Classify(&rec, inspect.Decode(&rec))
		tally.Add(m, o.Class, o.Rule)
	}
	t.Logf("built-in rules, per format:\n%s", tally.Report())
	for _, w := range tally.Wrong {
		t.Error(w)
	}
}
