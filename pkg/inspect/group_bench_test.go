package inspect_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// benchNDJSON returns n message records as NDJSON, mixed like a real DLQ:
// enriched wrappers with varying failures, bare envelopes, attribute
// failures, malformed JSON and plain text.
func benchNDJSON(b *testing.B, n int) []byte {
	b.Helper()
	reasons := []struct{ typ, reason string }{
		{"DatabaseTimeout", "timeout after %dms calling inventory-db for order o-%d"},
		{"Throttling", "429 Too Many Requests from psp-adyen (retry after %ds) for payment p-%d"},
		{"HttpError", "POST https://fraud-check.internal/v2/score returned 503 Service Unavailable (request id r-%d-%d)"},
		{"BusinessRuleViolation", "insufficient funds for payment p-%d (card ending %d)"},
		{"ValidationError", "validation failed: missing required field payload.customerId (%d/%d)"},
	}
	sent := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	for i := range n {
		rec := record.Record{
			MessageID:  fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Queue:      "arn:aws:sqs:eu-west-1:123456789012:orders-dlq",
			Attributes: map[string]record.Attribute{"eventType": {Type: "String", Value: "OrderCreated"}},
		}
		rec.System.ReceiveCount = 1 + i%5
		rec.System.SentAt = sent.Add(-time.Duration(i) * time.Second)
		rec.System.SourceQueueARN = []string{"arn:aws:sqs:eu-west-1:123456789012:orders", "arn:aws:sqs:eu-west-1:123456789012:payments"}[i%2]
		rec.ExpiresAt = rec.System.SentAt.Add(14 * 24 * time.Hour)
		env := fmt.Sprintf(`{"eventId":"e-%d","eventType":"OrderCreated","eventVersion":%d,"producer":"orders-api@2.3.1","tenantId":"t-%d","payload":{"orderId":"o-%d","total":19.95,"items":[{"sku":"SKU-4411","qty":1}]}}`,
			i, 1+i%2+7*(i%97/96), i%3, i)
		switch k := i % 10; {
		case k < 6:
			r := reasons[i%len(reasons)]
			rec.Body = fmt.Sprintf(`{"original_payload":%s,"failure_reason":%q,"failure_type":%q,"error_class":"transient","attempt_count":3,"consumer_version":"orders-worker@1.4.2"}`,
				env, fmt.Sprintf(r.reason, 800+i%4000, i), r.typ)
		case k < 8:
			rec.Body = env
		case k == 8:
			rec.Body = env
			rec.Attributes["dlq_reason"] = record.Attribute{Type: "String", Value: fmt.Sprintf("connection reset by peer (attempt %d)", i%7)}
		default:
			if i%20 == 9 {
				rec.Body = fmt.Sprintf(`{"eventId":"e-%d","eventType":"OrderCreated","payload":{"orderId":"o-%d",`, i, i)
			} else {
				rec.Body = fmt.Sprintf("legacy-batch: could not map row %d to an order", i)
			}
		}
		rec.BodySHA256 = record.SHA256Hex(rec.Body)
		rec.SizeBytes = sqs.MessageSize(rec.Body, rec.Attributes)
		line, err := inspect.MarshalRecord(rec)
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

const benchRecords = 100_000

// BenchmarkReadRecords is the baseline: reading and decoding 100k records.
func BenchmarkReadRecords(b *testing.B) {
	data := benchNDJSON(b, benchRecords)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := inspect.ReadRecords(bytes.NewReader(data), "bench", func(*record.Record, any) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != benchRecords {
			b.Fatalf("read %d", n)
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}

func benchGroup(b *testing.B, by string) {
	data := benchNDJSON(b, benchRecords)
	keys, err := inspect.ParseGroupKeys([]string{by})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		g := inspect.NewGrouper(keys, now)
		if err := inspect.ReadRecords(bytes.NewReader(data), "bench", func(rec *record.Record, parsed any) error {
			g.Add(rec, parsed)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if g.Total() != benchRecords || len(g.Groups()) < 2 {
			b.Fatalf("grouped %d into %d groups", g.Total(), len(g.Groups()))
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkGroupSourceError: group 100k records from NDJSON by source and
// error fingerprint.
func BenchmarkGroupSourceError(b *testing.B) { benchGroup(b, "source,error") }

// BenchmarkGroupShapeAge: group by JSON shape fingerprint and age bucket.
func BenchmarkGroupShapeAge(b *testing.B) { benchGroup(b, "shape,age") }

// BenchmarkGroupExpression: group by a jq expression (builds the jq input).
func BenchmarkGroupExpression(b *testing.B) { benchGroup(b, ".envelope.tenant_id") }

func benchClassify(b *testing.B, sel *classify.Selector) {
	data := benchNDJSON(b, benchRecords)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		counts := map[string]int{}
		if err := inspect.ReadRecords(bytes.NewReader(data), "bench", func(rec *record.Record, parsed any) error {
			ok, err := sel.Select(rec, parsed)
			if ok {
				counts[rec.Class]++
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
		if len(counts) < 4 {
			b.Fatalf("classes %v", counts)
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkClassifyBuiltin: classify 100k records from NDJSON with the
// built-in rules.
func BenchmarkClassifyBuiltin(b *testing.B) {
	sel, err := classify.NewSelector(classify.Builtin(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchClassify(b, sel)
}

// BenchmarkClassifyRulesFile: a rules file with jq rules before the
// built-ins, plus a --filter (every record needs the jq input).
func BenchmarkClassifyRulesFile(b *testing.B) {
	rules, err := classify.Parse([]byte(`rules:
  - name: tenant-zero-payments
    when: '.envelope.tenant_id == "t-0" and .system.source_queue == "payments"'
    class: tenant-zero
    action: investigate
  - name: slow-db
    when: '(.failure.reason // "") | test("inventory-db"; "i")'
    class: transient
    action: redrive
  - include: builtin
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	f, err := inspect.CompileFilter(`.system.receive_count < 5`)
	if err != nil {
		b.Fatal(err)
	}
	sel, err := classify.NewSelector(rules, nil, f)
	if err != nil {
		b.Fatal(err)
	}
	benchClassify(b, sel)
}
