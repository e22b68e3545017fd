package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func be(n int64, size int) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(n))
	return b[8-size:]
}

func TestDecodeOriginConventions(t *testing.T) {
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		hs   []Header
		want Origin
	}{
		{"spring binary numbers, repeated headers: the last wins", []Header{
			{Key: "kafka_dlt-original-topic", Value: []byte("first-hop")},
			{Key: "kafka_dlt-original-partition", Value: be(9, 4)},
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-partition", Value: be(3, 4)},
			{Key: "kafka_dlt-original-offset", Value: be(88213, 8)},
			{Key: "kafka_dlt-original-timestamp", Value: be(ts.UnixMilli(), 8)},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("fulfilment")},
		}, Origin{Topic: "orders", Partition: 3, Offset: 88213, Timestamp: ts, ConsumerGroup: "fulfilment", Format: "spring-kafka"}},
		{"connect decimal strings", []Header{
			{Key: "__connect.errors.topic", Value: []byte("inventory")},
			{Key: "__connect.errors.partition", Value: []byte("2")},
			{Key: "__connect.errors.offset", Value: []byte("4410")},
		}, Origin{Topic: "inventory", Partition: 2, Offset: 4410, Format: "kafka-connect"}},
		{"streams", []Header{
			{Key: "__streams.errors.topic", Value: []byte("orders")},
			{Key: "__streams.errors.partition", Value: []byte("0")},
			{Key: "__streams.errors.offset", Value: []byte("981")},
		}, Origin{Topic: "orders", Partition: 0, Offset: 981, Format: "kafka-streams"}},
		{"spring cloud stream binary numbers", []Header{
			{Key: "x-original-topic", Value: []byte("payments")},
			{Key: "x-original-partition", Value: be(1, 4)},
			{Key: "x-original-offset", Value: be(77, 8)},
		}, Origin{Topic: "payments", Partition: 1, Offset: 77, Format: "spring-cloud-stream"}},
		{"hand-rolled dlq_* pattern", []Header{
			{Key: "original_topic", Value: []byte("orders")},
			{Key: "original_offset", Value: []byte("12")},
			{Key: "dlq_timestamp", Value: []byte("2026-12-01T10:00:00Z")},
		}, Origin{Topic: "orders", Partition: -1, Offset: 12, Timestamp: ts, Format: "dlq-headers"}},
		{"nothing", []Header{{Key: "traceparent", Value: []byte("x")}}, Origin{Partition: -1, Offset: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DecodeOrigin(c.hs)
			if !got.Timestamp.Equal(c.want.Timestamp) {
				t.Fatalf("timestamp %v, want %v", got.Timestamp, c.want.Timestamp)
			}
			got.Timestamp, c.want.Timestamp = time.Time{}, time.Time{}
			if got != c.want {
				t.Fatalf("origin %+v, want %+v", got, c.want)
			}
			// Read the way a lean read does (topic and format only, interned):
			// routing sees the same topic, and FullOrigin (what ToRecord,
			// hence a selection, uses) the whole origin.
			var m Message
			var in interner
			fillFromKgo(&m, &kgo.Record{Topic: "dlt", Headers: c.hs, Timestamp: ts}, &in, false)
			if m.Origin.Topic != c.want.Topic || m.Origin.Format != c.want.Format {
				t.Fatalf("topic-only origin %+v, want topic %q format %q", m.Origin, c.want.Topic, c.want.Format)
			}
			full := m.FullOrigin()
			if !full.Timestamp.Equal(DecodeOrigin(c.hs).Timestamp) {
				t.Fatalf("FullOrigin timestamp %v", full.Timestamp)
			}
			full.Timestamp = time.Time{}
			if full != c.want {
				t.Fatalf("FullOrigin %+v, want %+v", full, c.want)
			}
			if ko := ToRecord(&m, "arn", ts).System.Kafka.Origin; c.want.Topic != "" && (ko == nil || ko.Partition != c.want.Partition || ko.Offset != c.want.Offset || ko.ConsumerGroup != c.want.ConsumerGroup) {
				t.Fatalf("record origin %+v, want %+v", ko, c.want)
			}
		})
	}
}

func TestReplayHeadersDropDeadLetterContextAndCountReplays(t *testing.T) {
	m := &Message{Topic: "orders-dlq", Partition: 0, Offset: 5, Headers: []Header{
		{Key: "traceparent", Value: []byte("t")},
		{Key: "KAFKA_DLT-exception-fqcn", Value: []byte("x")},
		{Key: "__connect.errors.topic", Value: []byte("x")},
		{Key: "x-exception-message", Value: []byte("x")},
		{Key: "retry_topic-attempts", Value: be(3, 4)},
		{Key: "dlq_reason", Value: []byte("x")},
		{Key: "tenant", Value: []byte("acme")},
	}}
	hs := ReplayHeaders(m, "run-1", time.Now())
	var keys []string
	for _, h := range hs {
		keys = append(keys, h.Key)
	}
	if strings.Join(keys, ",") != "traceparent,tenant,"+MarkerHeader {
		t.Fatalf("replay headers %v", keys)
	}
	m.Headers = hs
	again := ReplayHeaders(m, "run-2", time.Now())
	if mk := ReplayMarker(again); mk == nil || mk.Count != 2 || mk.RunID != "run-2" {
		t.Fatalf("second replay marker %+v", mk)
	}
	if n := strings.Count(strings.Join(func() []string {
		var k []string
		for _, h := range again {
			k = append(k, h.Key)
		}
		return k
	}(), ","), MarkerHeader); n != 1 {
		t.Fatalf("%d markers after two replays", n)
	}
}

// replayCopies (the batch builder the replay sink uses) must write the same
// copies, byte for byte, as ToKgo with ReplayHeaders one record at a time,
// and its markers must decode to what encoding/json would read back; no
// copy may share writable memory with its neighbour.
func TestReplayCopiesMatchReplayHeaders(t *testing.T) {
	prev := ReplayHeaders(&Message{Topic: "orders-dlq", Partition: 1, Offset: 9}, "run-0", time.Now())
	msgs := []*Message{
		{Topic: "orders-dlq", Partition: 0, Offset: 5, Key: []byte("k1"), Value: []byte("v1"), Headers: []Header{
			{Key: "traceparent", Value: []byte("t")}, {Key: "kafka_dlt-exception-fqcn", Value: []byte("x")},
			{Key: "Original_Topic", Value: []byte("orders")}, {Key: "tenant", Value: []byte("acme")}}},
		{Topic: "orders-dlq", Partition: 2, Offset: 1 << 40, Value: []byte("v2"), Headers: prev}, // replayed before: n=2
		{Topic: `odd"<topic>&\\é`, Partition: 0, Offset: 0},                                      // from an archive: any text, escaped as encoding/json does
		{Topic: "orders-dlq", Partition: 0, Offset: 6},
	}
	topics := []string{"orders", "orders", "other", "orders"}
	for _, run := range []string{"20261202T010203Z-abcd", `run "quoted" <&>`} {
		now := time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC)
		got := replayCopies(msgs, topics, run, now)
		for i, m := range msgs {
			want := ToKgo(m, topics[i], ReplayHeaders(m, run, now))
			g := got[i]
			if g.Topic != want.Topic || !bytes.Equal(g.Key, want.Key) || !bytes.Equal(g.Value, want.Value) || len(g.Headers) != len(want.Headers) {
				t.Fatalf("copy %d: %+v, want %+v", i, g, want)
			}
			for k := range want.Headers {
				if g.Headers[k].Key != want.Headers[k].Key || !bytes.Equal(g.Headers[k].Value, want.Headers[k].Value) {
					t.Fatalf("copy %d header %d: %s=%s, want %s=%s", i, k, g.Headers[k].Key, g.Headers[k].Value, want.Headers[k].Key, want.Headers[k].Value)
				}
				if cap(g.Headers[k].Value) != len(g.Headers[k].Value) && k == len(want.Headers)-1 {
					t.Fatalf("copy %d: its marker can be appended into the next one's", i)
				}
			}
			if cap(g.Headers) != len(g.Headers) {
				t.Fatalf("copy %d: its headers can be appended into the next copy's", i)
			}
			mk := ReplayMarker(g.Headers)
			var std record.Marker
			if err := json.Unmarshal(g.Headers[len(g.Headers)-1].Value, &std); err != nil || mk == nil || std.RunID != run || std.OriginalID != m.ID() {
				t.Fatalf("copy %d marker %s: %+v %v", i, g.Headers[len(g.Headers)-1].Value, std, err)
			}
			enc, _ := json.Marshal(record.Marker{RunID: run, OriginalID: m.ID(), Count: std.Count, At: now.Truncate(time.Millisecond)})
			if !bytes.Equal(enc, g.Headers[len(g.Headers)-1].Value) {
				t.Fatalf("copy %d marker %s, encoding/json writes %s", i, g.Headers[len(g.Headers)-1].Value, enc)
			}
		}
		if mk := ReplayMarker(got[1].Headers); mk.Count != 2 {
			t.Fatalf("a record replayed once before got n=%d", mk.Count)
		}
	}
}

func TestStage(t *testing.T) {
	for topic, want := range map[string][2]string{
		"orders-retry-1": {"retry-1", "orders"}, "orders-retry-5000": {"retry-5000", "orders"}, "orders-retry": {"retry", "orders"},
		"orders-dlq": {"dlt", "orders"}, "orders-dlt": {"dlt", "orders"}, "orders.DLT": {"dlt", "orders"}, "orders": {"", "orders"},
		"my.orders-dead-letter": {"dlt", "my.orders"},
	} {
		st, base := Stage(topic)
		if st != want[0] || base != want[1] {
			t.Errorf("Stage(%q) = %q, %q; want %q, %q", topic, st, base, want[0], want[1])
		}
	}
}

func TestParseAddress(t *testing.T) {
	a, err := ParseAddress("kafka://k1:9092,k2:9093/orders-dlq")
	if err != nil || len(a.Brokers) != 2 || a.Topic != "orders-dlq" || a.String() != "kafka://k1:9092,k2:9093/orders-dlq" {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = ParseAddress("kafka://ops@k1:9092/orders-dlq")
	if err != nil || a.User != "ops" || a.String() != "kafka://ops@k1:9092/orders-dlq" {
		t.Fatalf("%+v %v", a, err)
	}
	for ref, want := range map[string]string{
		"kafka://k1:9092":                    "names no topic",
		"kafka://k1/orders":                  "HOST:PORT",
		"kafka://k1:0/orders":                "port",
		"kafka://u:hunter2@k1:9092/orders":   "DLQCTL_KAFKA_PASSWORD",
		"kafka://k1:9092/orders?password=pw": "query strings",
		"kafka://k1:9092/ord ers":            "character",
		"kafka:///orders":                    "names no broker",
	} {
		_, err := ParseAddress(ref)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "=pw") {
			t.Errorf("ParseAddress(%q) = %v, want an error mentioning %q", ref, err, want)
		}
	}
}

// IsFailureHeader's one-byte pre-check must agree with the prefix list for
// every prefix in any case.
func TestIsFailureHeaderEveryPrefixAnyCase(t *testing.T) {
	for _, p := range append(append([]string(nil), failureHeaderPrefixes...), record.MarkerAttribute) {
		for _, k := range []string{p + "x", strings.ToUpper(p) + "x", strings.ToUpper(p[:1]) + p[1:] + "x"} {
			if k == record.MarkerAttribute+"x" || k == strings.ToUpper(record.MarkerAttribute)+"x" || k == strings.ToUpper(record.MarkerAttribute[:1])+record.MarkerAttribute[1:]+"x" {
				k = k[:len(k)-1]
			}
			if !IsFailureHeader(k) {
				t.Errorf("IsFailureHeader(%q) = false", k)
			}
		}
	}
	for _, k := range []string{"", "traceparent", "tenant", "content-type", "dlq", "originally"} {
		if IsFailureHeader(k) {
			t.Errorf("IsFailureHeader(%q) = true", k)
		}
	}
}

// The interner shares origin strings between records and stays bounded
// however many distinct origins a topic holds; what it returns is always
// the header's text.
func TestInternedOriginsAreBoundedAndExact(t *testing.T) {
	var in interner
	for i := 0; i < 3*maxInterned; i++ {
		topic := fmt.Sprintf("orders-%d", i%(2*maxInterned))
		o := decodeOrigin([]Header{{Key: "kafka_dlt-original-topic", Value: []byte(topic)},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("svc")}}, &in, true)
		if o.Topic != topic || o.ConsumerGroup != "svc" || o.Format != "spring-kafka" {
			t.Fatalf("origin %+v, want topic %s", o, topic)
		}
		if len(in.m) > maxInterned {
			t.Fatalf("interner holds %d strings, bound %d", len(in.m), maxInterned)
		}
	}
	a := decodeOrigin([]Header{{Key: "original_topic", Value: []byte("payments")}}, &in, true)
	b := decodeOrigin([]Header{{Key: "original_topic", Value: []byte("payments")}}, &in, true)
	if unsafe.StringData(a.Topic) != unsafe.StringData(b.Topic) {
		t.Fatal("the same origin topic was allocated twice")
	}
}
