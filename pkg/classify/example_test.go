package classify

import (
	"path/filepath"
	"testing"
)

// The annotated example in docs/ must stay a valid rules file that does
// what its comments say.
func TestDocsExampleRulesFile(t *testing.T) {
	rs, err := Load(filepath.Join("..", "..", "docs", "rules.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		body  string
		attrs map[string]string
		rule  string
		class string
	}{
		{"PING healthcheck from orders-canary run 20931", nil, "canary-pings", "noise"},
		{`{"eventId":"e","eventType":"PaymentCaptured","eventVersion":1,"failure_reason":"Card was declined by issuer"}`, nil, "card-declined", ClassBusiness},
		{`{"eventId":"e","eventType":"OrderCreated","eventVersion":1,"producer":"checkout-web@6.0.0-beta.3"}`, nil, "beta-producer", ClassSchemaMismatch},
		{`{"eventId":"e","eventType":"OrderCreated","eventVersion":3,"schemaRef":"urn:acme:schemas:orders/OrderCreated/v3"}`, nil, RuleSchemaMismatch, ClassSchemaMismatch},
		{`{"eventId":"e","eventType":"OrderCreated","eventVersion":2,"schemaRef":"urn:acme:schemas:orders/OrderCreated/v7"}`, nil, RuleSchemaMismatch, ClassSchemaMismatch},
		{`{"eventId":"e","eventType":"OrderCreated","eventVersion":2,"schemaRef":"urn:acme:schemas:orders/OrderCreated/v2","failure_reason":"timeout"}`, nil, RuleTransient, ClassTransient},
		{`{"eventId":"e","eventType":"OrderCreated","eventVersion":2,"schemaRef":"urn:acme:schemas:orders/OrderCreated/v2"}`, nil, DefaultRuleName, ClassUnknown},
	}
	for _, c := range cases {
		rec, parsed := record(c.body, c.attrs)
		if o := rs.Classify(rec, parsed); o.Rule != c.rule || o.Class != c.class {
			t.Errorf("%s: %s by %s, want %s by %s", c.body, o.Class, o.Rule, c.class, c.rule)
		}
	}
}
