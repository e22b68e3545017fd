package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

func TestDrainReplaysToTheOriginalTopicAndLeavesUnpickedRecordsPending(t *testing.T) {
	c := newCluster(t)
	prefix, res := seed(t, c)
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	group := "dlqctl-" + dlq
	total := res.DeadLetters[dlq]

	before, _ := peekAll(t, c, orders, "")
	prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	router := kafka.NewRouter(c.adm, "")
	isTimeout := func(m *kafka.Message) bool {
		v, _ := m.Header("dlq_reason")
		return string(v) == "TIMEOUT"
	}
	_ = isTimeout
	isValidation := func(m *kafka.Message) bool {
		v, _ := m.Header("dlq_reason")
		return string(v) == "VALIDATION"
	}
	run := func(sel func(*kafka.Message) kafka.Decision) kafka.DrainStats {
		t.Helper()
		st, err := kafka.Drain(t.Context(), kafka.DrainOptions{
			Source: c.addr.WithTopic(dlq), Group: group, Select: sel, Batch: 4,
			Sink: kafka.ReplaySink(prod, router, "run-1"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// Run 1: replay only the VALIDATION failures; the rest stays pending.
	st := run(func(m *kafka.Message) kafka.Decision {
		if isValidation(m) {
			return kafka.Handle
		}
		return kafka.Leave
	})
	if st.Read != total || st.Handled+st.Left != total || st.Handled == 0 || st.Left == 0 {
		t.Fatalf("run 1: %+v, want %d read, split between handled and left", st, total)
	}
	after, _ := peekAll(t, c, orders, "")
	var copies []*kafka.Message
	for _, m := range after {
		if _, ok := m.Header(kafka.MarkerHeader); ok {
			copies = append(copies, m)
		}
	}
	if len(after)-len(before) != st.Handled || len(copies) != st.Handled {
		t.Fatalf("%d new records (%d with a marker) in %s, want %d", len(after)-len(before), len(copies), orders, st.Handled)
	}
	for _, m := range copies {
		if len(m.Key) == 0 {
			t.Fatalf("copy %s lost its key", m.ID())
		}
		for _, h := range m.Headers {
			if kafka.IsFailureHeader(h.Key) && h.Key != kafka.MarkerHeader {
				t.Fatalf("copy %s kept dead-letter header %s", m.ID(), h.Key)
			}
		}
		if _, ok := m.Header("traceparent"); !ok {
			t.Fatalf("copy %s lost its traceparent header", m.ID())
		}
		mk := kafka.ReplayMarker(m.Headers)
		if mk == nil || mk.Count != 1 || mk.RunID != "run-1" || !strings.HasPrefix(mk.OriginalID, dlq+"-") {
			t.Fatalf("copy %s marker %+v", m.ID(), mk)
		}
	}
	// The commit never passed the first pending record.
	plan, err := kafka.MakePlan(t.Context(), c.adm, dlq, group)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Pending() != int64(st.Left) {
		t.Fatalf("after run 1 the group has %d pending, want the %d left", plan.Pending(), st.Left)
	}
	pending, _ := peekAll(t, c, dlq, group)
	for _, m := range pending {
		if isValidation(m) {
			t.Fatalf("%s was replayed but is listed pending", m.ID())
		}
	}
	if len(pending) != st.Left {
		t.Fatalf("peek shows %d pending, want %d", len(pending), st.Left)
	}

	// Run 2 with the same selection sends nothing twice.
	st2 := run(func(m *kafka.Message) kafka.Decision {
		if isValidation(m) {
			return kafka.Handle
		}
		return kafka.Leave
	})
	if st2.Handled != 0 || st2.Read != st.Left {
		t.Fatalf("run 2: %+v, want nothing handled and only the %d pending read", st2, st.Left)
	}
	// Run 3 takes everything left; the group is then at the end.
	st3 := run(nil)
	if st3.Handled != st.Left {
		t.Fatalf("run 3 handled %d, want %d", st3.Handled, st.Left)
	}
	final, _ := peekAll(t, c, orders, "")
	if len(final)-len(before) != total {
		t.Fatalf("%d copies in all, want exactly one per dead letter (%d)", len(final)-len(before), total)
	}
	plan, _ = kafka.MakePlan(t.Context(), c.adm, dlq, group)
	if plan.Pending() != 0 {
		t.Fatalf("%d pending after replaying everything", plan.Pending())
	}
}

func TestRouterRefusesMissingDestinations(t *testing.T) {
	c := newCluster(t)
	r := kafka.NewRouter(c.adm, "")
	m := &kafka.Message{Topic: "dlt", Origin: kafka.Origin{Partition: -1, Offset: -1}}
	if _, err := r.Route(context.Background(), m); err == nil || !strings.Contains(err.Error(), "--to") {
		t.Fatalf("no origin: %v", err)
	}
	m.Origin.Topic = "no-such-topic-" + strings.ToLower(t.Name())
	if _, err := r.Route(context.Background(), m); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing topic: %v", err)
	}
}

func TestTwoProcessesSharePartitionsThroughTheGroup(t *testing.T) {
	c := newCluster(t)
	prefix := strings.ToLower(testenv.UniqueName(t, "k"))
	res, err := kafkaseed.Seed(t.Context(), c.cl, kafkaseed.Options{Prefix: prefix, Payments: 600, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	group := "dlqctl-" + payDLT
	var wg sync.WaitGroup
	stats := make([]kafka.DrainStats, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			defer prod.Close()
			stats[i], errs[i] = kafka.Drain(t.Context(), kafka.DrainOptions{
				Source: c.addr.WithTopic(payDLT), Group: group, Batch: 25,
				Sink: kafka.ReplaySink(prod, kafka.NewRouter(c.adm, ""), fmt.Sprintf("proc-%d", i)),
				// Slow each batch a little so the second process joins mid-run.
				Wait: func(ctx context.Context, n int) error { time.Sleep(5 * time.Millisecond); return nil },
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	copies, _ := peekAll(t, c, pay, "")
	seen := map[string]int{}
	for _, m := range copies {
		if mk := kafka.ReplayMarker(m.Headers); mk != nil {
			seen[mk.OriginalID]++
		}
	}
	want := res.DeadLetters[payDLT]
	if len(seen) != want {
		t.Fatalf("%d dead letters replayed, want %d (stats %+v)", len(seen), want, stats)
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	unacked := stats[0].Unacked + stats[1].Unacked
	if dups > unacked {
		t.Fatalf("%d duplicates, more than the %d records reported in flight across a rebalance", dups, unacked)
	}
	t.Logf("process 0: %+v; process 1: %+v; duplicates %d", stats[0], stats[1], dups)
	plan, _ := kafka.MakePlan(t.Context(), c.adm, payDLT, group)
	if plan.Pending() != 0 {
		t.Fatalf("%d pending after both runs", plan.Pending())
	}
}

func TestDrainExactlyOnceCommitsRecordsAndOffsetsTogether(t *testing.T) {
	c := newCluster(t)
	prefix, res := seed(t, c)
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	group := "dlqctl-" + payDLT
	prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{TransactionalID: "dlqctl-" + group})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	st, err := kafka.Drain(t.Context(), kafka.DrainOptions{Source: c.addr.WithTopic(payDLT), Group: group, Batch: 7, Txn: prod,
		Sink: kafka.ReplaySink(prod, kafka.NewRouter(c.adm, ""), "eos")})
	if err != nil {
		t.Fatal(err)
	}
	want := res.DeadLetters[payDLT]
	if st.Handled != want {
		t.Fatalf("handled %d of %d", st.Handled, want)
	}
	copies, _ := peekAll(t, c, pay, "") // read_committed: only committed transactions
	n := 0
	for _, m := range copies {
		if kafka.ReplayMarker(m.Headers) != nil {
			n++
		}
	}
	if n != want {
		t.Fatalf("%d committed copies, want %d", n, want)
	}
	plan, err := kafka.MakePlan(t.Context(), c.adm, payDLT, group)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Pending() != 0 {
		t.Fatalf("%d pending: the transactional offset commits did not land", plan.Pending())
	}
}
