package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/testenv"
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
	c := newCluster(t)
	topic := strings.ToLower(testenv.UniqueName(t, "handover"))
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
		for i := 0; i < 500; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(p, "-", i))})
		}
	}
	if err := prod.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	addr, group := c.addr.WithTopic(topic), "g-"+topic
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	opt := kafka.ConsumerOptions{SessionTimeout: 6 * time.Second}
	a, err := kafka.OpenConsumer(ctx, addr, kafka.Conn{}, group, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	// A alone reads until it has claimed records of both partitions, and
	// keeps one record of each that it read and did not claim.
	claimed := map[string]*kafka.Message{}
	spare := map[int32]*kafka.Message{}
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
	b, err := kafka.OpenConsumer(ctx, addr, kafka.Conn{}, group, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
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

func coversBoth(ms map[string]*kafka.Message) bool {
	seen := map[int32]bool{}
	for _, m := range ms {
		seen[m.Partition] = true
	}
	return len(seen) == 2
}
