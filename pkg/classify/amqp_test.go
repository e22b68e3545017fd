package classify

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func amqpRecord(body string, attrs map[string]string, reasons ...string) (*record.Record, any) {
	rec := &record.Record{MessageID: "m-1", Broker: record.BrokerAMQP, Body: body, Attributes: map[string]record.Attribute{}}
	for k, v := range attrs {
		rec.Attributes[k] = record.Attribute{Type: "String", Value: v}
	}
	a := &record.AMQPSystem{}
	for _, r := range reasons {
		a.Deaths = append(a.Deaths, record.AMQPDeath{Count: 1, Reason: r, Queue: "orders", Exchange: "orders"})
	}
	if len(reasons) > 0 {
		a.FirstDeath = &record.AMQPDeathRef{Queue: "orders", Reason: reasons[len(reasons)-1], Exchange: "orders"}
	}
	rec.System.AMQP = a
	return rec, inspect.Decode(rec)
}

func TestBrokerCapacityRule(t *testing.T) {
	body := `{"eventId":"e-1","eventType":"OrderCreated","eventVersion":2}`
	cases := []struct {
		name        string
		body        string
		attrs       map[string]string
		reasons     []string
		class, rule string
	}{
		{"expired", body, nil, []string{"expired"}, ClassTransient, RuleBrokerCapacity},
		{"maxlen", body, nil, []string{"maxlen"}, ClassTransient, RuleBrokerCapacity},
		// The newest death decides: rejected after an earlier expiry needs evidence.
		{"rejected after expired", body, nil, []string{"rejected", "expired"}, ClassUnknown, "default"},
		{"rejected without evidence", body, nil, []string{"rejected"}, ClassUnknown, "default"},
		{"delivery limit without evidence", body, nil, []string{"delivery_limit"}, ClassUnknown, "default"},
		// Capacity decisions are not the body's fault either.
		{"expired plain text", "not json", nil, []string{"expired"}, ClassTransient, RuleBrokerCapacity},
		{"rejected with evidence", body, map[string]string{"x-exception-message": "com.fasterxml.jackson.core.JsonParseException: Unexpected character"}, []string{"rejected"}, ClassPermanent, RulePermanentFailure},
	}
	for _, c := range cases {
		rec, parsed := amqpRecord(c.body, c.attrs, c.reasons...)
		o := Builtin().Classify(rec, parsed)
		if o.Class != c.class || o.Rule != c.rule {
			t.Errorf("%s: class %q rule %q, want %q %q", c.name, o.Class, o.Rule, c.class, c.rule)
		}
	}
}

// stepWhy is the reason the named rule gave in an explanation.
func stepWhy(ex *Explanation, rule string) string {
	for _, st := range ex.Steps {
		if st.Rule == rule {
			return st.Why
		}
	}
	return ""
}
