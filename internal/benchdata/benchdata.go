// Package benchdata writes large offline record files for the triage
// benchmarks: NDJSON message records as `dlqctl sample -o ndjson` prints
// them (decoded envelope, failure and payload included), built from the
// real-format messages of the triage corpus (testdata/triage: Lambda async
// and destination records, EventBridge, SNS, CloudEvents, MassTransit,
// NServiceBus, Spring Kafka, Kafka Connect, enriched wrappers, generic
// failure keys, plain messages) and of the seeded incident (envelopes,
// enriched wrappers, attribute failures, malformed JSON, plain and unicode
// text, secrets). Every record gets its own message id, source queue,
// receive count and timestamps, so grouping and ages vary as in a real
// incident.
package benchdata

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Templates returns the message templates (body and attributes) records are
// built from: every corpus message of corpusDir and every seeded incident
// message except the ~900 KiB one (it would dominate the file).
func Templates(corpusDir string, now time.Time) ([]record.Record, error) {
	msgs, err := corpus.Load(corpusDir)
	if err != nil {
		return nil, err
	}
	var out []record.Record
	for _, m := range msgs {
		r, err := m.Record()
		if err != nil {
			return nil, err
		}
		// The corpus indents its JSON bodies to be read by people; the
		// services and SDKs that write them send compact JSON.
		var c bytes.Buffer
		if json.Compact(&c, []byte(r.Body)) == nil && c.Len() < len(r.Body) {
			r.Body = c.String()
			r.BodySHA256 = record.SHA256Hex(r.Body)
			r.SizeBytes = record.MessageSize(r.Body, r.Attributes)
		}
		out = append(out, r)
	}
	for _, s := range seed.Plan("bench", now) {
		if s.Kind == seed.KindLarge {
			continue
		}
		attrs := map[string]record.Attribute{}
		for k, v := range s.Attributes {
			a := record.Attribute{Type: deref(v.DataType), Value: deref(v.StringValue)}
			if v.BinaryValue != nil {
				a.Base64 = base64.StdEncoding.EncodeToString(v.BinaryValue)
			}
			attrs[k] = a
		}
		out = append(out, record.Record{Body: s.Body, BodySHA256: record.SHA256Hex(s.Body),
			SizeBytes: record.MessageSize(s.Body, attrs), Attributes: attrs})
	}
	return out, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

var sources = []string{"orders", "payments", "billing", "shipping", "search-indexer"}

// Write writes n records built from templates (in turn) to w as NDJSON,
// as read from a DLQ at now.
func Write(w io.Writer, templates []record.Record, n int, now time.Time) error {
	if len(templates) == 0 {
		return fmt.Errorf("benchdata: no templates")
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	for i := range n {
		rec := templates[i%len(templates)]
		rec.Attributes = cloneAttrs(rec.Attributes)
		rec.MessageID = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, i%0xffff, i%0xfff, (i*7)%0xfff, uint64(i)*2654435761%0xffffffffffff)
		rec.Queue = "arn:aws:sqs:eu-west-1:123456789012:incident-dlq"
		src := sources[(i/len(templates))%len(sources)]
		sent := now.Add(-time.Duration(60+(i*7919)%(6*86400)) * time.Second).Truncate(time.Millisecond)
		rec.System = record.System{ReceiveCount: 1 + i%7, SentAt: sent, FirstReceivedAt: sent.Add(1500 * time.Millisecond),
			SourceQueueARN: "arn:aws:sqs:eu-west-1:123456789012:" + src}
		rec.AgeSeconds = int64(now.Sub(sent) / time.Second)
		rec.ExpiresAt = sent.Add(14 * 24 * time.Hour)
		inspect.Decode(&rec)
		line, err := inspect.MarshalRecord(rec)
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func cloneAttrs(m map[string]record.Attribute) map[string]record.Attribute {
	out := make(map[string]record.Attribute, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
