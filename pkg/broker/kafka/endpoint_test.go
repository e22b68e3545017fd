package kafka_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

func openEndpoint(t *testing.T, c cluster, topic string, cfg kafka.Config) *kafka.Endpoint {
	t.Helper()
	ref, err := broker.ParseRef("kafka://" + strings.Join(c.addr.Brokers, ",") + "/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := kafka.Open(t.Context(), ref, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Close)
	return ep
}

func readAll(t *testing.T, src broker.Source) []broker.Message {
	t.Helper()
	var out []broker.Message
	for {
		ms, err := src.Next(t.Context(), 100)
		if errors.Is(err, broker.ErrSourceDone) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms...)
	}
}

func TestEndpointPeekDecodesFailureAndLeavesTheGroupAsItWas(t *testing.T) {
	c := newCluster(t)
	prefix, res := seed(t, c)
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	ep := openEndpoint(t, c, payDLT, kafka.Config{})
	if ep.Group() != "dlqctl-"+payDLT {
		t.Fatalf("default group %q", ep.Group())
	}
	d0, err := ep.Depth(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Peek, Decode: inspect.Decode})
	if err != nil {
		t.Fatal(err)
	}
	msgs := readAll(t, src)
	_ = src.Close(t.Context())
	if len(msgs) != res.DeadLetters[payDLT] || d0.Ready != int64(len(msgs)) {
		t.Fatalf("peeked %d, depth %d, seeded %d", len(msgs), d0.Ready, res.DeadLetters[payDLT])
	}
	for _, m := range msgs {
		r := m.Record
		if r.Broker != "kafka" || r.System.Kafka == nil || r.System.Kafka.Origin == nil || r.System.Kafka.Origin.Topic != pay || r.System.Kafka.Stage != "dlt" {
			t.Fatalf("record %s: %+v", r.MessageID, r.System.Kafka)
		}
		if r.Failure == nil || !strings.Contains(r.Failure.Type+" "+r.Failure.Reason, "Exception") {
			t.Fatalf("record %s: failure %+v, want the Spring exception", r.MessageID, r.Failure)
		}
		if strings.Contains(r.Failure.Type, "ListenerExecutionFailedException") {
			t.Fatalf("record %s: failure type is the listener wrapper %q, want the cause", r.MessageID, r.Failure.Type)
		}
		if r.OrderingKey == "" {
			t.Fatalf("record %s has no ordering key", r.MessageID)
		}
	}
	d1, _ := ep.Depth(t.Context())
	if d1 != d0 {
		t.Fatalf("peek changed the depth: %+v -> %+v", d0, d1)
	}
}

func TestEndpointConsumeAckCommitsOnlyAcked(t *testing.T) {
	c := newCluster(t)
	prefix, res := seed(t, c)
	_, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ep := openEndpoint(t, c, dlq, kafka.Config{})
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	msgs := readAll(t, src)
	if len(msgs) != res.DeadLetters[dlq] {
		t.Fatalf("consumed %d of %d", len(msgs), res.DeadLetters[dlq])
	}
	var acked []broker.Message
	for i, m := range msgs {
		if i%3 != 1 {
			acked = append(acked, m)
		}
	}
	for _, err := range src.Ack(t.Context(), acked) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	d, _ := ep.Depth(t.Context())
	if d.Ready != int64(len(msgs)-len(acked)) {
		t.Fatalf("depth %d after acking %d of %d", d.Ready, len(acked), len(msgs))
	}
	// A new run reads exactly the records not acked.
	src2, _ := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	again := readAll(t, src2)
	_ = src2.Close(t.Context())
	if len(again) != len(msgs)-len(acked) {
		t.Fatalf("second run read %d, want %d", len(again), len(msgs)-len(acked))
	}
	for i, m := range again {
		if m.Record.MessageID != msgs[3*i+1].Record.MessageID {
			t.Fatalf("second run read %s, want %s", m.Record.MessageID, msgs[3*i+1].Record.MessageID)
		}
	}
}

func TestPublisherKeepsBytesAndRejectsPerEntry(t *testing.T) {
	c := newCluster(t)
	src := strings.ToLower(testenv.UniqueName(t, "src"))
	dst := strings.ToLower(testenv.UniqueName(t, "dst"))
	maxBytes := "2000"
	if _, err := c.adm.CreateTopic(t.Context(), 1, 1, nil, src); err != nil {
		t.Fatal(err)
	}
	if r, err := c.adm.CreateTopic(t.Context(), 1, 1, map[string]*string{"max.message.bytes": &maxBytes}, dst); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	big := make([]byte, 5000) // random: a compressed batch of it stays large
	_, _ = rand.Read(big)
	err := c.cl.ProduceSync(t.Context(),
		&kgo.Record{Topic: src, Key: []byte("k1"), Value: []byte(`{"a":"é"}`), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}, {Key: "bin", Value: bin}, {Key: "dlq_reason", Value: []byte("X")}, {Key: "original_topic", Value: []byte("orig")}}},
	).FirstErr()
	if err == nil {
		err = c.cl.ProduceSync(t.Context(), &kgo.Record{Topic: src, Key: []byte("k2"), Value: big}).FirstErr()
	}
	if err != nil {
		t.Fatal(err)
	}
	ep := openEndpoint(t, c, src, kafka.Config{})
	s, _ := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Peek})
	msgs := readAll(t, s)
	dep := openEndpoint(t, c, dst, kafka.Config{})
	dest, err := dep.Target(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := dep.OpenPublisher(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(t.Context())
	var outs []broker.Outgoing
	for _, m := range msgs {
		o, skip := pub.Prepare(m.Record, dest, broker.CopyOptions{RunID: "r1", Now: time.Now()})
		if skip != "" {
			t.Fatal(skip)
		}
		outs = append(outs, o)
	}
	// Kafka checks max.message.bytes per record batch, and a producer
	// batches what goes to one partition: publish the two separately (the
	// engine's batches share the outcome of the batch they land in).
	var res []broker.Result
	for _, o := range outs {
		r, err := pub.Publish(t.Context(), dest, []broker.Outgoing{o})
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r...)
	}
	if res[0].Err != nil || res[1].Err == nil || !errors.Is(res[1].Err, broker.ErrRejected) {
		t.Fatalf("results %+v: want the small record durable and the large one rejected", res)
	}
	got, _ := peekAll(t, c, dst, "")
	if len(got) != 1 {
		t.Fatalf("%d records in the destination", len(got))
	}
	g := got[0]
	if string(g.Key) != "k1" || string(g.Value) != `{"a":"é"}` {
		t.Fatalf("copy key %q value %q", g.Key, g.Value)
	}
	var keys []string
	for _, h := range g.Headers {
		keys = append(keys, h.Key)
	}
	if strings.Join(keys, ",") != "h,h,bin,dlqctl-redrive" {
		t.Fatalf("copy headers %v, want h,h,bin plus the marker (dead-letter headers dropped, order and repeats kept)", keys)
	}
	if string(g.Headers[0].Value) != "1" || string(g.Headers[1].Value) != "2" || !bytes.Equal(g.Headers[2].Value, bin) {
		t.Fatalf("header values changed: %q", g.Headers)
	}
	if mk := kafka.ReplayMarker(g.Headers); mk == nil || mk.OriginalID != msgs[0].Record.MessageID {
		t.Fatalf("marker %+v", mk)
	}
}

func TestOpenRefusesPasswordsAndNeverEchoesThem(t *testing.T) {
	ref, err := broker.ParseRef("kafka://alice:hunter2secret@127.0.0.1:9092/orders-dlq")
	if err != nil {
		t.Fatal(err)
	}
	_, err = kafka.Open(context.Background(), ref, kafka.Config{})
	if err == nil || strings.Contains(err.Error(), "hunter2secret") || !strings.Contains(err.Error(), kafka.EnvPassword) {
		t.Fatalf("err = %v", err)
	}
	ref, _ = broker.ParseRef("kafka://alice@127.0.0.1:9092/orders-dlq")
	if _, err = kafka.Open(context.Background(), ref, kafka.Config{SASL: "SCRAM-SHA-512"}); err == nil || !strings.Contains(err.Error(), kafka.EnvPassword) {
		t.Fatalf("SCRAM without a password: %v", err)
	}
	ep, err := kafka.Open(context.Background(), ref, kafka.Config{SASL: "scram-sha-512", Password: "hunter2secret"})
	if err != nil {
		t.Fatal(err)
	}
	if s := ep.String() + ep.ID(); strings.Contains(s, "hunter2secret") {
		t.Fatalf("endpoint names its password: %s", s)
	}
}

// TestSplitCluster: the cluster part of a kafka:// reference, and what
// follows it (a topic, a prefix, or nothing for the cluster alone).
func TestSplitCluster(t *testing.T) {
	for raw, want := range map[string][3]string{
		"kafka://k1:9092":                 {"kafka://k1:9092", "", "true"},
		"kafka://k1:9092/":                {"kafka://k1:9092", "", "true"},
		" kafka://ops@k1:9092,k2:9092/t ": {"kafka://ops@k1:9092,k2:9092", "t", "true"},
		"KAFKA://k1:9092/orders-":         {"kafka://k1:9092", "orders-", "true"},
		"amqp://r/%2f/q":                  {"", "", "false"},
	} {
		c, rest, ok := kafka.SplitCluster(raw)
		if got := [3]string{c, rest, fmt.Sprint(ok)}; got != want {
			t.Errorf("SplitCluster(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := kafka.OnCluster("kafka://k1:9092"); !strings.HasPrefix(got, "kafka://k1:9092/") || len(got) <= len("kafka://k1:9092/") {
		t.Errorf("OnCluster names no topic on the cluster: %q", got)
	}
}
