package kafka_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/brokertest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestConformance runs the broker conformance suite against the stack's
// Kafka server (kfake, its own process, over TCP).
func TestConformance(t *testing.T) {
	brokertest.Run(t, &kafkaHarness{c: newCluster(t)})
}

type kafkaHarness struct{ c cluster }

func (h *kafkaHarness) Name() string { return "kafka/kfake" }

// Features: reads hold nothing, so no hold can be lost; Kafka accepts or
// refuses a produce batch per partition as a whole (max.message.bytes is a
// batch limit), so a batch cannot fail for one entry while its neighbours
// on the same partition succeed — each entry still gets its own result.
func (h *kafkaHarness) Features() brokertest.Features {
	return brokertest.Features{KeepsOrder: true, LosableHold: false, PerEntryRejection: false, HeaderTypes: []string{"String", "Number", "Binary"}}
}

func (h *kafkaHarness) NewQueue(t *testing.T, opt brokertest.QueueOptions) broker.Endpoint {
	topic := strings.ToLower(testenv.UniqueName(t, "conf"))
	parts := int32(3)
	if opt.Ordered {
		parts = 1
	}
	if r, err := h.c.adm.CreateTopic(t.Context(), parts, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	t.Cleanup(func() { _, _ = h.c.adm.DeleteTopics(context.Background(), topic) })
	return openEndpoint(t, h.c, topic, kafka.Config{})
}

func (h *kafkaHarness) Put(t *testing.T, ep broker.Endpoint, msgs []brokertest.Msg) {
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		r := &kgo.Record{Topic: ep.Name(), Value: []byte(m.Body)}
		if m.OrderingKey != "" {
			r.Key = []byte(m.OrderingKey)
		}
		keys := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: m.Headers[k]})
		}
		recs[i] = r
	}
	if err := h.c.cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// Count is what dlqctl's group has pending on the topic.
func (h *kafkaHarness) Count(t *testing.T, ep broker.Endpoint) int {
	d, err := ep.Depth(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return int(d.Ready)
}

// Drain reads the group's pending records through the topic's consuming
// source (a member of the group, to the ends taken at its start) and
// commits past them.
func (h *kafkaHarness) Drain(t *testing.T, ep broker.Endpoint, _ time.Duration) []brokertest.Msg {
	var out []brokertest.Msg
	consumeAll(t, ep, func(m *kafka.Message) {
		hd := map[string][]byte{}
		for _, h := range m.Headers {
			hd[h.Key] = h.Value
		}
		out = append(out, brokertest.Msg{Body: string(m.Value), Headers: hd, OrderingKey: string(m.Key)})
	})
	return out
}

// consumeAll reads ep's pending records as a member of its group, hands
// each to fn, acks (commits) every batch, and checks at the end that the
// source says nothing is left.
func consumeAll(t *testing.T, ep broker.Endpoint, fn func(*kafka.Message)) {
	t.Helper()
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ms, err := src.Next(t.Context(), 500)
		if errors.Is(err, broker.ErrSourceDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			fn(m.Handle.(*kafka.Message))
		}
		for _, err := range src.Ack(t.Context(), ms) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	end, err := src.(broker.Ender).End(t.Context(), broker.RunState{}, true)
	if err != nil || end.Blocked+end.Unknown > 0 {
		t.Fatalf("end of the read: %v %+v", err, end)
	}
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func (h *kafkaHarness) LoseHold(t *testing.T, _ broker.Endpoint, _ broker.Source, _ broker.Message) {
	t.Fatal("Kafka reads hold nothing (Features.LosableHold is false)")
}

func (h *kafkaHarness) Crash(_ *testing.T, src broker.Source) { kafka.Abandon(src) }

func (h *kafkaHarness) Unpublishable(t *testing.T, _ broker.Endpoint) brokertest.Msg {
	t.Fatal("Kafka refuses produce batches per partition (Features.PerEntryRejection is false)")
	return brokertest.Msg{}
}
