package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkReplayPerRecord measures, without a broker, the per-record work
// dlqctl's Kafka redrive does on top of a bare consume → produce → commit
// loop, one step at a time, on batches of 500 Spring-style dead letters
// like BenchmarkRedrive's (300-byte values, 8 headers): reading a polled
// record into a Message with its origin's topic decoded from the headers
// (into one slab a poll, as the consumer does), routing it,
// building its copy (dead-letter headers dropped, marker added; into the
// previous batch's memory, as the publisher's copier does) and marking it handled
// in the partition's journal. The bare loop's own
// per-record work (a kgo.Record with the same key, value and headers) is
// the "bare" step. ns/op is per record.
//
//	go test -run '^$' -bench 'BenchmarkReplayPerRecord' ./pkg/broker/kafka
func BenchmarkReplayPerRecord(b *testing.B) {
	const batch = 500
	val := []byte(`{"eventType":"OrderCreated","eventId":"ord-XXXXXX","orderId":1,"customerId":"cust-1","amount":10.50,"lines":[{"sku":"sku-1","qty":1}],"pad":"` + strings.Repeat("x", 150) + `"}`)
	recs := make([]*kgo.Record, batch)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "orders-dlt", Partition: int32(i % 3), Offset: int64(i), Key: []byte(fmt.Sprintf("order-%d", i%1000)), Value: val,
			Timestamp: time.Now(), Headers: []kgo.RecordHeader{
				{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("org.springframework.kafka.listener.ListenerExecutionFailedException")},
				{Key: "kafka_dlt-exception-cause-fqcn", Value: []byte("java.net.SocketTimeoutException")},
				{Key: "kafka_dlt-exception-message", Value: []byte("Read timed out")},
				{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-original-partition", Value: []byte{0, 0, 0, 1}},
				{Key: "kafka_dlt-original-offset", Value: []byte{0, 0, 0, 0, 0, 0, 1, 0}},
				{Key: "kafka_dlt-original-consumer-group", Value: []byte("orders-service")},
			}}
	}
	// A poll's messages are one slab.
	slab := make([]Message, batch)
	msgs := make([]*Message, batch)
	read := func(in *interner) []*Message {
		for i, r := range recs {
			fillFromKgo(&slab[i], r, in, false)
			msgs[i] = &slab[i]
		}
		return msgs
	}
	perRecord := func(b *testing.B, fn func()) {
		b.ReportAllocs()
		for i := 0; i < b.N; i += batch {
			fn()
		}
	}
	b.Run("bare", func(b *testing.B) {
		perRecord(b, func() {
			out := make([]*kgo.Record, batch)
			for i, r := range recs {
				out[i] = &kgo.Record{Topic: "orders", Key: r.Key, Value: r.Value, Headers: r.Headers}
			}
		})
	})
	b.Run("read+origin", func(b *testing.B) {
		var in interner
		perRecord(b, func() { read(&in) })
	})
	read(&interner{})
	b.Run("route", func(b *testing.B) {
		r := &Router{exists: map[string]*routeCheck{"orders": {topic: "orders"}}}
		ctx := context.Background()
		perRecord(b, func() {
			for _, m := range msgs {
				if _, err := r.Route(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("copy+marker", func(b *testing.B) {
		topics := make([]string, batch)
		for i := range topics {
			topics[i] = "orders"
		}
		now := time.Now()
		var cp copier // the replay sink keeps one for the run
		perRecord(b, func() { cp.build(msgs, topics, "20261202T010203Z-abcd1234", now) })
	})
	b.Run("journal", func(b *testing.B) {
		perRecord(b, func() {
			js := [3]*PartitionJournal{NewPartitionJournal(0, ""), NewPartitionJournal(0, ""), NewPartitionJournal(0, "")}
			for i, m := range msgs {
				_ = js[m.Partition].Mark(int64(i / 3))
			}
		})
	})
}
