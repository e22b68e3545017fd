package record

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// BenchmarkRecordJSON measures writing one ~1 KiB record as archive parts
// and `-o ndjson` do (a json.Encoder without HTML escaping), through
// Record's MarshalJSON (fixed timestamp format, attributes always an
// object); form encodes Record.JSONForm directly, as archive parts do (no
// re-scan of a MarshalJSON result). The plain sub-benchmark writes the same
// fields with the encoding/json defaults, for comparison.
//
//	go test -run '^$' -bench RecordJSON ./pkg/record/
func BenchmarkRecordJSON(b *testing.B) {
	sent := time.Date(2026, 11, 30, 3, 15, 0, 123e6, time.UTC)
	rec := Record{
		MessageID: "5df41ec0-b0f9-42a8-894c-cce910c24a93", Queue: "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
		Body:       `{"eventId":"e-1","eventType":"OrderPaid","eventVersion":1,"tenantId":"t-acme","payload":{"note":"` + strings.Repeat("x", 700) + `"}}`,
		Attributes: map[string]Attribute{"eventType": {Type: "String", Value: "OrderPaid"}, "sig": {Type: "Binary", Base64: "AAEC"}},
		System:     System{ReceiveCount: 3, SentAt: sent, FirstReceivedAt: sent, SourceQueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"},
		AgeSeconds: 3600, ExpiresAt: sent.Add(14 * 24 * time.Hour),
		Envelope: &Envelope{EventID: "e-1", EventType: "OrderPaid", EventVersion: int64(1), TenantID: "t-acme"},
		Failure:  &Failure{Reason: "timeout after 831ms", Type: "DatabaseTimeout", Format: "generic", Evidence: []Evidence{{Field: "attributes.dlq_reason", Kind: "message", Text: "timeout after 831ms"}}},
		Class:    "transient", Action: "redrive", Rule: "transient-failure", ErrorFingerprint: "DatabaseTimeout: timeout after <n>ms",
	}
	enc := json.NewEncoder(io.Discard)
	enc.SetEscapeHTML(false)
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := enc.Encode(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("form", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := enc.Encode(rec.JSONForm()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		type plain Record
		p := plain(rec)
		b.ReportAllocs()
		for range b.N {
			if err := enc.Encode(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
