package kafka_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestRevokeWaitsForTheRecordsTheRunHolds: a member holding records it
// read and has not acked yet (a batch whose copies are on their way, its
// commit behind the next poll, as a redrive runs) lets a rebalance through
// in that next poll. The partition going to the new member stays with it
// until those records are acked, and its new owner starts past them: no
// record of them is read (and so produced) a second time, and no ack of
// them is lost. A record the member released (left pending: skipped,
// refused) moves with its partition: the new owner reads it.
func TestRevokeWaitsForTheRecordsTheRunHolds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a, held, left, openB := heldOnBothPartitions(t, ctx)
	b := openB()
	// B reads (acking nothing); A polls on, letting the rebalance in, and
	// releases what it reads now.
	var mu sync.Mutex
	readByB := map[string]bool{}
	stop := pollOn(ctx, a, b, func(ms []*kafka.Message) {
		mu.Lock()
		for _, m := range ms {
			readByB[m.ID()] = true
		}
		mu.Unlock()
	})
	defer stop()
	// The group wants a partition for B; A's revoke waits for the records.
	time.Sleep(3 * time.Second)
	mu.Lock()
	early := len(readByB)
	mu.Unlock()
	if early != 0 || len(a.Held()) != 2 {
		t.Fatalf("while A held unacked records, B read %d record(s) and A held %d partition(s); want 0 read, A still holding both", early, len(a.Held()))
	}
	for _, m := range held {
		if ok, err := a.Ack(m); !ok || err != nil {
			t.Fatalf("ack of %s: %v, %v; want it recorded (its partition waits for it)", m.ID(), ok, err)
		}
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		mu.Lock()
		n := len(readByB)
		mu.Unlock()
		if n > 0 && len(a.Held()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the ack, B read %d record(s) and A holds %d partition(s); want the group to move one partition to B", n, len(a.Held()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	mu.Lock()
	defer mu.Unlock()
	for id := range readByB {
		if _, twice := held[id]; twice {
			t.Fatalf("B read %s, which A held and acked: its copy would be produced twice", id)
		}
	}
	if n := a.LostAcks(); n != 0 {
		t.Fatalf("%d ack(s) came after their partition moved; want none", n)
	}
	var kept int32 = -1
	for p := range a.Held() {
		kept = p
	}
	for p, m := range left {
		if p != kept && !readByB[m.ID()] {
			t.Fatalf("%s, released by A on the partition that moved, was not read by its new owner", m.ID())
		}
	}
	t.Logf("B read %d record(s), none of the %d A held", len(readByB), len(held))
}

// TestRevokeWaitIsBounded: records held and never acked (a destination
// that stalls) keep their partition only for the bounded wait; then the
// partition moves, and an ack that comes later is refused and counted
// (the run reports those records as sent and not removed).
func TestRevokeWaitIsBounded(t *testing.T) {
	defer kafka.HandOverWait(time.Second)()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a, held, _, openB := heldOnBothPartitions(t, ctx)
	b := openB()
	var readByB atomic.Int64
	stop := pollOn(ctx, a, b, func(ms []*kafka.Message) { readByB.Add(int64(len(ms))) })
	deadline := time.Now().Add(45 * time.Second)
	for readByB.Load() == 0 || len(a.Held()) != 1 {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("with the records never acked, B read %d record(s) and A holds %d partition(s) after 45 s; want the partition moved once the wait ran out", readByB.Load(), len(a.Held()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	// What A still holds of the moved partition is not its to deliver any
	// more; what it holds of the kept one is.
	var kept int32 = -1
	for p := range a.Held() {
		kept = p
	}
	for _, m := range held {
		if still := a.StillHeld([]*kafka.Message{m})[0]; still != (m.Partition == kept) {
			t.Fatalf("%s (partition %d, A kept %d): still held %v", m.ID(), m.Partition, kept, still)
		}
	}
	lost := 0
	for _, m := range held {
		if ok, err := a.Ack(m); err != nil {
			t.Fatal(err)
		} else if !ok {
			lost++
		}
	}
	if lost == 0 || a.LostAcks() != lost {
		t.Fatalf("%d late ack(s) refused, %d counted; want the moved partition's acks refused and counted", lost, a.LostAcks())
	}
}

// heldOnBothPartitions creates a two-partition topic of 500 records each
// and opens member A of a group on it, which reads until it holds (read,
// not acked) records of both partitions; of each partition it releases
// the first record it read (left pending). It returns a second member's
// opener.
func heldOnBothPartitions(t *testing.T, ctx context.Context) (a *kafka.Consumer, held map[string]*kafka.Message, left map[int32]*kafka.Message, openB func() *kafka.Consumer) {
	t.Helper()
	c := newCluster(t)
	topic := twoPartitions(t, c, "handover", 500)
	addr, group := c.addr.WithTopic(topic), "g-"+topic
	opt := kafka.ConsumerOptions{SessionTimeout: 6 * time.Second}
	a, err := kafka.OpenConsumer(ctx, addr, kafka.Conn{}, group, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	held, left = map[string]*kafka.Message{}, map[int32]*kafka.Message{}
	for len(left) < 2 || !coversBoth(held) {
		ms, done, err := a.Poll(ctx, 20)
		if err != nil || done {
			t.Fatalf("poll: done %v, %v", done, err)
		}
		for _, m := range ms {
			if _, ok := left[m.Partition]; !ok {
				left[m.Partition] = m
				a.Release([]*kafka.Message{m})
				continue
			}
			held[m.ID()] = m
		}
	}
	openB = func() *kafka.Consumer {
		b, err := kafka.OpenConsumer(ctx, addr, kafka.Conn{}, group, opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		return b
	}
	return a, held, left, openB
}

// pollOn keeps members a and b polling until stop is called (stop waits
// for both), each releasing what it reads, so a revoke waits only for what
// the test itself holds; onB sees each of b's polls.
func pollOn(ctx context.Context, a, b *kafka.Consumer, onB func([]*kafka.Message)) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			ms, _, _ := b.Poll(rctx, 50)
			onB(ms)
			b.Release(ms)
		}
	}()
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			ms, _, _ := a.Poll(rctx, 20)
			a.Release(ms)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

func coversBoth(ms map[string]*kafka.Message) bool {
	seen := map[int32]bool{}
	for _, m := range ms {
		seen[m.Partition] = true
	}
	return len(seen) == 2
}
