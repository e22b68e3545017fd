package inspect

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func rec(body string, attrs map[string]record.Attribute) *record.Record {
	if attrs == nil {
		attrs = map[string]record.Attribute{}
	}
	return &record.Record{MessageID: "m1", Body: body, Attributes: attrs}
}

func TestDecodeEnvelope(t *testing.T) {
	r := rec(`{"eventId":"e-1","eventType":"OrderCreated","eventVersion":3,"producer":"orders-api","correlationId":"c-1","tenantId":"t-9","idempotencyKey":"k-1","schemaRef":"orders/OrderCreated/v3","occurredAt":"2026-11-29T10:00:00Z","payload":{"amount":10}}`, nil)
	parsed := Decode(r)
	if parsed == nil {
		t.Fatal("parsed body is nil for JSON")
	}
	e := r.Envelope
	if e == nil || e.EventType != "OrderCreated" || e.EventVersion != int64(3) || e.TenantID != "t-9" || e.SchemaRef != "orders/OrderCreated/v3" || e.Producer != "orders-api" {
		t.Fatalf("envelope = %+v", e)
	}
	if r.Failure != nil {
		t.Fatalf("failure decoded from a plain envelope: %+v", r.Failure)
	}
}

func TestDecodeEnrichedWrapper(t *testing.T) {
	r := rec(`{"original_payload":{"eventId":"e-2","eventType":"OrderPaid","eventVersion":2},"failure_reason":"timeout after 831ms calling inventory-db","failure_type":"DatabaseTimeout","error_class":"transient","attempt_count":3,"consumer_version":"orders-worker@1.4.2"}`, nil)
	Decode(r)
	if r.Envelope == nil || r.Envelope.EventType != "OrderPaid" {
		t.Fatalf("envelope from original_payload = %+v", r.Envelope)
	}
	f := r.Failure
	if f == nil || f.Type != "DatabaseTimeout" || f.AttemptCount != 3 || f.ConsumerVersion != "orders-worker@1.4.2" || !strings.Contains(f.Reason, "831ms") || f.ErrorClass != "transient" {
		t.Fatalf("failure = %+v", f)
	}
}

func TestDecodeFailureFromAttributes(t *testing.T) {
	r := rec("plain text body", map[string]record.Attribute{
		"dlq_reason": {Type: "String", Value: "HTTP 503 from payments"},
		"error_type": {Type: "String", Value: "UpstreamUnavailable"},
	})
	if parsed := Decode(r); parsed != nil {
		t.Fatalf("plain text parsed as %v", parsed)
	}
	if r.Failure == nil || r.Failure.Reason != "HTTP 503 from payments" || r.Failure.Type != "UpstreamUnavailable" {
		t.Fatalf("failure = %+v", r.Failure)
	}
	if r.Envelope != nil {
		t.Fatal("envelope decoded from plain text")
	}
}

func TestDecodeMalformedJSON(t *testing.T) {
	r := rec(`{"eventType":"OrderCreated",`, nil)
	if Decode(r) != nil || r.Envelope != nil {
		t.Fatal("malformed JSON must not decode")
	}
}

func TestDecodeMarker(t *testing.T) {
	r := rec(`{}`, map[string]record.Attribute{record.MarkerAttribute: {Type: "String", Value: `{"run":"r1","orig":"m0","n":2,"at":"2026-11-30T00:00:00Z"}`}})
	Decode(r)
	if r.Redrive == nil || r.Redrive.Count != 2 || r.Redrive.RunID != "r1" {
		t.Fatalf("marker = %+v", r.Redrive)
	}
}

func TestFilterOverRecord(t *testing.T) {
	r := rec(`{"eventType":"OrderCreated","eventVersion":9,"payload":{"amount":null}}`, nil)
	r.System.ReceiveCount = 4
	parsed := Decode(r)
	cases := map[string]bool{
		`.envelope.event_type == "OrderCreated"`: true,
		`.envelope.event_version == 9`:           true,
		`.system.receive_count > 3`:              true,
		`.json.payload.amount == null`:           true,
		`.json == null`:                          false,
		`(.failure.reason // "") | test("x")`:    false,
	}
	for src, want := range cases {
		f, err := CompileFilter(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := f.Keep(r, parsed); got != want {
			t.Errorf("%s = %v, want %v", src, got, want)
		}
	}
	var nilFilter *Filter
	if !nilFilter.Keep(r, parsed) {
		t.Error("no filter must keep everything")
	}
}

func TestCompileFilterBadInput(t *testing.T) {
	_, err := CompileFilter(`.envelope.event_type ==`)
	if err == nil || !strings.Contains(err.Error(), "invalid expression") {
		t.Fatalf("err = %v", err)
	}
}

func TestRedactor(t *testing.T) {
	r := NewRedactor([]string{"payload.customer.email"})
	body := `{"user":"ann","password":"hunter2","payload":{"card_number":"4111111111111111","customer":{"email":"a@b.c","name":"Ann"},"items":[{"apiKey":"k"}]},"original_payload":"{\"token\":\"abc\"}"}`
	got := r.Body(body)
	for _, secret := range []string{"hunter2", "4111111111111111", "a@b.c", `"k"`, "abc"} {
		if strings.Contains(got, secret) {
			t.Errorf("%s not masked in %s", secret, got)
		}
	}
	if !strings.Contains(got, `"user":"ann"`) || !strings.Contains(got, `"name":"Ann"`) {
		t.Errorf("non-secret values changed: %s", got)
	}
	if strings.Index(got, `"user"`) > strings.Index(got, `"payload"`) {
		t.Errorf("key order not kept: %s", got)
	}
	if txt := r.Body("login failed password=hunter2 for ann"); strings.Contains(txt, "hunter2") {
		t.Errorf("plain text secret not masked: %s", txt)
	}
	rr := r.Record(record.Record{Body: "x", Attributes: map[string]record.Attribute{"Authorization": {Type: "String", Value: "Bearer z"}, "eventType": {Type: "String", Value: "A"}}})
	if rr.Attributes["Authorization"].Value != Mask || rr.Attributes["eventType"].Value != "A" {
		t.Errorf("attributes = %+v", rr.Attributes)
	}
}

func TestReadRecordsNDJSONAndArray(t *testing.T) {
	nd := `{"message_id":"a","body":"{\"eventType\":\"X\",\"eventId\":\"1\"}"}` + "\n\n" + `{"message_id":"b","body":"text"}` + "\n"
	var ids []string
	if err := ReadRecords(strings.NewReader(nd), "t.ndjson", func(r *record.Record, _ any) error { ids = append(ids, r.MessageID); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "a,b" {
		t.Fatalf("ids = %v", ids)
	}
	ids = nil
	if err := ReadRecords(strings.NewReader(` [{"message_id":"c","body":"x"}]`), "t.json", func(r *record.Record, _ any) error { ids = append(ids, r.MessageID); return nil }); err != nil || len(ids) != 1 {
		t.Fatalf("array: ids=%v err=%v", ids, err)
	}
	err := ReadRecords(strings.NewReader("{\"message_id\":\"a\",\"body\":\"x\"}\nnot json\n"), "bad.ndjson", func(*record.Record, any) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "bad.ndjson:2") {
		t.Fatalf("err = %v", err)
	}
}
