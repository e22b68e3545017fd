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
	prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	st, err := kafka.Drain(t.Context(), kafka.DrainOptions{Source: c.addr.WithTopic(dlt), Group: "g-" + dlt,
		Sink: kafka.ReplaySink(prod, kafka.NewRouter(c.adm, ""), "early")})
	if err != nil || st.Handled != n || st.Unfinished != 0 {
		t.Fatalf("%v %+v, want %d handled", err, st, n)
	}
	if got := topicRecords(t, c, dest); got != n {
		t.Fatalf("%s has %d records, want %d", dest, got, n)
	}
}
