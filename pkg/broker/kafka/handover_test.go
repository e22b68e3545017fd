package kafka_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestRevokeWaitsForTheClaimedBatch: a member holding a batch claimed
// for publishing (its copies on their way, the commit behind the next
// poll, as a redrive runs) lets a rebalance through in that next poll. The
// partition going to the new member stays with it until the batch is
// acked, and its new owner starts past the batch: no record of it is read
// (and so produced) a second time, and no ack of it is lost. A record of
// the moved partition read but never claimed cannot be claimed once it
// moved (it is its new owner's to publish); one of the kept partition can.
func TestRevokeWaitsForTheClaimedBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a, claimed, spare, openB := claimedBothPartitions(t, ctx)
	b := openB()
	// B reads (settling nothing); A polls on, letting the rebalance in,
	// and leaves what it reads now unclaimed.
	var mu sync.Mutex
	var readByB []*kafka.Message
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			ms, _, _ := b.Poll(rctx, 50)
			mu.Lock()
			readByB = append(readByB, ms...)
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			_, _, _ = a.Poll(rctx, 20)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stop(); wg.Wait() }()
	// The group wants a partition for B; A's revoke waits for the batch.
	time.Sleep(3 * time.Second)
	mu.Lock()
	early := len(readByB)
	mu.Unlock()
	if early != 0 || len(a.Held()) != 2 {
		t.Fatalf("while A's claimed batch was unacked, B read %d record(s) and A held %d partition(s); want 0 read, A still holding both", early, len(a.Held()))
	}
	for _, m := range claimed {
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
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, m := range readByB {
		if _, twice := claimed[m.ID()]; twice {
			t.Fatalf("B read %s, which A had claimed and acked: its copy would be produced twice", m.ID())
		}
	}
	if n := a.LostAcks(); n != 0 {
		t.Fatalf("%d ack(s) came after their partition moved; want none", n)
	}
	var kept int32 = -1
	for p := range a.Held() {
		kept = p
	}
	for p, m := range spare {
		ok := a.Claim([]*kafka.Message{m})[0]
		if ok != (p == kept) {
			t.Fatalf("claim of %s (partition %d; A kept %d): %v; want a claim only of a partition A still holds", m.ID(), p, kept, ok)
		}
	}
	t.Logf("B read %d record(s), none claimed by A (%d claimed)", len(readByB), len(claimed))
}

// TestRevokeWaitForAClaimIsBounded: a claimed batch that is never acked
// (a destination that stalls) holds its partition only for the bounded
// wait; then the partition moves, and an ack that comes later is refused
// and counted (the run reports those records as sent and not removed).
func TestRevokeWaitForAClaimIsBounded(t *testing.T) {
	defer kafka.HandOverWait(time.Second)()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a, claimed, _, openB := claimedBothPartitions(t, ctx)
	b := openB()
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	var readByB atomic.Int64
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			ms, _, _ := b.Poll(rctx, 50)
			readByB.Add(int64(len(ms)))
		}
	}()
	go func() {
		defer wg.Done()
		for rctx.Err() == nil {
			_, _, _ = a.Poll(rctx, 20)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	deadline := time.Now().Add(45 * time.Second)
	for readByB.Load() == 0 || len(a.Held()) != 1 {
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			t.Fatalf("with the batch never acked, B read %d record(s) and A holds %d partition(s) after 45 s; want the partition moved once the wait ran out", readByB.Load(), len(a.Held()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	lost := 0
	for _, m := range claimed {
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

// claimedBothPartitions creates a two-partition topic of 1,000 records
// and opens member A of a group on it, which reads until it has claimed
// records of both partitions, and keeps one record of each that it read
// and did not claim. It returns a second member's opener.
func claimedBothPartitions(t *testing.T, ctx context.Context) (a *kafka.Consumer, claimed map[string]*kafka.Message, spare map[int32]*kafka.Message, openB func() *kafka.Consumer) {
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
	// A alone reads until it has claimed records of both partitions, and
	// keeps one record of each that it read and did not claim.
	claimed, spare = map[string]*kafka.Message{}, map[int32]*kafka.Message{}
	for len(spare) < 2 || len(claimed) == 0 || !coversBoth(claimed) {
		ms, done, err := a.Poll(ctx, 20)
		if err != nil || done {
			t.Fatalf("poll: done %v, %v", done, err)
		}
		var claim []*kafka.Message
		for _, m := range ms {
			if _, ok := spare[m.Partition]; !ok {
				spare[m.Partition] = m
				continue
			}
			claim = append(claim, m)
		}
		for i, ok := range a.Claim(claim) {
			if !ok {
				t.Fatalf("claim of %s refused while A holds both partitions", claim[i].ID())
			}
			claimed[claim[i].ID()] = claim[i]
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
	return a, claimed, spare, openB
}

func coversBoth(ms map[string]*kafka.Message) bool {
	seen := map[int32]bool{}
	for _, m := range ms {
		seen[m.Partition] = true
	}
	return len(seen) == 2
}
