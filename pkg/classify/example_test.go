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
		// The format-specific rule: an EventBridge API destination answering 401 ...
		{`{"version":"0","id":"1","detail-type":"OrderPlaced","source":"orders","detail":{}}`,
			map[string]string{"RULE_ARN": "arn:aws:events:eu-west-1:1:rule/r", "TARGET_ARN": "arn:aws:events:eu-west-1:1:api-destination/d", "ERROR_CODE": "ERROR_FROM_TARGET", "ERROR_MESSAGE": "Request failed with status code 401"},
			"eventbridge-auth-rotated", ClassTransient},
		// ... while the built-in rules call the same 401 permanent (a 4xx).
		{`{"version":"0","id":"1","detail-type":"OrderPlaced","source":"orders","detail":{}}`,
			map[string]string{"RULE_ARN": "arn:aws:events:eu-west-1:1:rule/r", "TARGET_ARN": "arn:aws:events:eu-west-1:1:api-destination/d", "ERROR_CODE": "ERROR_FROM_TARGET", "ERROR_MESSAGE": "Request failed with status code 403"},
			RulePermanentFailure, ClassPermanent},
	}
	for _, c := range cases {
		rec, parsed := decodedRecord(c.body, c.attrs)
		if o := rs.Classify(rec, parsed); o.Rule != c.rule || o.Class != c.class {
			t.Errorf("%s: %s by %s, want %s by %s", c.body, o.Class, o.Rule, c.class, c.rule)
		}
	}
}
