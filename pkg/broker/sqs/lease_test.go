package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"
)

func newLeaseOnFake(t *testing.T, vis time.Duration) (*fakeSQS, *Client, *Lease) {
	t.Helper()
	f := newFakeSQS()
	c := New(f, "us-east-1")
	return f, c, NewLease(c, &Queue{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq"}, vis)
}

// noHandles fails the test when text contains any receipt handle the fake
// ever issued.
func noHandles(t *testing.T, f *fakeSQS, what, text string) {
	t.Helper()
	for _, h := range f.IssuedHandles() {
		if strings.Contains(text, h) || strings.Contains(text, h[:40]) {
			t.Fatalf("%s contains a receipt handle: %s", what, text)
		}
	}
}

// TestReleaseWaitsForAnExtensionInFlight: a heartbeat extension that is on
// its way to SQS when the holder releases (end of a scan, Ctrl-C) must not
// land after the release, or the message would stay hidden with nobody
// holding it.
func TestReleaseWaitsForAnExtensionInFlight(t *testing.T) {
	f, _, l := newLeaseOnFake(t, 30*time.Second)
	hold, entered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.SetBefore(func(op string, _ []string) {
		if op == "ChangeMessageVisibilityBatch" {
			once.Do(func() { close(entered); <-hold }) // a slow call: SQS applies it whenever it arrives
		}
	})
	f.put("m1")
	l.Add(f.receive(10, 30*time.Second)...)

	hbCtx, stopHB := context.WithCancel(context.Background())
	extended := make(chan struct{})
	go func() { l.extend(hbCtx, 0); close(extended) }()
	<-entered // the extension is in flight
	stopHB()  // the holder stops the heartbeat...
	released := make(chan error)
	go func() { released <- l.ReleaseAll(context.Background()) }()
	select {
	case <-released:
		t.Fatal("ReleaseAll returned while an extension was still in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold) // ...and the slow extension finally lands
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	<-extended
	if got := strings.Join(f.VisChanges(), " "); got != "m1=30 m1=0" {
		t.Fatalf("visibility changes applied %q; want the extension (30) then the release (0)", got)
	}
	if !f.isVisible("m1") {
		t.Fatal("m1 is not visible after ReleaseAll")
	}
}

// TestExtendSkipsReleasedMessages: once released, a message is not
// extended (hidden) again by the next heartbeat.
func TestExtendSkipsReleasedMessages(t *testing.T) {
	f, _, l := newLeaseOnFake(t, 30*time.Second)
	f.put("m1")
	msgs := f.receive(10, 30*time.Second)
	l.Add(msgs...)
	if err := l.Release(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	l.extend(context.Background(), 0)
	if got := strings.Join(f.VisChanges(), " "); got != "m1=0" || l.Len() != 0 || l.Lost() != 0 || !f.isVisible("m1") {
		t.Fatalf("applied %q, held %d, lost %d", got, l.Len(), l.Lost())
	}
}

// TestDeleteWaitsOnlyForExtensionsOfItsMessages: a delete of a message whose
// extension is in flight waits for it (the extension would otherwise land on
// a deleted message and report a lost lease); a delete of another message
// does not wait for the whole heartbeat pass, and the pass then leaves the
// deleted message out.
func TestDeleteWaitsOnlyForExtensionsOfItsMessages(t *testing.T) {
	f, c, l := newLeaseOnFake(t, 30*time.Second)
	c.BatchConcurrency = 1
	var ids []string
	for i := range 11 {
		ids = append(ids, fmt.Sprintf("m%02d", i))
	}
	f.put(ids...)
	msgs := f.receive(10, 30*time.Second)
	msgs = append(msgs, f.receive(10, 30*time.Second)...)
	for i, m := range msgs { // m00 expires first, m10 last: m10 is in the second chunk
		m.ReceivedAt = m.ReceivedAt.Add(time.Duration(i-20) * time.Second)
	}
	l.Add(msgs...)
	hold, entered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.SetBefore(func(op string, _ []string) {
		if op == "ChangeMessageVisibilityBatch" {
			once.Do(func() { close(entered); <-hold })
		}
	})
	extended := make(chan struct{})
	go func() { l.extend(context.Background(), 0); close(extended) }()
	<-entered

	if res := l.Delete(context.Background(), msgs[10:]); len(res) != 0 {
		t.Fatalf("delete of m10: %v", res)
	}
	deleted := make(chan map[*Message]error)
	go func() { deleted <- l.Delete(context.Background(), msgs[:1]) }()
	select {
	case <-deleted:
		t.Fatal("Delete of m00 returned while its extension was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	if res := <-deleted; len(res) != 0 {
		t.Fatalf("delete of m00: %v", res)
	}
	<-extended
	if !f.isDeleted("m00") || !f.isDeleted("m10") || l.Lost() != 0 || l.Len() != 9 {
		t.Fatalf("m00 deleted %v, m10 deleted %v, lost %d, held %d", f.isDeleted("m00"), f.isDeleted("m10"), l.Lost(), l.Len())
	}
	for _, ch := range f.VisChanges() {
		if strings.HasPrefix(ch, "m10=") {
			t.Fatalf("the deleted m10 was extended afterwards: %v", f.VisChanges())
		}
	}
}

// TestRedeliveryReplacesTheHandle: a message received again carries a new
// receipt handle; deleting with the old one "succeeds" on AWS without
// deleting. The lease keeps the newest and deletes and releases with it,
// whichever *Message the caller passes.
func TestRedeliveryReplacesTheHandle(t *testing.T) {
	f, c, l := newLeaseOnFake(t, 30*time.Second)
	q := l.q
	f.put("a", "b", "c")
	first := map[string]*Message{}
	for _, m := range f.receive(10, 30*time.Second) {
		first[m.MessageID] = m
		if red := l.Add(m); len(red) != 0 {
			t.Fatalf("first delivery reported as redelivered: %v", red)
		}
	}
	f.expire("a", "b", "c")
	again := map[string]*Message{}
	for _, m := range f.receive(10, 30*time.Second) {
		again[m.MessageID] = m
	}
	red := l.Add(again["a"], again["c"])
	if len(red) != 2 || red[0] != again["a"] || red[1] != again["c"] || l.Len() != 3 {
		t.Fatalf("redelivered %v, held %d; want a and c, 3 held", red, l.Len())
	}
	if l.Add(again["a"]) != nil {
		t.Fatal("adding the same delivery twice is not a redelivery")
	}

	// The hazard: a client-level delete with the stale handle of b reports
	// success, and b is still there.
	if failed, err := c.Delete(context.Background(), q, []*Message{first["b"]}); err != nil || len(failed) != 0 || f.isDeleted("b") {
		t.Fatalf("fake: stale delete failed=%v err=%v deleted=%v; want success without deleting", failed, err, f.isDeleted("b"))
	}

	// The lease deletes a with its newest handle although given the first copy.
	if res := l.Delete(context.Background(), []*Message{first["a"]}); len(res) != 0 || !f.isDeleted("a") || l.isHeld("a") {
		t.Fatalf("Delete(first copy of a) = %v, deleted %v, held %v", res, f.isDeleted("a"), l.isHeld("a"))
	}
	// Release of c with its first copy makes it visible (newest handle).
	if err := l.Release(context.Background(), []*Message{first["c"]}); err != nil || !f.isVisible("c") || l.isHeld("c") {
		t.Fatalf("Release(first copy of c) err=%v visible=%v held=%v", err, f.isVisible("c"), l.isHeld("c"))
	}
}

// TestLostLeaseIsNeverDeletedWithItsDeadHandle: when an extension finds a
// message no longer in flight under our handle (someone else received it),
// the lease marks it lost; Delete and Release then do not send its dead
// handle, and it is deleted only after it is received again.
func TestLostLeaseIsNeverDeletedWithItsDeadHandle(t *testing.T) {
	f, _, l := newLeaseOnFake(t, 30*time.Second)
	var lostIDs []string
	var lostErrs []error
	l.OnLost = func(m *Message, err error) { lostIDs = append(lostIDs, m.MessageID); lostErrs = append(lostErrs, err) }
	f.put("a", "b")
	msgs := f.receive(10, 30*time.Second)
	l.Add(msgs...)
	ma, mb := msgs[0], msgs[1]
	f.expire("a")
	f.receive(1, 30*time.Second) // another consumer takes a

	l.extend(context.Background(), 0)
	if len(lostIDs) != 1 || lostIDs[0] != "a" || !errors.Is(lostErrs[0], ErrLeaseLost) || !l.isLost("a") || l.isHeld("a") || !l.isHeld("b") || l.Lost() != 1 {
		t.Fatalf("lost %v (%v), IsLost(a)=%v Held(a)=%v Held(b)=%v Lost()=%d", lostIDs, lostErrs, l.isLost("a"), l.isHeld("a"), l.isHeld("b"), l.Lost())
	}
	noHandles(t, f, "OnLost error", lostErrs[0].Error())

	var sent []string
	f.SetBefore(func(op string, handles []string) { sent = append(sent, handles...) })
	res := l.Delete(context.Background(), []*Message{ma, mb})
	if len(res) != 1 || !errors.Is(res[ma], ErrLeaseLost) || !f.isDeleted("b") || f.isDeleted("a") {
		t.Fatalf("Delete = %v; a deleted %v, b deleted %v", res, f.isDeleted("a"), f.isDeleted("b"))
	}
	noHandles(t, f, "Delete error", res[ma].Error())
	if len(sent) != 1 || sent[0] != mb.ReceiptHandle {
		t.Fatalf("Delete sent %d handles; want only b's", len(sent))
	}
	if l.isLost("a") || l.Len() != 0 {
		t.Fatalf("after Delete: IsLost(a)=%v held=%d; want both forgotten", l.isLost("a"), l.Len())
	}

	// Release of a lost message sends nothing either.
	f.SetBefore(nil)
	f.expire("a")
	a2 := f.receive(1, 30*time.Second)[0] // we receive a again (new handle)
	f.expire("a")
	f.receive(1, 30*time.Second) // ...and lose it again
	l.Add(a2)
	l.extend(context.Background(), 0)
	if !l.isLost("a") {
		t.Fatal("a not marked lost the second time")
	}
	before := f.CallCount("ChangeMessageVisibilityBatch")
	if err := l.Release(context.Background(), []*Message{a2}); err != nil || f.CallCount("ChangeMessageVisibilityBatch") != before {
		t.Fatalf("Release of a lost message: err=%v, calls %d -> %d", err, before, f.CallCount("ChangeMessageVisibilityBatch"))
	}

	// Received again while the caller still has the lost delivery in hand
	// (nobody tried to delete or release it since): a redelivery — the
	// caller must not process it a second time — held under its new
	// handle, which the caller's Delete of its first delivery then uses.
	f.expire("a")
	a3 := f.receive(1, 30*time.Second)[0]
	l.Add(a2)
	l.extend(context.Background(), 0) // a2's handle is dead: lost again
	if red := l.Add(a3); len(red) != 1 || red[0] != a3 || l.isLost("a") || !l.isHeld("a") {
		t.Fatalf("re-received lost message: redelivered %v, IsLost %v, Held %v; want a redelivery, held", red, l.isLost("a"), l.isHeld("a"))
	}
	if res := l.Delete(context.Background(), []*Message{ma}); len(res) != 0 || !f.isDeleted("a") {
		t.Fatalf("Delete after receiving again = %v, deleted %v", res, f.isDeleted("a"))
	}

	// Received again after the caller was told the lease was lost (its
	// Delete refused): held normally, for the caller to process again.
	f.put("c")
	mc := f.receive(1, 30*time.Second)[0]
	l.Add(mc)
	f.expire("c")
	f.receive(1, 30*time.Second) // another consumer takes c
	l.extend(context.Background(), 0)
	if res := l.Delete(context.Background(), []*Message{mc}); !errors.Is(res[mc], ErrLeaseLost) {
		t.Fatalf("Delete of lost c = %v; want ErrLeaseLost", res)
	}
	f.expire("c")
	c2 := f.receive(1, 30*time.Second)[0]
	if red := l.Add(c2); len(red) != 0 || !l.isHeld("c") {
		t.Fatalf("c received again after its refused delete: redelivered %v, held %v; want held normally", red, l.isHeld("c"))
	}
}

// TestDeleteCallFailureKeepsMessagesHeld: when a delete call fails as a
// whole, its messages may or may not have been deleted and those of chunks
// never sent were not; all stay held (released at the end), and no error
// text carries a receipt handle even when SQS's error echoes one.
func TestDeleteCallFailureKeepsMessagesHeld(t *testing.T) {
	f, c, l := newLeaseOnFake(t, 30*time.Second)
	c.BatchConcurrency = 1
	var ids []string
	for i := range 25 {
		ids = append(ids, fmt.Sprintf("m%02d", i))
	}
	f.put(ids...)
	var msgs []*Message
	for range 3 {
		msgs = append(msgs, f.receive(10, 30*time.Second)...)
	}
	l.Add(msgs...)
	f.SetCallErr(func(op string, handles []string) error {
		if op != "DeleteMessageBatch" {
			return nil
		}
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "DeleteMessageBatch", Err: &smithy.GenericAPIError{
			Code: "InternalFailure", Message: fmt.Sprintf("internal error processing receipt handle %q", handles[0])}}
	})
	res := l.Delete(context.Background(), msgs)
	if len(res) != 25 || l.Len() != 25 {
		t.Fatalf("%d failures, %d held; want 25 and 25", len(res), l.Len())
	}
	var sentErr, unsent int
	for m, err := range res {
		noHandles(t, f, "Delete error", err.Error())
		var ce *CallError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: %v is not a *CallError", m.MessageID, err)
		}
		if ce.Sent {
			sentErr++
			if !strings.Contains(err.Error(), "may or may not have been deleted") {
				t.Fatalf("sent: %v", err)
			}
		} else {
			unsent++
		}
	}
	if sentErr != 10 || unsent != 15 {
		t.Fatalf("%d sent, %d not sent; want the first chunk sent and the rest not", sentErr, unsent)
	}
	f.SetCallErr(nil)
	if err := l.ReleaseAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !f.isVisible(id) {
			t.Fatalf("%s not visible after ReleaseAll", id)
		}
	}
}

// TestRunKeepsUpWhenAPassIsSlow: with a slow link and many messages a pass
// takes longer than a third of the visibility; the hook reports it and the
// heartbeat starts the next pass at once, so nothing becomes visible.
func TestRunKeepsUpWhenAPassIsSlow(t *testing.T) {
	f, c, l := newLeaseOnFake(t, 5*time.Second) // a pass is due every 1.67 s
	c.BatchConcurrency = 1
	f.SetDelay(40 * time.Millisecond) // 50 calls: ~2 s per pass
	var ids []string
	for i := range 500 {
		ids = append(ids, fmt.Sprintf("m%03d", i))
	}
	f.put(ids...)
	for range 50 {
		l.Add(f.receive(10, 5*time.Second)...)
	}
	slow := make(chan int, 10)
	l.OnSlowExtend = func(took time.Duration, n int) { slow <- n }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	for range 2 {
		if n := <-slow; n != 500 {
			t.Fatalf("slow pass extended %d; want 500", n)
		}
	}
	cancel()
	<-done
	for _, id := range ids {
		if f.isVisible(id) {
			t.Fatalf("%s became visible while held", id)
		}
	}
	if l.Lost() != 0 {
		t.Fatalf("%d leases lost", l.Lost())
	}
}
