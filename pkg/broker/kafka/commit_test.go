package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// commitFixture: a one-partition topic of n records and a member of a new
// group that has read and settled all of them, nothing committed yet.
func commitFixture(t *testing.T, n int) (*kafka.Consumer, cluster, string, string) {
	t.Helper()
	c := newCluster(t)
	topic := strings.ToLower(testenv.UniqueName(t, "commit"))
	if r, err := c.adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	for i := 0; i < n; i++ {
		if err := c.cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	group := "g-" + topic
	a, err := kafka.OpenConsumer(t.Context(), c.addr.WithTopic(topic), kafka.Conn{}, group, kafka.ConsumerOptions{SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	for got := 0; got < n; {
		ms, done, err := a.Poll(t.Context(), n)
		if err != nil || done {
			t.Fatalf("poll: done %v, %v after %d records", done, err, got)
		}
		for _, m := range ms {
			if ok, err := a.Ack(m); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		got += len(ms)
	}
	return a, c, topic, group
}

// TestCommitRacingANewGenerationIsTriedAgain: a commit the coordinator
// refuses because the group moved to a generation the member had not
// learned yet (ILLEGAL_GENERATION, what a second member joining mid-run
// causes) is sent again and lands: the run's batch does not fail and the
// group's commit covers every record.
func TestCommitRacingANewGenerationIsTriedAgain(t *testing.T) {
	a, c, topic, group := commitFixture(t, 10)
	defer kafka.StaleGenerations(2)()
	if err := a.Commit(t.Context()); err != nil {
		t.Fatalf("commit after two stale generations: %v; want it tried again and landed", err)
	}
	offs, err := c.adm.FetchOffsetsForTopics(t.Context(), group, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 10 {
		t.Fatalf("group's commit of partition 0: %+v (found %v); want offset 10", o, ok)
	}
}

// TestCommitRefusedForGoodSaysWhy: a commit that keeps being refused is
// given up when the caller's context ends, and the error names the group
// and the coordinator's answer; nothing is committed.
func TestCommitRefusedForGoodSaysWhy(t *testing.T) {
	a, c, topic, group := commitFixture(t, 3)
	defer kafka.StaleGenerations(1 << 30)()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err := a.Commit(ctx)
	if !errors.Is(err, kerr.IllegalGeneration) || !strings.Contains(err.Error(), group) {
		t.Fatalf("commit with a generation refused for good: %v; want ILLEGAL_GENERATION naming group %s", err, group)
	}
	offs, ferr := c.adm.FetchOffsetsForTopics(t.Context(), group, topic)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.At >= 0 {
		t.Fatalf("group's commit of partition 0 is %d; want none", o.At)
	}
}

// TestTxnCommitRacingANewGenerationIsTriedAgain: with --exactly-once, the
// offset commit inside a batch's transaction that races a generation
// change is sent again: the transaction commits, its copies are visible
// once to a read_committed consumer and the group moved past them.
func TestTxnCommitRacingANewGenerationIsTriedAgain(t *testing.T) {
	inc := seedPayments(t)
	c, pay, total, ep, dest, target := inc.c, inc.pay, inc.total, inc.ep, inc.dest, inc.target
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := broker.TxnOpener(dest).OpenTxnPublisher(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := src.Next(t.Context(), 5)
	if err != nil || len(ms) == 0 {
		t.Fatalf("first batch: %d messages, %v", len(ms), err)
	}
	batch := make([]broker.Outgoing, len(ms))
	for i, m := range ms {
		batch[i], _ = pub.Prepare(m.Record, target, broker.CopyOptions{RunID: "txn-stale"})
	}
	restore := kafka.StaleGenerations(2)
	results, err := pub.PublishRemoving(t.Context(), target, batch, ms)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("entry %d: %v; want the transaction committed after the commit was sent again", i, r.Err)
		}
	}
	for i, err := range src.Ack(t.Context(), ms) {
		if err != nil {
			t.Fatalf("Ack of entry %d: %v", i, err)
		}
	}
	_ = pub.Close(t.Context())
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, _ := ep.Depth(t.Context()); d.Ready != int64(total-len(ms)) {
		t.Fatalf("%d pending after one committed transaction of %d; want %d", d.Ready, len(ms), total-len(ms))
	}
	copies := committedCopies(t, c, pay)
	if len(copies) != len(ms) {
		t.Fatalf("a read_committed consumer sees copies of %d records, want %d", len(copies), len(ms))
	}
}
