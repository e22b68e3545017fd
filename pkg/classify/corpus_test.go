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
// prints the accuracy per format, per payload encoding and per stack; no
// message may be dangerously wrong (permanent called transient, or
// transient called permanent).
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
		tally.AddEncoded(m, rec.PayloadEncoding, o.Class, o.Rule)
	}
	t.Logf("built-in rules, per format:\n%s", tally.Report())
	t.Logf("per payload encoding:\n%s", tally.ReportBy("encoding"))
	t.Logf("per stack:\n%s", tally.ReportBy("stack"))
	for _, w := range tally.Dangerous {
		t.Errorf("dangerous: %s", w)
	}
	for _, w := range tally.Wrong {
		t.Error(w)
	}
}
