package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestDeleteRetriesOnlyRetryableEntries(t *testing.T) {
	f := newFakeSQS()
	c := New(f, "us-east-1")
	f.put("m0", "m1", "m2", "m3", "m4")
	msgs := f.receive(10, 30*time.Second)
	var mu sync.Mutex
	failedOnce := false
	f.SetEntryFail(func(op, h string) *types.BatchResultErrorEntry {
		mu.Lock()
		defer mu.Unlock()
		switch h {
		case msgs[1].ReceiptHandle: // a server error, once
			if !failedOnce {
				failedOnce = true
				return &types.BatchResultErrorEntry{Code: aws.String("InternalError"), SenderFault: false}
			}
		case msgs[2].ReceiptHandle:
			return &types.BatchResultErrorEntry{Code: aws.String("AccessDenied"), SenderFault: true}
		}
		return nil
	})
	f.expire("m3")
	f.receive(1, 30*time.Second)          // m3 received by someone else: our handle is stale
	f.ForgetHandle(msgs[4].ReceiptHandle) // an unknown handle: ReceiptHandleIsInvalid

	failed, err := c.Delete(context.Background(), &Queue{URL: f.url}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !f.isDeleted("m0") || !f.isDeleted("m1") || f.isDeleted("m2") {
		t.Fatalf("m0 %v, m1 %v, m2 %v: the retryable entry must succeed on retry", f.isDeleted("m0"), f.isDeleted("m1"), f.isDeleted("m2"))
	}
	// m3's stale handle "succeeds" without deleting: exactly the hazard
	// Lease.Delete avoids by always using the newest handle.
	if len(failed) != 2 || failed[msgs[2]] == nil || !errors.Is(failed[msgs[4]], ErrLeaseLost) || f.isDeleted("m3") {
		t.Fatalf("failed = %v; want the sender fault and the invalid handle reported", failed)
	}
	if strings.Contains(failed[msgs[4]].Error(), msgs[4].ReceiptHandle[:40]) {
		t.Fatalf("error text carries the receipt handle: %v", failed[msgs[4]])
	}
	if n := f.CallCount("DeleteMessageBatch"); n != 2 {
		t.Fatalf("%d calls; want the batch plus one retry of the retryable entry", n)
	}
}

// holdMany receives n messages into a lease on f.
func holdMany(t *testing.T, f *fakeSQS, l *Lease, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%05d", i)
	}
	f.put(ids...)
	for got := 0; got < n; {
		msgs := f.receive(10, time.Minute)
		got += len(msgs)
		l.Add(msgs...)
	}
	return ids
}

// TestBatchesRunConcurrently: 2,000 held messages over a link adding 40 ms
// per call are extended, deleted and released with 16 calls in flight (200
// calls in ~13 rounds instead of 200 one after another).
func TestBatchesRunConcurrently(t *testing.T) {
	f, _, l := newLeaseOnFake(t, time.Minute)
	f.SetDelay(40 * time.Millisecond)
	ids := holdMany(t, f, l, 2000)

	l.extend(context.Background(), 0)
	if got, calls := f.MaxConcurrent(), f.CallCount("ChangeMessageVisibilityBatch"); got != DefaultBatchConcurrency || calls != 200 || len(f.VisChanges()) != 2000 {
		t.Fatalf("extension: %d calls in flight at most, %d calls, %d changes; want 16, 200, 2000", got, calls, len(f.VisChanges()))
	}

	// Delete half through the lease, release the rest.
	var del []*Message
	for _, id := range ids[:1000] {
		del = append(del, &Message{Record: Record{MessageID: id}})
	}
	f.ResetMaxConcurrent()
	if res := l.Delete(context.Background(), del); len(res) != 0 {
		t.Fatalf("Delete: %d failures", len(res))
	}
	if got := f.MaxConcurrent(); got != DefaultBatchConcurrency {
		t.Fatalf("delete: %d calls in flight at most; want 16", got)
	}
	f.ResetMaxConcurrent()
	if err := l.ReleaseAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.MaxConcurrent(); got != DefaultBatchConcurrency {
		t.Fatalf("release: %d calls in flight at most; want 16", got)
	}
	for i, id := range ids {
		if i < 1000 && !f.isDeleted(id) || i >= 1000 && !f.isVisible(id) {
			t.Fatalf("%s: deleted %v visible %v", id, f.isDeleted(id), f.isVisible(id))
		}
	}
}

func TestBatchConcurrencyIsBounded(t *testing.T) {
	f, c, l := newLeaseOnFake(t, time.Minute)
	c.BatchConcurrency = 3
	f.SetDelay(5 * time.Millisecond)
	holdMany(t, f, l, 300)
	l.extend(context.Background(), 0)
	if got := f.MaxConcurrent(); got != 3 {
		t.Fatalf("%d calls in flight at most; want BatchConcurrency=3", got)
	}
}

// TestExtendPrioritisesClosestToExpiry: the first extension call carries
// the messages that expire first.
func TestExtendPrioritisesClosestToExpiry(t *testing.T) {
	f, c, l := newLeaseOnFake(t, time.Minute)
	c.BatchConcurrency = 1
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("m%02d", i))
	}
	f.put(ids...)
	var msgs []*Message
	for range 3 {
		msgs = append(msgs, f.receive(10, time.Minute)...)
	}
	for i, m := range msgs { // m29 was received first, m00 last
		m.ReceivedAt = m.ReceivedAt.Add(-time.Duration(i) * time.Second)
	}
	l.Add(msgs...)
	l.extend(context.Background(), 0)
	if len(f.VisCalls()) != 3 {
		t.Fatalf("%d calls; want 3", len(f.VisCalls()))
	}
	for _, id := range f.VisCalls()[0] {
		if id < "m20" {
			t.Fatalf("first call extended %v; want m20..m29 (closest to expiry)", f.VisCalls()[0])
		}
	}
}

func TestBatchDeadlineScalesWithWhatIsHeld(t *testing.T) {
	c := New(newFakeSQS(), "us-east-1")
	small, big := c.BatchDeadline(10), c.BatchDeadline(20000)
	// 20,000 messages: 2,000 calls in 125 rounds of 16.
	if small != 40*time.Second || big != 30*time.Second+125*10*time.Second {
		t.Fatalf("deadlines %v and %v", small, big)
	}
}
