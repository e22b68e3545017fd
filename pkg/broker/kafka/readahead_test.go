package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// consumeFresh opens a consuming read of a fresh DLT of n records.
func consumeFresh(t *testing.T, n int) (*kafka.Endpoint, broker.Source) {
	t.Helper()
	c := newCluster(t)
	dlt, _ := fillDLT(t, c, n)
	ep := openEndpoint(t, c, dlt, kafka.Config{})
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	return ep, src
}

// TestReadAheadHoldsTheNextBatchAndReleasesItAtClose: while the run
// handles the batch it took, the source has already read the next one
// (what keeps a redrive's reads off the produce's path), and holds it as
// it holds what it handed out. A run that ends there (--max, a guard)
// leaves that batch pending: the group's commit covers only what was
// acked, and the next run reads exactly the rest, each record once.
func TestReadAheadHoldsTheNextBatchAndReleasesItAtClose(t *testing.T) {
	ep, src := consumeFresh(t, 1200)
	first, err := src.Next(t.Context(), 100)
	if err != nil || len(first) == 0 {
		t.Fatalf("first read: %d record(s), %v", len(first), err)
	}
	// The next batch is read without another Next.
	deadline := time.Now().Add(30 * time.Second)
	for kafka.Holding(src) <= len(first) {
		if time.Now().After(deadline) {
			t.Fatalf("the source holds %d record(s) after handing out %d and before the next Next; want the next batch read ahead", kafka.Holding(src), len(first))
		}
		time.Sleep(10 * time.Millisecond)
	}
	ahead := kafka.Holding(src) - len(first)
	for _, err := range src.Ack(t.Context(), first) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	d, err := ep.Depth(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d.Ready != int64(1200-len(first)) {
		t.Fatalf("after acking %d record(s) (and %d read ahead, never taken), %d are pending; want %d", len(first), ahead, d.Ready, 1200-len(first))
	}
	src2, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	rest := readAll(t, src2)
	_ = src2.Close(t.Context())
	seen := map[string]bool{}
	for _, m := range first {
		seen[m.Record.MessageID] = true
	}
	for _, m := range rest {
		if seen[m.Record.MessageID] {
			t.Fatalf("the next run read %s again (acked, or read twice)", m.Record.MessageID)
		}
		seen[m.Record.MessageID] = true
	}
	if len(seen) != 1200 {
		t.Fatalf("the two runs read %d distinct record(s) of 1200", len(seen))
	}
}

// TestReadAheadStopsWithTheRun: once the run's context ends, Next
// returns at once, and what the source read ahead is released (nothing
// held when it closes).
func TestReadAheadStopsWithTheRun(t *testing.T) {
	ep, src := consumeFresh(t, 600)
	ctx, cancel := context.WithCancel(t.Context())
	first, err := src.Next(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if ms, err := src.Next(ctx, 100); err == nil || len(ms) != 0 {
		t.Fatalf("Next after the run's context ended: %d record(s), %v; want none and the context's error", len(ms), err)
	}
	_ = src.Release(t.Context(), first)
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := kafka.Holding(src); n != 0 {
		t.Fatalf("the closed source holds %d record(s); want none", n)
	}
	d, _ := ep.Depth(t.Context())
	if d.Ready != 600 {
		t.Fatalf("%d pending after a run that acked nothing; want 600", d.Ready)
	}
}

// TestTransactionalPublisherOwnsThePollsFromTheFirst: --exactly-once
// polls only between transactions, so its publisher must be opened
// before the source is read; opened after a read, it is refused (and the
// source reads on as it did).
func TestTransactionalPublisherOwnsThePollsFromTheFirst(t *testing.T) {
	c := newCluster(t)
	dlt, dest := fillDLT(t, c, 50)
	ep := openEndpoint(t, c, dlt, kafka.Config{})
	to := openEndpoint(t, c, dest, kafka.Config{})
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(t.Context())
	if _, err := src.Next(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	_, err = to.OpenTxnPublisher(t.Context(), src)
	if err == nil || !strings.Contains(err.Error(), "open the publisher first") {
		t.Fatalf("a transactional publisher opened after a read: %v; want it refused", err)
	}
}
