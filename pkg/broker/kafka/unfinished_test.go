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

// TestUnfinishedCountsAPartitionThatMovedAway: a member that was given
// both partitions of a topic and lost one to a second member (which never
// reads it) ends its run with the moved partition's pending records
// reported — read back from the group's commits — instead of "done and
// nothing left"; the partition it kept and settled counts nothing.
func TestUnfinishedCountsAPartitionThatMovedAway(t *testing.T) {
	c := newCluster(t)
	topic := twoPartitions(t, c, "moved", 1000)
	addr := c.addr.WithTopic(topic)
	group := "g-" + topic
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a, err := kafka.OpenConsumer(ctx, addr, kafka.Conn{}, group, kafka.ConsumerOptions{SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	// A alone: the group gives it both partitions; it takes one record.
	first, done, err := a.Poll(ctx, 1)
	if err != nil || done || len(first) != 1 || len(a.Held()) != 2 {
		t.Fatalf("first poll: %d records, done %v, %v, holding %d partitions", len(first), done, err, len(a.Held()))
	}
	a.Release(first)
	b, err := kafka.OpenConsumer(ctx, addr, kafka.Conn{}, group, kafka.ConsumerOptions{SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	// B joins and never reads. A reads one record at a time, leaving each
	// pending (released, not acked), until the group moves a partition to
	// B.
	deadline := time.Now().Add(30 * time.Second)
	for len(a.Held()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("B never got a partition (A holds %d)", len(a.Held()))
		}
		ms, _, err := a.Poll(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release(ms)
		time.Sleep(5 * time.Millisecond)
	}
	// Then A settles everything it reads of the partition it kept.
	for {
		ms, done, err := a.Poll(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		for _, m := range ms {
			if _, err := a.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	u, err := a.Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The moved partition's records, minus those A had in hand when it
	// moved (its caller's to count), are pending; the kept one is settled
	// except what A had in hand unsettled before the move (also the
	// caller's), so nothing is unread.
	if u.Moved <= 0 || u.Unread != 0 || u.LeftToOthers != 0 || len(u.Partitions) != 1 {
		t.Fatalf("unfinished %+v; want the moved partition's pending records as moved, nothing unread or left to others", u)
	}
	t.Logf("unfinished at the end: %+v", u)
}

// twoPartitions creates a two-partition topic named after the test and
// prefix, with perPartition records in each ("P-I" values), and returns
// its name.
func twoPartitions(t *testing.T, c cluster, prefix string, perPartition int) string {
	t.Helper()
	topic := strings.ToLower(testenv.UniqueName(t, prefix))
	if r, err := c.adm.CreateTopic(t.Context(), 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	prod, err := kafka.NewClient(c.addr, kafka.Conn{}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(p, "-", i))})
		}
	}
	if err := prod.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return topic
}
