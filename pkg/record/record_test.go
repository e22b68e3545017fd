package record

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

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

// TestRecordIsBrokerNeutral: a record says its broker and ordering key,
// keeps other brokers' facts in their own group (times in TimeFormat), and
// a record written before it had a broker reads as SQS's.
func TestRecordIsBrokerNeutral(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	k := Record{MessageID: "orders-dlq/0/42", Queue: "kafka://broker:9092/orders-dlq", Broker: BrokerKafka, Body: "x", OrderingKey: "customer-7",
		System: System{Kafka: &KafkaSystem{Topic: "orders-dlq", Partition: 0, Offset: 42, Timestamp: Timestamp{at}, Key: "customer-7",
			Headers: []Header{{Key: "dlq_reason", Value: "a"}, {Key: "dlq_reason", Value: "b"}, {Key: "bin", Base64: "AAE="}}}}}
	got := string(mustJSON(t, k))
	for _, want := range []string{`"broker":"kafka"`, `"ordering_key":"customer-7"`, `"kafka":{"topic":"orders-dlq","partition":0,"offset":42,"timestamp":"2026-12-01T09:30:00.000Z","key":"customer-7","headers":[{"key":"dlq_reason","value":"a"},{"key":"dlq_reason","value":"b"},{"key":"bin","base64":"AAE="}]}`} {
		if !strings.Contains(got, want) {
			t.Errorf("kafka record lacks %s: %s", want, got)
		}
	}
	var back Record
	if err := json.Unmarshal([]byte(got), &back); err != nil || back.System.Kafka == nil || !back.System.Kafka.Timestamp.Equal(at) || len(back.System.Kafka.Headers) != 3 || back.BrokerName() != BrokerKafka {
		t.Fatalf("kafka record round trip: %+v %v", back.System.Kafka, err)
	}
	a := Record{MessageID: "m", Broker: BrokerAMQP, System: System{ReceiveCount: 2, AMQP: &AMQPSystem{Exchange: "dlx", QueueType: "quorum",
		Deaths: []AMQPDeath{{Count: 3, Reason: "rejected", Queue: "orders", Exchange: "orders-x", RoutingKeys: []string{"orders.created"}, Time: Timestamp{at}}}}}}
	if got := string(mustJSON(t, a)); !strings.Contains(got, `"amqp":{"exchange":"dlx","queue_type":"quorum","deaths":[{"count":3,"reason":"rejected","queue":"orders","exchange":"orders-x","routing_keys":["orders.created"],"time":"2026-12-01T09:30:00.000Z"}]}`) {
		t.Errorf("amqp record: %s", got)
	}
	var old Record
	if err := json.Unmarshal([]byte(`{"message_id":"o","queue":"arn:aws:sqs:us-east-1:1:d","body":"x","system":{"receive_count":1,"source_queue_arn":"arn:aws:sqs:us-east-1:1:s"}}`), &old); err != nil || old.BrokerName() != BrokerSQS || old.System.SourceQueueARN == "" {
		t.Fatalf("old record: %+v %v", old, err)
	}
	if b := string(mustJSON(t, old)); strings.Contains(b, `"broker"`) || strings.Contains(b, `"amqp"`) || strings.Contains(b, `"kafka"`) {
		t.Errorf("an old record re-written gains fields it did not have: %s", b)
	}
}
