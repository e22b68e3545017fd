package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

type cluster struct {
	addr kafka.Address
	cl   *kgo.Client
	adm  *kadm.Client
}

func newCluster(t testing.TB) cluster {
	t.Helper()
	brokers := testenv.RequireKafka(t)
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/x")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cluster{addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

func seed(t *testing.T, c cluster) (string, *kafkaseed.Result) {
	t.Helper()
	prefix := strings.ToLower(testenv.UniqueName(t, "k"))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := kafkaseed.Seed(ctx, c.cl, kafkaseed.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return prefix, res
}

func peekAll(t *testing.T, c cluster, topic, group string) ([]*kafka.Message, *kafka.Plan) {
	t.Helper()
	plan, err := kafka.MakePlan(t.Context(), c.adm, topic, group)
	if err != nil {
		t.Fatal(err)
	}
	var out []*kafka.Message
	st, err := kafka.Peek(t.Context(), c.addr.WithTopic(topic), kafka.Conn{}, plan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Truncated) > 0 {
		t.Fatalf("peek of %s stopped before the end of partitions %v", topic, st.Truncated)
	}
	return out, plan
}

func TestSeedWritesRealDeadLettersAndPeekReadsThemWithoutCommitting(t *testing.T) {
	c := newCluster(t)
	prefix, res := seed(t, c)
	orders, _, _, _, dlq, pay, payDLT, inv, cdlq := kafkaseed.Topics(prefix)

	msgs, plan := peekAll(t, c, dlq, "dlqctl-"+dlq)
	if len(msgs) != res.DeadLetters[dlq] || len(msgs) == 0 {
		t.Fatalf("peek read %d records of %s, the seeder wrote %d", len(msgs), dlq, res.DeadLetters[dlq])
	}
	if plan.Pending() != int64(len(msgs)) {
		t.Fatalf("plan says %d pending, read %d", plan.Pending(), len(msgs))
	}
	for _, m := range msgs {
		if m.Origin.Topic != orders || m.Origin.Format != "dlq-headers" || m.Origin.Offset < 0 || m.Origin.Partition < 0 {
			t.Fatalf("%s: origin %+v, want %s with partition and offset", m.ID(), m.Origin, orders)
		}
		if len(m.Key) == 0 {
			t.Fatalf("%s lost its key", m.ID())
		}
	}
	// The origin points at the real source record.
	src, _ := peekAll(t, c, orders, "")
	byPos := map[[2]int64]*kafka.Message{}
	for _, m := range src {
		byPos[[2]int64{int64(m.Partition), m.Offset}] = m
	}
	for _, m := range msgs {
		s := byPos[[2]int64{int64(m.Origin.Partition), m.Origin.Offset}]
		if s == nil || string(s.Value) != string(m.Value) || string(s.Key) != string(m.Key) {
			t.Fatalf("%s: origin %s/%d@%d is not the record it copies", m.ID(), m.Origin.Topic, m.Origin.Partition, m.Origin.Offset)
		}
	}

	// Spring: binary partition/offset/timestamp, same partition as the source.
	springMsgs, _ := peekAll(t, c, payDLT, "dlqctl-"+payDLT)
	if len(springMsgs) != res.DeadLetters[payDLT] || len(springMsgs) == 0 {
		t.Fatalf("read %d Spring dead letters, want %d", len(springMsgs), res.DeadLetters[payDLT])
	}
	for _, m := range springMsgs {
		o := m.Origin
		if o.Format != "spring-kafka" || o.Topic != pay || o.Partition != m.Partition || o.Offset < 0 || o.Timestamp.IsZero() || o.ConsumerGroup == "" {
			t.Fatalf("%s: Spring origin %+v", m.ID(), o)
		}
	}
	// Connect: decimal strings.
	connectMsgs, _ := peekAll(t, c, cdlq, "dlqctl-"+cdlq)
	for _, m := range connectMsgs {
		if m.Origin.Format != "kafka-connect" || m.Origin.Topic != inv || m.Origin.Offset < 0 {
			t.Fatalf("%s: Connect origin %+v", m.ID(), m.Origin)
		}
	}

	// Peeking committed nothing.
	offs, err := c.adm.FetchOffsets(t.Context(), "dlqctl-"+dlq)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatal(err)
	}
	if len(offs) != 0 {
		t.Fatalf("peek committed offsets: %v", offs)
	}
}

func TestPeekSkipsAbortedTransactionsAndMarkers(t *testing.T) {
	c := newCluster(t)
	topic := strings.ToLower(testenv.UniqueName(t, "txn"))
	if _, err := c.adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	tx, err := kafka.NewClient(c.addr, kafka.Conn{}, kgo.TransactionalID(topic+"-tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	produce := func(val string, commit bool) {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte(val)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(t.Context(), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	produce("a", true)
	produce("aborted", false)
	produce("b", true)
	produce("aborted-at-the-end", false)

	msgs, plan := peekAll(t, c, topic, "")
	var vals []string
	for _, m := range msgs {
		vals = append(vals, string(m.Value))
	}
	if strings.Join(vals, ",") != "a,b" {
		t.Fatalf("read %v, want the committed records a,b only", vals)
	}
	// 4 records + 4 markers: the plan's count is only an upper bound.
	if plan.Pending() < 2 {
		t.Fatalf("pending upper bound %d below the 2 committed records", plan.Pending())
	}
}
