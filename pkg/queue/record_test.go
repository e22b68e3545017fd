package queue

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestFromSQSRecord(t *testing.T) {
	sent := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := types.Message{
		MessageId: aws.String("id-1"),
		Body:      aws.String("héllo 🌍"),
		Attributes: map[string]string{
			"ApproximateReceiveCount":  "3",
			"SentTimestamp":            strconv.FormatInt(sent.UnixMilli(), 10),
			"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:orders",
			"MessageGroupId":           "g1",
		},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"sig":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
			"tenant": {DataType: aws.String("String.tenant"), StringValue: aws.String("t-1")},
			"n":      {DataType: aws.String("Number"), StringValue: aws.String("42")},
		},
	}
	r := FromSQS("arn:aws:sqs:us-east-1:123456789012:orders-dlq", m, 14*24*time.Hour, sent.Add(time.Hour))
	if r.System.ReceiveCount != 3 || !r.System.SentAt.Equal(sent) || r.AgeSeconds != 3600 || r.System.MessageGroupID != "g1" {
		t.Fatalf("system = %+v age=%d", r.System, r.AgeSeconds)
	}
	if !r.ExpiresAt.Equal(sent.Add(14 * 24 * time.Hour)) {
		t.Fatalf("expires_at = %v", r.ExpiresAt)
	}
	if r.Attributes["sig"].Base64 != "AAEC" || r.Attributes["tenant"].Type != "String.tenant" {
		t.Fatalf("attrs = %+v", r.Attributes)
	}
	if r.BodySHA256 != SHA256Hex("héllo 🌍") {
		t.Fatal("sha mismatch")
	}
	back, err := SQSAttributes(r.Attributes)
	if err != nil || string(back["sig"].BinaryValue) != "\x00\x01\x02" || aws.ToString(back["tenant"].DataType) != "String.tenant" || aws.ToString(back["n"].StringValue) != "42" {
		t.Fatalf("round trip attrs = %+v err=%v", back, err)
	}
	b, _ := json.Marshal(r)
	var generic map[string]any
	_ = json.Unmarshal(b, &generic)
	for _, k := range []string{"message_id", "queue", "body", "body_sha256", "size_bytes", "attributes", "system", "age_seconds", "expires_at"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("record JSON lacks %q: %s", k, b)
		}
	}
	for _, k := range []string{"envelope", "failure", "class", "receipt_handle", "ReceiptHandle"} {
		if _, ok := generic[k]; ok {
			t.Errorf("record JSON has %q when it should not", k)
		}
	}
}

func TestRedrivePolicyStringOrNumber(t *testing.T) {
	for _, s := range []string{`{"deadLetterTargetArn":"arn:aws:sqs:r:1:d","maxReceiveCount":"5"}`, `{"deadLetterTargetArn":"arn:aws:sqs:r:1:d","maxReceiveCount":5}`} {
		q := &Queue{Attrs: map[string]string{"RedrivePolicy": s}}
		p := q.RedrivePolicy()
		if p == nil || p.MaxReceiveCount != 5 || p.DeadLetterTargetARN != "arn:aws:sqs:r:1:d" {
			t.Fatalf("%s -> %+v", s, p)
		}
	}
}

func TestNameFromARN(t *testing.T) {
	if NameFromARN("arn:aws:sqs:us-east-1:123:orders.fifo") != "orders.fifo" || NameFromARN("nope") != "" {
		t.Fatal("NameFromARN")
	}
}

// TestRecordJSONHasOneShapePerField pins what query engines rely on (the
// archive record contract in docs/archive.md): every timestamp in one
// fixed-width UTC format, attributes always an object, the same JSON type
// for a field in every record, HTML characters unescaped — and that records
// written before (other RFC 3339 precisions, null attributes) still read.
func TestRecordJSONHasOneShapePerField(t *testing.T) {
	sent := time.Date(2026, 11, 30, 3, 15, 0, 0, time.UTC)
	recs := []Record{
		{MessageID: "a", Body: "<b>&</b>", System: System{ReceiveCount: 1, SentAt: sent, FirstReceivedAt: sent.Add(1500 * time.Millisecond)}, ExpiresAt: sent.Add(time.Hour)},
		{MessageID: "b", Body: "x", Attributes: map[string]Attribute{"n": {Type: "Number", Value: "4"}}, System: System{SentAt: sent.Add(123456789 * time.Nanosecond)},
			Redrive: &Marker{RunID: "r", OriginalID: "a", Count: 1, At: sent}},
	}
	timeRe := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, r := range recs {
		// As sample -o json/ndjson and archive parts write records.
		b, err := marshalNoEscape(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["attributes"].(map[string]any); !ok {
			t.Errorf("%s: attributes is %T, want an object: %s", r.MessageID, m["attributes"], b)
		}
		sys := m["system"].(map[string]any)
		for _, v := range []any{sys["sent_at"], sys["first_received_at"], m["expires_at"]} {
			if v != nil && !timeRe.MatchString(v.(string)) {
				t.Errorf("%s: timestamp %q is not in %s", r.MessageID, v, TimeFormat)
			}
		}
		if rd, ok := m["redrive"].(map[string]any); ok && !timeRe.MatchString(rd["at"].(string)) {
			t.Errorf("%s: redrive.at %q is not in %s", r.MessageID, rd["at"], TimeFormat)
		}
		if _, ok := sys["receive_count"].(float64); !ok {
			t.Errorf("%s: receive_count is %T, want a number", r.MessageID, sys["receive_count"])
		}
		if strings.Contains(string(b), `\u003c`) {
			t.Errorf("%s: HTML characters escaped in %s", r.MessageID, b)
		}
		var back Record
		if err := json.Unmarshal(b, &back); err != nil || !back.System.SentAt.Equal(r.System.SentAt.Truncate(time.Millisecond)) || back.Body != r.Body {
			t.Errorf("%s: round trip %+v err %v", r.MessageID, back, err)
		}
	}
	src := FailureSource{LogGroup: "/aws/lambda/orders", Timestamp: sent, Lines: []LogLine{{LogGroup: "/aws/lambda/orders", LogStream: "s", Timestamp: sent.Add(7 * time.Millisecond), Message: "ERROR <boom>"}}}
	if got := string(mustJSON(t, Record{MessageID: "c", Failure: &Failure{Format: "logs", Source: &src}})); !strings.Contains(got, `"source":{"log_group":"/aws/lambda/orders","timestamp":"2026-11-30T03:15:00.000Z","lines":[{"log_group":"/aws/lambda/orders","log_stream":"s","timestamp":"2026-11-30T03:15:00.007Z","message":"ERROR <boom>"}]}`) {
		t.Errorf("failure source JSON %s", got)
	}
	if got := string(mustJSON(t, recs[0].System)); !strings.Contains(got, `"sent_at":"2026-11-30T03:15:00.000Z"`) || !strings.Contains(got, `"first_received_at":"2026-11-30T03:15:01.500Z"`) {
		t.Errorf("system JSON %s", got)
	}
	// Records written by earlier versions: any RFC 3339 precision, null
	// attributes.
	var old Record
	if err := json.Unmarshal([]byte(`{"message_id":"o","body":"x","attributes":null,"system":{"receive_count":2,"sent_at":"2026-11-30T03:15:00Z"},"expires_at":"2026-12-14T03:15:00.123456Z"}`), &old); err != nil || !old.System.SentAt.Equal(sent) || old.ExpiresAt.Nanosecond() != 123456000 {
		t.Fatalf("old record: %+v %v", old, err)
	}
	if b := mustJSON(t, old); !strings.Contains(string(b), `"attributes":{}`) || !strings.Contains(string(b), `"expires_at":"2026-12-14T03:15:00.123Z"`) {
		t.Errorf("old record re-written: %s", b)
	}
}

// mustJSON writes v as dlqctl's record writers do (no HTML escaping).
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := marshalNoEscape(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordJSONMirrorsRecord: the types Record and System are written
// through must have every field of them, with the same JSON name, in the
// same order — a field added to Record but not to recordJSON would silently
// disappear from every record dlqctl writes.
func TestRecordJSONMirrorsRecord(t *testing.T) {
	for _, pair := range [][2]reflect.Type{{reflect.TypeOf(Record{}), reflect.TypeOf(recordJSON{})}, {reflect.TypeOf(System{}), reflect.TypeOf(systemJSON{})},
		{reflect.TypeOf(FailureSource{}), reflect.TypeOf(failureSourceJSON{})}, {reflect.TypeOf(LogLine{}), reflect.TypeOf(logLineJSON{})}} {
		var a, b []string
		for i := range pair[0].NumField() {
			if tag := pair[0].Field(i).Tag.Get("json"); tag != "-" {
				a = append(a, pair[0].Field(i).Name+" "+strings.Split(tag, ",")[0])
			}
		}
		for i := range pair[1].NumField() {
			b = append(b, pair[1].Field(i).Name+" "+strings.Split(pair[1].Field(i).Tag.Get("json"), ",")[0])
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s fields %v\n%s fields %v", pair[0].Name(), a, pair[1].Name(), b)
		}
	}
}
