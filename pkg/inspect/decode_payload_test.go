package inspect

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func zl(s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestDetectPayload: what a body is, as payload_encoding says it.
func TestDetectPayload(t *testing.T) {
	long := strings.Repeat(`{"orderId":"o-1","items":[1,2,3]}`, 1)
	cases := []struct {
		name, body string
		attrs      map[string]record.Attribute
		want       string
	}{
		{"json object", `{"a":1}`, nil, "json"},
		{"json array", ` [ {"a":1} ] `, nil, "json"},
		{"cut short", `{"eventType":"OrderPlaced","payload":{"orderId":"o-1"`, nil, "malformed-json"},
		{"trailing comma", `{"a":1,}`, nil, "malformed-json"},
		{"array of numbers cut", `[1, 2, `, nil, "malformed-json"},
		{"log line in brackets", `[2026-03-01 10:00:00] ERROR order o-1 failed`, nil, "text"},
		{"xml", `<?xml version="1.0"?><Order id="o-1"><Total>5</Total></Order>`, nil, "xml"},
		{"xml cut", `<Order id="o-1"><Total>5</Total>`, nil, "malformed-xml"},
		{"pipe csv", `ORDER|o-1042|59.85|EUR`, nil, "csv"},
		{"csv lines", "id,sku,qty\no-1,SKU-1,2\no-2,SKU-9,1\n", nil, "csv"},
		{"prose", `Order o-1 failed, please retry later`, nil, "text"},
		{"empty", "  ", nil, "empty"},
		{"base64 json", b64([]byte(long)), nil, "base64/json"},
		{"base64 mime lines", "eyJvcmRlcklkIjoiby0xIiwi\naXRlbXMiOlsxLDIsM119", nil, "base64/json"},
		{"base64 gzip json", b64(gz(long)), nil, "base64/gzip/json"},
		{"base64 zlib json", b64(zl(long)), nil, "base64/zlib/json"},
		{"raw gzip", string(gz(long)), nil, "gzip/json"},
		{"base64 text", b64([]byte("hello there, this is text")), nil, "base64/text"},
		{"base64 xml", b64([]byte(`<a><b/></a>`)), nil, "base64/xml"},
		{"base64 protobuf", b64([]byte{0x0a, 0x05, 'o', '-', '1', '0', '4', 0x10, 0x96, 0x01, 0x1a, 0x03, 'E', 'U', 'R'}), nil, "base64/protobuf"},
		{"base64 avro", b64(append([]byte("Obj\x01\x04\x16avro.schema"), 0xff, 0x00, 0x01)), nil, "base64/avro"},
		{"declared protobuf", b64([]byte{0xff, 0xfe, 0x00, 0x9c, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}),
			map[string]record.Attribute{"contentType": {Type: "String", Value: "application/x-protobuf"}}, "base64/protobuf"},
		{"hex id", "9f86d081884c7d659a2feaa0c55ad015", nil, "text"},
		{"identifier", "OrderCreatedHandlerFailed", nil, "text"},
		{"not utf8", "\xff\xfe\x00\x01garbage\x80", nil, "binary"},
	}
	for _, c := range cases {
		rec := record.Record{Body: c.body, Attributes: c.attrs}
		Decode(&rec)
		if rec.PayloadEncoding != c.want {
			p := DescribePayload(&rec)
			t.Errorf("%s: payload_encoding %q, want %q (%s)", c.name, rec.PayloadEncoding, c.want, p.Description)
		}
	}
}

// TestLayeredJSONIsThePayload: a base64 body that decodes to JSON is read
// like a JSON body: envelope, failure keys and .payload come from what it
// decodes to.
func TestLayeredJSONIsThePayload(t *testing.T) {
	inner := `{"eventType":"OrderPlaced","eventVersion":2,"error":"connect ECONNREFUSED 10.0.0.7:5432"}`
	rec := record.Record{Body: b64(gz(inner))}
	parsed := Decode(&rec)
	if parsed != nil {
		t.Fatalf("Decode returned %v for a non-JSON body; callers expect nil (.json is the body's own JSON)", parsed)
	}
	if rec.Envelope == nil || rec.Envelope.EventType != "OrderPlaced" {
		t.Errorf("envelope %+v, want event type OrderPlaced from the decoded JSON", rec.Envelope)
	}
	if m, ok := rec.Payload.(map[string]any); !ok || m["eventType"] != "OrderPlaced" {
		t.Errorf("payload %v, want the decoded JSON", rec.Payload)
	}
	if !rec.Failure.HasContext() || !strings.Contains(rec.Failure.Reason, "ECONNREFUSED") {
		t.Errorf("failure %+v, want the decoded body's error key", rec.Failure)
	}
}
