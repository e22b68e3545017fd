package queue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// visibilityRecorder is a minimal API that records the visibility each
// ChangeMessageVisibilityBatch call sets, in the order SQS would apply
// them; the first call can be held until released by the test.
type visibilityRecorder struct {
	API
	mu      sync.Mutex
	applied []int32
	hold    chan struct{} // the first call waits on it
	entered chan struct{}
	first   bool
}

func (v *visibilityRecorder) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	v.mu.Lock()
	isFirst := !v.first
	v.first = true
	v.mu.Unlock()
	if isFirst && v.hold != nil {
		close(v.entered)
		<-v.hold // a slow call: SQS applies it whenever it arrives
	}
	v.mu.Lock()
	v.applied = append(v.applied, in.Entries[0].VisibilityTimeout)
	v.mu.Unlock()
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

// TestReleaseWaitsForAnExtensionInFlight: a heartbeat extension that is on
// its way to SQS when the holder releases (end of a scan, Ctrl-C) must not
// land after the release, or the message would stay hidden with nobody
// holding it.
func TestReleaseWaitsForAnExtensionInFlight(t *testing.T) {
	api := &visibilityRecorder{hold: make(chan struct{}), entered: make(chan struct{})}
	c := New(api, "us-east-1")
	l := NewLease(c, &Queue{URL: "u"}, 30*time.Second)
	l.Add(&Message{ReceiptHandle: "rh-1", ReceivedAt: time.Now()})

	hbCtx, stopHB := context.WithCancel(context.Background())
	extended := make(chan struct{})
	go func() { l.Extend(hbCtx); close(extended) }()
	<-api.entered // the extension is in flight
	stopHB()      // the holder stops the heartbeat...
	released := make(chan error)
	go func() { released <- l.ReleaseAll(context.Background()) }()
	select {
	case <-released:
		t.Fatal("ReleaseAll returned while an extension was still in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(api.hold) // ...and the slow extension finally lands
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	<-extended
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.applied) != 2 || api.applied[0] != 30 || api.applied[1] != 0 {
		t.Fatalf("visibility changes applied %v; want the extension (30) then the release (0)", api.applied)
	}
}

// TestExtendSkipsReleasedMessages: once released, a message is not
// extended (hidden) again by the next heartbeat.
func TestExtendSkipsReleasedMessages(t *testing.T) {
	api := &visibilityRecorder{}
	c := New(api, "us-east-1")
	l := NewLease(c, &Queue{URL: "u"}, 30*time.Second)
	m := &Message{ReceiptHandle: "rh-1", ReceivedAt: time.Now()}
	l.Add(m)
	if err := l.Release(context.Background(), []*Message{m}); err != nil {
		t.Fatal(err)
	}
	l.Extend(context.Background())
	if len(api.applied) != 1 || api.applied[0] != 0 || l.Len() != 0 || l.Lost() != 0 {
		t.Fatalf("applied %v, held %d, lost %d", api.applied, l.Len(), l.Lost())
	}
}
