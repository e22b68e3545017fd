package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// The seed corpora of these targets are in testdata/fuzz/<Target>/ (the
// formats of testdata/triage and hand-made edge cases) and run with every
// `go test`; `make fuzz` explores further (FUZZTIME per target).

// fuzzRecord builds a record from a body and a JSON object of attributes
// ({"name": {"type": "String", "value": "…"}}; ignored when not that).
func fuzzRecord(body string, attrs []byte) *record.Record {
	rec := &record.Record{MessageID: "m-1", Queue: "arn:aws:sqs:us-east-1:123456789012:dlq", Body: body}
	_ = json.Unmarshal(attrs, &rec.Attributes)
	fill(rec)
	return rec
}

// FuzzDecode: every body and attribute set decodes without panicking, the
// decoded record prints as JSON and reads back the same, decoding is
// deterministic, evidence is capped, and everything computed from a
// decoded record (expression input, fingerprints, grouping, redaction)
// works on it.
func FuzzDecode(f *testing.F) {
	red := NewRedactor(nil)
	keys, err := ParseGroupKeys([]string{"source,error,event_type,format,shape,age,tenant,.failure.type"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, attrs []byte) {
		rec := fuzzRecord(body, attrs)
		parsed := Decode(rec)
		b1, err := MarshalRecord(rec)
		if err != nil {
			t.Fatalf("decoded record cannot be printed: %v", err)
		}
		again := fuzzRecord(body, attrs)
		Decode(again)
		b2, err := MarshalRecord(again)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("decoding is not deterministic:\n%s\n%s", b1, b2)
		}
		var back record.Record
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatalf("printed record %s does not read back: %v", b1, err)
		}
		if back.Body != body && utf8.ValidString(body) {
			t.Fatalf("body changed in print: %q -> %q", body, back.Body)
		}
		if f := rec.Failure; f != nil {
			if f.Format == "" {
				t.Fatalf("failure without a format: %+v", f)
			}
			for _, e := range f.Evidence {
				if len(e.Text) > maxEvidence || e.Text == "" || e.Kind == "" || e.Field == "" {
					t.Fatalf("evidence %+v is empty or over %d bytes", e, maxEvidence)
				}
			}
		}
		in := Input(rec, parsed)
		if _, err := json.Marshal(in); err != nil {
			t.Fatalf("expression input cannot be marshalled: %v", err)
		}
		if fp := ErrorFingerprint(rec); fp == "" || len(fp) > maxFingerprint+16 {
			t.Fatalf("error fingerprint %q", fp)
		}
		if ShapeFingerprint(parsed) == "" {
			t.Fatal("empty shape fingerprint")
		}
		g := NewGrouper(keys, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		g.Add(rec, parsed)
		if g.Total() != 1 || len(g.Groups()) != 1 {
			t.Fatalf("grouping one record gave %d groups", len(g.Groups()))
		}
		r := red.Record(*rec)
		if _, err := MarshalRecord(&r); err != nil {
			t.Fatalf("redacted record cannot be printed: %v", err)
		}
		if json.Valid([]byte(strings.TrimSpace(body))) && strings.TrimSpace(body) != "" {
			if out := red.Body(body); !json.Valid([]byte(out)) {
				t.Fatalf("redacting JSON %q gave invalid JSON %q", body, out)
			}
		}
	})
}

// FuzzReadRecords: offline input (NDJSON, a JSON array, either gzipped)
// either yields records that print, or fails with one bad-input error
// (exit 2) — never a panic, never another kind of error.
func FuzzReadRecords(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := ReadRecords(bytes.NewReader(data), "input.ndjson", func(rec *record.Record, parsed any) error {
			n++
			if rec.BodySHA256 == "" || rec.Attributes == nil {
				t.Fatalf("record %d not filled: %+v", n, rec)
			}
			if _, err := MarshalRecord(rec); err != nil {
				t.Fatalf("record %d cannot be printed: %v", n, err)
			}
			return nil
		})
		if err != nil && errs.Code(err) != errs.ExitUsage {
			t.Fatalf("reading %q: %v (exit %d, want a bad-input error)", data, err, errs.Code(err))
		}
		if err != nil && !strings.Contains(err.Error(), "input.ndjson") {
			t.Fatalf("error %q does not name the input", err)
		}
	})
}

var fuzzFilterRecords = func() []*record.Record {
	var out []*record.Record
	for _, b := range []string{
		`{"eventType":"OrderCreated","eventVersion":3,"payload":{"amount":12.5,"items":[1,2,3]},"error":"timeout after 30s"}`,
		`plain text`,
		`{"Records":[{"eventSource":"aws:s3"}]}`,
	} {
		rec := fuzzRecord(b, []byte(`{"tenant":{"type":"String","value":"t-1"},"sig":{"type":"Binary","base64":"AAEC"}}`))
		rec.System = record.System{ReceiveCount: 4, SentAt: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), SourceQueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
		out = append(out, rec)
	}
	return out
}()

// FuzzFilter: any --filter text either compiles or is one bad-input error;
// a compiled filter evaluates on every kind of record without panicking and
// within its time budget.
func FuzzFilter(f *testing.F) {
	defer func(b time.Duration) { exprBudget = b }(exprBudget)
	exprBudget = 100 * time.Millisecond
	f.Fuzz(func(t *testing.T, src string) {
		flt, err := CompileFilter(src)
		if err != nil {
			if errs.Code(err) != errs.ExitUsage {
				t.Fatalf("CompileFilter(%q): %v is not a bad-input error", src, err)
			}
			return
		}
		for _, rec := range fuzzFilterRecords {
			parsed := Decode(rec)
			_ = flt.Keep(rec, parsed)
		}
	})
}

// FuzzParseGroupKeys: any --by value parses or is one bad-input error.
func FuzzParseGroupKeys(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		keys, err := ParseGroupKeys([]string{spec})
		if err != nil {
			if errs.Code(err) != errs.ExitUsage {
				t.Fatalf("ParseGroupKeys(%q): %v is not a bad-input error", spec, err)
			}
			return
		}
		if len(keys) == 0 {
			t.Fatalf("ParseGroupKeys(%q) gave no keys and no error", spec)
		}
	})
}

// FuzzNormalizeError: the fingerprint of an error text is capped, valid
// UTF-8 when the text is, and a fixed point (normalising twice changes
// nothing), so groups are stable.
func FuzzNormalizeError(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeError(s)
		if len(n) > maxFingerprint+16 {
			t.Fatalf("NormalizeError(%q) = %d bytes", s, len(n))
		}
		if utf8.ValidString(s) && !utf8.ValidString(n) {
			t.Fatalf("NormalizeError(%q) = %q is not valid UTF-8", s, n)
		}
	})
}
