package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// On a loaded machine the group can assign partitions before OpenConsumer
// has stored its client: the assignment callback must use the client it
// is given, not the consumer's (nil until OpenConsumer returns: a
// nil-pointer panic in franz-go's group goroutine that killed the whole
// process, seen once in BenchmarkRedrive). The delay makes that order
// certain; the run must then read and replay every record.
func TestAssignmentBeforeOpenConsumerReturns(t *testing.T) {
	c := newCluster(t)
	base := strings.ToLower(testenv.UniqueName(t, "early"))
	dlt, dest := base+"-dlt", base
	for _, tp := range []string{dlt, dest} {
		if r, err := c.adm.CreateTopic(context.Background(), 3, 1, nil, tp); err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
	}
	const n = 30
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: dlt, Key: []byte(fmt.Sprint(i)), Value: []byte("v"),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte(dest)}}})
	}
	if err := c.cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer kafka.DelayOpenConsumer(20 * time.Second)()
	ep := openEndpoint(t, c, dlt, kafka.Config{Group: "g-" + dlt})
	prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var copies []*kgo.Record
	consumeAll(t, ep, func(m *kafka.Message) {
		copies = append(copies, &kgo.Record{Topic: dest, Key: m.Key, Value: m.Value})
	})
	if len(copies) != n {
		t.Fatalf("read %d records, want %d", len(copies), n)
	}
	for _, err := range prod.Send(t.Context(), copies) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := topicRecords(t, c, dest); got != n {
		t.Fatalf("%s has %d records, want %d", dest, got, n)
	}
}
