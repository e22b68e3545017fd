package classify

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// decodedRecord builds a decoded record from a body and string attributes.
func decodedRecord(body string, attrs map[string]string) (*record.Record, any) {
	rec := &record.Record{MessageID: "m-1", Body: body, Attributes: map[string]record.Attribute{}}
	for k, v := range attrs {
		rec.Attributes[k] = record.Attribute{Type: "String", Value: v}
	}
	return rec, inspect.Decode(rec)
}

func TestBuiltinTaxonomy(t *testing.T) {
	marker := `{"run":"r-1","orig":"m-0","n":1,"at":"2026-01-02T03:04:05Z"}`
	cases := []struct {
		name        string
		body        string
		attrs       map[string]string
		class, rule string
		action      string
	}{
		{"malformed JSON", `{"eventId": "e1", "eventType": "OrderCreated",`, nil, ClassPermanent, RuleBodyNotJSON, ActionArchive},
		// Text that is not JSON is what some consumers read: no evidence
		// (it was permanent/archive before: the bug of issue 20).
		{"plain text is not evidence", `ERROR could not charge card for order 17`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
		{"xml is not evidence", `<Order id="o-1"><Total>5</Total></Order>`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
		{"csv is not evidence", `ORDER|o-1042|59.85|EUR`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
		{"json array cut short", `[{"orderId":"o-1"},{"orderId":`, nil, ClassPermanent, RuleBodyNotJSON, ActionArchive},
		{"unsupported version", `{"eventId":"e1","eventType":"OrderCreated","eventVersion":9,"payload":{}}`, nil, ClassSchemaMismatch, RuleSchemaMismatch, ActionRedriveToRecovery},
		{"explicit timeout evidence outranks the envelope version",
			`{"original_payload":{"eventId":"e1","eventType":"OrderCreated","eventVersion":9},"failure_reason":"timeout after 30s"}`, nil,
			ClassTransient, RuleTransient, ActionRedrive},
		{"unsupported version without failure evidence",
			`{"original_payload":{"eventId":"e1","eventType":"OrderCreated","eventVersion":9}}`, nil,
			ClassSchemaMismatch, RuleSchemaMismatch, ActionRedriveToRecovery},
		{"failure names unknown schema", `{"eventId":"e1","eventType":"A","eventVersion":2,"failure_reason":"unknown schemaRef orders/7"}`, nil, ClassSchemaMismatch, RuleSchemaMismatch, ActionRedriveToRecovery},
		{"enriched db timeout",
			`{"original_payload":{"eventId":"e1","eventType":"OrderCreated","eventVersion":2},"failure_reason":"database timeout after 831ms for order o-17","failure_type":"DatabaseTimeout","attempt_count":5}`, nil,
			ClassTransient, RuleTransient, ActionRedrive},
		{"error class from the consumer", `{"eventId":"e1","eventType":"A","eventVersion":1,"errorClass":"TransientDatabaseTimeout"}`, nil, ClassTransient, RuleTransient, ActionRedrive},
		{"throttling in attributes", `{"eventId":"e1","eventType":"A","eventVersion":1}`, map[string]string{"dlq_reason": "ThrottlingException: Rate exceeded", "error_type": "Throttling"}, ClassTransient, RuleTransient, ActionRedrive},
		{"http 503", `{"eventId":"e1","eventType":"A","eventVersion":1,"error":{"message":"upstream returned HTTP 503","type":"UpstreamError"}}`, nil, ClassTransient, RuleTransient, ActionRedrive},
		{"connection reset", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_reason":"read tcp 10.0.0.1:5432: connection reset by peer"}`, nil, ClassTransient, RuleTransient, ActionRedrive},
		{"dependency unavailable", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_reason":"inventory-service unavailable"}`, nil, ClassTransient, RuleTransient, ActionRedrive},
		{"business rejection", `{"original_payload":{"eventId":"e1","eventType":"PaymentCaptured","eventVersion":1},"failure_type":"BusinessRuleViolation","failure_reason":"insufficient funds"}`, nil, ClassBusiness, RuleBusiness, ActionInvestigate},
		{"already cancelled", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_reason":"order o-1 already cancelled"}`, nil, ClassBusiness, RuleBusiness, ActionInvestigate},
		{"validation error stays permanent despite a timeout field", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_type":"ValidationError","failure_reason":"timeout_ms must be positive"}`, nil, ClassPermanent, RulePermanentFailure, ActionArchive},
		{"amount 500 is not a 5xx", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_reason":"amount 500 exceeds the card limit"}`, nil, ClassBusiness, RuleBusiness, ActionInvestigate},
		{"redrive loop", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_reason":"timeout"}`, map[string]string{record.MarkerAttribute: marker}, ClassRedriveLoop, RuleRedriveLoop, ActionInvestigate},
		{"seeded business rejection reported as error_class permanent",
			`{"original_payload":{"eventId":"e1","eventType":"OrderPaid","eventVersion":1},"failure_reason":"order o-1042 already cancelled","failure_type":"BusinessRuleViolation","error_class":"permanent"}`, nil,
			ClassBusiness, RuleBusiness, ActionInvestigate},
		{"camelCase type PayloadTooLarge whose reason says exceeds limit",
			`{"original_payload":{"eventId":"e1","eventType":"A","eventVersion":2},"failure_reason":"payload of 921334 bytes exceeds search-indexer limit of 262144 bytes","failure_type":"PayloadTooLarge","error_class":"permanent"}`, nil,
			ClassPermanent, RulePermanentFailure, ActionArchive},
		{"snake_case error class", `{"eventId":"e1","eventType":"A","eventVersion":1,"error_class":"upstream_TIMED_OUT"}`, nil, ClassTransient, RuleTransient, ActionRedrive},
		{"non-retryable is not transient", `{"eventId":"e1","eventType":"A","eventVersion":1,"failure_type":"NonRetryableError"}`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
		{"bare envelope", `{"eventId":"e1","eventType":"A","eventVersion":1,"payload":{"x":1}}`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
		{"json without envelope", `{"x":1}`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
		{"string version v2 is supported", `{"eventId":"e1","eventType":"A","eventVersion":"v2"}`, nil, ClassUnknown, DefaultRuleName, ActionInvestigate},
	}
	rs := Builtin()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, parsed := decodedRecord(c.body, c.attrs)
			o := rs.Classify(rec, parsed)
			if o.Class != c.class || o.Rule != c.rule || o.Action != c.action {
				t.Fatalf("got %s/%s by %s, want %s/%s by %s", o.Class, o.Action, o.Rule, c.class, c.action, c.rule)
			}
			if rec.Class != c.class || rec.Action != c.action || rec.Rule != c.rule {
				t.Errorf("record not updated: %q %q %q", rec.Class, rec.Action, rec.Rule)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"TransientDatabaseTimeout":   "transient database timeout",
		"transient_database-timeout": "transient database timeout",
		"ECONNRESET by peer":         "econnreset by peer",
		"HTTPError  503\tService":    "http error 503 service",
		"JSONDecodeError":            "json decode error",
		"EC2ThrottledException":      "ec2 throttled exception",
		"unsupported eventVersion 9": "unsupported event version 9",
	} {
		if got := canonical(in); got != want {
			t.Errorf("canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExplainTracesRulesUpToTheMatch(t *testing.T) {
	rec, parsed := decodedRecord(`{"original_payload":{"eventId":"e1","eventType":"OrderCreated","eventVersion":2},"failure_reason":"database timeout after 912ms for order o-99"}`, nil)
	ex := Builtin().Explain(rec, parsed)
	var got []string
	for _, s := range ex.Steps {
		got = append(got, s.Rule)
		if s.Why == "" {
			t.Errorf("step %s has no reason", s.Rule)
		}
	}
	if strings.Join(got, ",") != "redrive-loop,body-not-json,schema-mismatch,conflicting-signals,transient-failure" {
		t.Fatalf("steps = %v; evaluation must stop at the first match", got)
	}
	last := ex.Steps[len(ex.Steps)-1]
	if !last.Matched || !strings.Contains(last.Why, `body.failure_reason`) || !strings.Contains(last.Why, `"timeout after"`) {
		t.Errorf("matching step = %+v; want it to quote the field and the matched word", last)
	}
	if ex.Outcome.Class != ClassTransient || rec.Class != ClassTransient {
		t.Errorf("outcome %+v", ex.Outcome)
	}
}

func TestExplainReportsExpressionErrors(t *testing.T) {
	rs, err := Parse([]byte(`rules:
  - name: needs-number
    when: '.json.amount > (.json.limit | tonumber)'
    class: big
    action: investigate
  - include: builtin
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec, parsed := decodedRecord(`{"amount":5,"limit":"lots"}`, nil)
	ex := rs.Explain(rec, parsed)
	if ex.Steps[0].Matched || ex.Steps[0].Error == "" {
		t.Fatalf("step 0 = %+v; want a runtime error counted as no match", ex.Steps[0])
	}
	if ex.Outcome.Rule != DefaultRuleName {
		t.Errorf("outcome %+v", ex.Outcome)
	}
}
