package kafka_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// Send's errs[i] must be recs[i]'s result. franz-go's ProduceSync lists
// its results in the order the records were settled: a record refused at
// once (too large for a batch) comes first there, whatever its place in
// the call. Matched by position, its error landed on another record, which
// the journal then treated as not sent, while the refused one was
// committed past: a dead letter lost.
func TestSendMatchesEachResultToItsRecord(t *testing.T) {
	c := newCluster(t)
	topic := strings.ToLower(testenv.UniqueName(t, "send"))
	if r, err := c.adm.CreateTopic(context.Background(), 3, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := []*kgo.Record{
		{Topic: topic, Key: []byte("a"), Value: []byte("small")},
		{Topic: topic, Key: []byte("b"), Value: []byte("small")},
		{Topic: topic, Key: []byte("c"), Value: make([]byte, 2<<20)}, // over the 1 MiB batch limit
	}
	errs := prod.Send(t.Context(), recs)
	if errs[0] != nil || errs[1] != nil || errs[2] == nil {
		t.Fatalf("errs %v: want only the oversized third record refused", errs)
	}
	if got := topicRecords(t, c, topic); got != 2 {
		t.Fatalf("%s has %d records, want 2", topic, got)
	}
}
