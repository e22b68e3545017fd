package inspect

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// TestDecodeCorpusFormats decodes every corpus message (one fixture file
// per format under testdata/triage) and checks what its fixture says the
// decoder must find: the format, event type and version (and that an
// envelope/record format version is not taken for the event's), producer,
// failure type, attempts, the original payload, and no failure context at
// all for plain messages.
func TestDecodeCorpusFormats(t *testing.T) {
	msgs, err := corpus.Load(corpus.Dir("../.."))
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]bool{}
	for _, m := range msgs {
		t.Run(m.ID, func(t *testing.T) {
			rec, err := m.Record()
			if err != nil {
				t.Fatal(err)
			}
			parsed := Decode(&rec)
			if f := rec.Failure; f != nil {
				formats[f.Format] = true
				if f.Format == "" {
					t.Errorf("failure without format: %+v", f)
				}
			}
			if isFormat(m.Format) && (rec.Failure == nil || rec.Failure.Format != m.Format) {
				t.Errorf("format = %v, want %s", rec.Failure, m.Format)
			}
			d := m.Decoded
			if (d == nil || !d.NoFailure) && !rec.Failure.HasContext() {
				t.Errorf("no failure context found (fixtures mark messages without any as no_failure)")
			}
			if d == nil {
				return
			}
			if d.Format != nil {
				got := ""
				if rec.Failure != nil {
					got = rec.Failure.Format
				}
				if got != *d.Format {
					t.Errorf("format %q, want %q", got, *d.Format)
				}
			}
			if d.Encoding != "" && rec.PayloadEncoding != d.Encoding {
				t.Errorf("payload_encoding %q, want %q", rec.PayloadEncoding, d.Encoding)
			}
			e := rec.Envelope
			if d.EventType != "" && (e == nil || e.EventType != d.EventType) {
				t.Errorf("envelope %+v, want event type %q", e, d.EventType)
			}
			if d.Producer != "" && (e == nil || e.Producer != d.Producer) {
				t.Errorf("envelope %+v, want producer %q", e, d.Producer)
			}
			if d.EventVersion != nil && (e == nil || !e.VersionIsSchema || fmt.Sprint(e.EventVersion) != fmt.Sprint(*d.EventVersion)) {
				t.Errorf("envelope %+v, want schema version %d", e, *d.EventVersion)
			}
			if d.NoEventVersion && e != nil && e.VersionIsSchema {
				t.Errorf("envelope version %v taken for the event's schema version", e.EventVersion)
			}
			if d.FailureType != "" && (rec.Failure == nil || rec.Failure.Type != d.FailureType) {
				t.Errorf("failure %+v, want type %q", rec.Failure, d.FailureType)
			}
			if d.Attempts != 0 && (rec.Failure == nil || rec.Failure.AttemptCount != d.Attempts) {
				t.Errorf("failure %+v, want %d attempts", rec.Failure, d.Attempts)
			}
			if d.NoFailure && rec.Failure.HasContext() {
				t.Errorf("failure context %+v found in a message that has none", rec.Failure)
			}
			if d.PayloadKey != "" {
				p, ok := PayloadOf(&rec, parsed).(map[string]any)
				if _, has := p[d.PayloadKey]; !ok || !has {
					t.Errorf("payload %v lacks %q", PayloadOf(&rec, parsed), d.PayloadKey)
				}
			}
			// The record stays valid JSON with the new fields.
			if _, err := json.Marshal(rec); err != nil {
				t.Fatal(err)
			}
		})
	}
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	for _, n := range names {
		if !formats[n] && n != "eventbridge-event" {
			t.Errorf("format %s has no corpus message (formats seen: %v)", n, formats)
		}
	}
	if !slices.Contains(names, "lambda-async") || !strings.Contains(FormatTitle("sns"), "SNS") {
		t.Errorf("formats = %v", names)
	}
}

// isFormat reports whether a corpus file is one format's (its name is the
// format); other files (plain, generic, payloads, chains, stacks) mix
// formats.
func isFormat(name string) bool {
	for _, f := range Formats() {
		if f.Name == name {
			return true
		}
	}
	return false
}

func TestDecodeGenericKeysAnyCaseAndSeparator(t *testing.T) {
	for _, name := range []string{"dlq_error", "DLQ-Error", "dlqError", "x-error", "X-Last-Error", "last_error", "Exception", "error.message", "FailureReason"} {
		r := rec(`{"eventType":"A","eventId":"1"}`, map[string]record.Attribute{name: {Type: "String", Value: "connection reset by peer"}})
		Decode(r)
		if r.Failure == nil || r.Failure.Format != FormatGeneric || r.Failure.Reason != "connection reset by peer" {
			t.Errorf("%s: failure = %+v", name, r.Failure)
		}
	}
	r := rec(`{"eventType":"A","traceparent":"00-abc","trace":"abc123","source":"orders"}`, nil)
	if Decode(r); r.Failure != nil {
		t.Errorf("a trace id and a source are not failure context: %+v", r.Failure)
	}
}

func TestDecodeLambdaErrorMessageCutShort(t *testing.T) {
	msg := `{"errorType":"Error","errorMessage":"read ECONNRESET \"db\"","trace":["Error: read ECONNRESET","    at TLSWrap.onStreamRead (node:internal/stream_ba`
	r := rec(`{"orderId":"o-1"}`, map[string]record.Attribute{
		"RequestID": {Type: "String", Value: "r1"}, "ErrorCode": {Type: "Number", Value: "200"}, "ErrorMessage": {Type: "String", Value: msg},
	})
	Decode(r)
	if r.Failure == nil || r.Failure.Type != "Error" || r.Failure.Reason != `read ECONNRESET "db"` {
		t.Fatalf("failure = %+v", r.Failure)
	}
	for _, e := range r.Failure.Evidence {
		if e.Text == "200" {
			t.Errorf("ErrorCode 200 (the function raised) is not evidence: %+v", e)
		}
	}
}

func TestRedactorMasksPayloadAndFailureTexts(t *testing.T) {
	r := rec(`{"Type":"Notification","MessageId":"m1","TopicArn":"arn:aws:sns:eu-west-1:1:orders","Message":"{\"eventType\":\"OrderPaid\",\"eventId\":\"e1\",\"card_number\":\"4111111111111111\"}"}`,
		map[string]record.Attribute{"dlq_reason": {Type: "String", Value: "auth failed password=hunter2 for ann"}})
	Decode(r)
	if r.Payload == nil || r.Failure == nil {
		t.Fatalf("payload %v failure %+v", r.Payload, r.Failure)
	}
	out := NewRedactor(nil).Record(*r)
	b, _ := json.Marshal(out)
	for _, secret := range []string{"4111111111111111", "hunter2"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("secret %s printed: %s", secret, b)
		}
	}
	if r.Failure.Reason != "auth failed password=hunter2 for ann" {
		t.Errorf("the redactor changed the original record: %+v", r.Failure)
	}
}
