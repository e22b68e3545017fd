package transform_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// kafkaRec is a dead letter as a Kafka read gives it: ordered headers
// with a repeat, a binary value, an empty one, dead-letter context, an
// earlier replay's marker; attributes the last value of each.
func kafkaRec(t *testing.T) (*record.Record, any) {
	t.Helper()
	hs := []record.Header{
		{Key: "tenant", Value: "acme"},
		{Key: "trace", Value: "t-1"},
		{Key: "tenant", Value: "beta"},
		{Key: "sig", Base64: "AP8="},
		{Key: "empty"},
		{Key: "kafka_dlt-exception-message", Value: "amount is not a number"},
		{Key: record.MarkerAttribute, Value: `{"run":"r0","orig":"orders.DLT-0@1","n":1,"at":"2026-12-01T00:00:00Z"}`},
	}
	r := &record.Record{MessageID: "orders.DLT-0@7", Broker: record.BrokerKafka, Body: `{"amount":"12.50","order":"o-1"}`,
		System: record.System{Kafka: &record.KafkaSystem{Topic: "orders.DLT", Partition: 0, Offset: 7, Key: "cust-7", Headers: hs}}}
	r.BodySHA256 = record.SHA256Hex(r.Body)
	r.Attributes = map[string]record.Attribute{}
	for _, h := range hs {
		if h.Base64 != "" {
			r.Attributes[h.Key] = record.Attribute{Type: "Binary", Base64: h.Base64}
		} else {
			r.Attributes[h.Key] = record.Attribute{Type: "String", Value: h.Value}
		}
	}
	r.OrderingKey = "cust-7"
	return r, inspect.Decode(r)
}

func keys(hs []record.Header) string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Key+"="+h.Value+h.Base64)
	}
	return strings.Join(out, " ")
}

// checkMarkers: the copy ends with the original's redrive marker and the
// provenance marker (orig: the first DLT record, from the redrive marker).
func checkMarkers(t *testing.T, hs []record.Header, runID, sha, orig string) []record.Header {
	t.Helper()
	n := len(hs)
	if n < 2 || hs[n-2].Key != record.MarkerAttribute || !strings.Contains(hs[n-2].Value, `"run":"r0"`) || hs[n-1].Key != transform.Attribute {
		t.Fatalf("the copy's headers do not end with the original's redrive marker and the provenance marker: %s", keys(hs))
	}
	var mk transform.Marker
	if err := json.Unmarshal([]byte(hs[n-1].Value), &mk); err != nil || mk != (transform.Marker{RunID: runID, ExprSHA256: sha, OriginalID: orig}) {
		t.Fatalf("provenance %q", hs[n-1].Value)
	}
	return hs[:n-2]
}

func TestKafkaBodyRepairKeepsHeadersAndKey(t *testing.T) {
	r, parsed := kafkaRec(t)
	xf := compile(t, ".json.amount |= tonumber", transform.Limits{})
	res, err := xf.Apply(r, parsed, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	k := res.Record.System.Kafka
	if !res.Changed || res.Record.Body != `{"amount":12.5,"order":"o-1"}` || k.Key != "cust-7" || res.Record.OrderingKey != "cust-7" || !k.Rewritten {
		t.Fatalf("copy %+v kafka %+v", res.Record, k)
	}
	rest := checkMarkers(t, k.Headers, "run-1", xf.SHA256(), "orders.DLT-0@1")
	if got, want := keys(rest), "tenant=acme trace=t-1 tenant=beta sig=AP8= empty= kafka_dlt-exception-message=amount is not a number"; got != want {
		t.Fatalf("headers %q\nwant %q (order, repeats, values kept; the broker drops the dead-letter ones)", got, want)
	}
	if r.System.Kafka == k || len(r.System.Kafka.Headers) != 7 || r.System.Kafka.Rewritten {
		t.Fatal("the original's Kafka part was changed")
	}
	if d := transform.Diff(r, parsed, res.Record); len(d) != 1 || d[0].Path != ".json.amount" {
		t.Fatalf("diff %+v", d)
	}
	if res.Record.Attributes["tenant"].Value != "beta" || res.Record.Attributes[transform.Attribute].Value == "" {
		t.Fatalf("attributes %+v", res.Record.Attributes)
	}
}

func TestKafkaAttributesEditTheOrderedList(t *testing.T) {
	r, parsed := kafkaRec(t)
	xf := compile(t, `.attributes.tenant.value = "gamma" | del(.attributes.trace) | .attributes.region = {"type": "String", "value": "eu"} | .attributes.bin = {"type": "Binary", "base64": "AQI="}`, transform.Limits{})
	res, err := xf.Apply(r, parsed, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	rest := checkMarkers(t, res.Record.System.Kafka.Headers, "run-2", xf.SHA256(), "orders.DLT-0@1")
	// tenant's last repeat changed in place, its earlier one kept; trace
	// gone; the new ones appended in name order.
	if got, want := keys(rest), "tenant=acme tenant=gamma sig=AP8= empty= kafka_dlt-exception-message=amount is not a number bin=\x01\x02 region=eu"; got != want {
		t.Fatalf("headers %q\nwant %q", got, want)
	}
	if a := res.Record.Attributes["bin"]; a.Type != "Binary" || a.Base64 != "AQI=" {
		t.Fatalf("a control-character value reads back as Binary: %+v", a)
	}
	d := transform.Diff(r, parsed, res.Record)
	var paths []string
	for _, c := range d {
		paths = append(paths, c.Path)
	}
	if got := strings.Join(paths, " "); got != ".attributes.bin .attributes.region .attributes.tenant .attributes.trace" {
		t.Fatalf("diff paths %q (the attributes tell the change: no header list)", got)
	}
}

func TestKafkaHeaderListAndKey(t *testing.T) {
	r, parsed := kafkaRec(t)
	// An earlier repeat dropped: only the list can say it.
	xf := compile(t, `.system.kafka.headers |= map(select(.key != "tenant" or .value != "acme")) | .system.kafka.key = "cust-8"`, transform.Limits{})
	res, err := xf.Apply(r, parsed, "run-3")
	if err != nil {
		t.Fatal(err)
	}
	k := res.Record.System.Kafka
	rest := checkMarkers(t, k.Headers, "run-3", xf.SHA256(), "orders.DLT-0@1")
	if got := keys(rest); got != "trace=t-1 tenant=beta sig=AP8= empty= kafka_dlt-exception-message=amount is not a number" {
		t.Fatalf("headers %q", got)
	}
	if k.Key != "cust-8" || res.Record.OrderingKey != "cust-8" || !res.Changed {
		t.Fatalf("key %q ordering key %q changed %v", k.Key, res.Record.OrderingKey, res.Changed)
	}
	d := transform.Diff(r, parsed, res.Record)
	if len(d) != 2 || d[0].Path != ".system.kafka.key" || string(d[0].Before) != `"cust-7"` || string(d[0].After) != `"cust-8"` ||
		d[1].Path != ".system.kafka.headers" || !strings.Contains(string(d[1].Before), `"acme"`) || strings.Contains(string(d[1].After), `"acme"`) {
		t.Fatalf("diff %+v", d)
	}

	// A binary key, a null key; markers the expression drops come back.
	for _, tc := range []struct{ expr, key, b64 string }{
		{`.system.kafka.key_base64 = "AP8="`, "", "AP8="},
		{`.system.kafka.key = null`, "", ""},
		{`.system.kafka.headers = []`, "cust-7", ""},
	} {
		xf := compile(t, tc.expr, transform.Limits{})
		res, err := xf.Apply(r, parsed, "run-4")
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		k := res.Record.System.Kafka
		if k.Key != tc.key || k.KeyBase64 != tc.b64 {
			t.Errorf("%s: key %q base64 %q", tc.expr, k.Key, k.KeyBase64)
		}
		rest := checkMarkers(t, k.Headers, "run-4", xf.SHA256(), "orders.DLT-0@1")
		if tc.expr == `.system.kafka.headers = []` && len(rest) != 0 {
			t.Errorf("%s: headers %q", tc.expr, keys(rest))
		}
	}
}

func TestKafkaIdentityIsUnchanged(t *testing.T) {
	r, parsed := kafkaRec(t)
	xf := compile(t, ".", transform.Limits{})
	res, err := xf.Apply(r, parsed, "run")
	if err != nil || res.Changed || xf.Summary().Unchanged != 1 {
		t.Fatalf("identity: %v changed %v %+v", err, res.Changed, xf.Summary())
	}
	if d := transform.Diff(r, parsed, res.Record); len(d) != 0 {
		t.Fatalf("identity diff %+v", d)
	}
}

func TestKafkaBadHeadersAndKeyFail(t *testing.T) {
	for _, tc := range []struct{ expr, reason, want string }{
		{`.attributes.x = {"value": "1"} | .system.kafka.headers += [{"key": "y", "value": "2"}]`, transform.ReasonBothHeaders, "change one of them"},
		{`.system.kafka.headers = "x"`, transform.ReasonHeaders, "must be an array"},
		{`.system.kafka.headers = [{"key": "a", "value": 1}]`, transform.ReasonHeaders, "use tostring"},
		{`.system.kafka.headers = [{"key": "a", "base64": "!!"}]`, transform.ReasonHeaders, "base64"},
		{`.system.kafka.headers = [{"value": "v"}]`, transform.ReasonHeaders, "key must be a string"},
		{`.system.kafka.key = 7`, transform.ReasonKey, "string or null"},
		{`.system.kafka.key_base64 = "%%"`, transform.ReasonKey, "not base64"},
		{`.system.kafka = 1`, transform.ReasonHeaders, "must be an object"},
	} {
		r, parsed := kafkaRec(t)
		xf := compile(t, tc.expr, transform.Limits{})
		_, err := xf.Apply(r, parsed, "run")
		var te *transform.Error
		if !errors.As(err, &te) || te.Reason != tc.reason || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %s naming %q", tc.expr, err, tc.reason, tc.want)
		}
	}
}
