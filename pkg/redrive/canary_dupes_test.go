package redrive_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/sqsfake"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// A DLQ often holds two messages with one body (a producer's retry, an
// at-least-once duplicate). A canary moves one; the other, sent long
// before the run, stays: it is not a copy that came back without its
// marker, so the canary passes (it failed before: the body matched). A
// marker-less message with that body sent during the run is a return.
func TestCanaryTellsAnOlderDuplicateFromAReturn(t *testing.T) {
	f := sqsfake.New(sqsfake.Options{})
	c := sqs.New(f, "us-east-1")
	dlqURL := f.AddQueue("orders-dlq", false, nil)
	destURL := f.AddQueue("orders", false, nil)
	old := time.Now().Add(-2 * time.Hour)
	f.Send(dlqURL, sqsfake.Message{ID: "first", Body: `{"orderId":42}`, SentAt: old}, sqsfake.Message{ID: "again", Body: `{"orderId":42}`, SentAt: old.Add(time.Second)})
	ctx := context.Background()
	dlq, dest, j := fakeRedrive(t, c, dlqURL, destURL)
	src := newUnselectedQueueSource(c, dlq, 30*time.Second, time.Second)
	res, err := redrive.Run(ctx, src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(dest), Max: 1, Concurrency: 1})
	_ = src.Close(ctx)
	if err != nil || res.Moved != 1 {
		t.Fatalf("canary move: moved %d, %v", res.Moved, err)
	}
	ep := sqs.NewEndpoint(c, dlq)
	opt := redrive.VerifyOptions{For: 50 * time.Millisecond, Poll: 10 * time.Millisecond, Visibility: time.Second}
	v, err := redrive.VerifyCanary(ctx, ep, j, 1, nil, nil, opt)
	if err != nil || !v.Pass {
		t.Fatalf("an older duplicate of the canary's body left in the DLQ: %+v, %v; want PASS", v, err)
	}
	// Its copy back without the marker, sent during the run.
	f.Send(dlqURL, sqsfake.Message{ID: "back", Body: `{"orderId":42}`})
	time.Sleep(1100 * time.Millisecond) // the first scan's hold on "again" ends
	v, err = redrive.VerifyCanary(ctx, ep, j, 1, nil, nil, opt)
	if err != nil || v.Pass || v.Returned != 1 || len(v.ReturnedIDs) != 1 || v.ReturnedIDs[0] != "back" {
		t.Fatalf("a marker-less copy sent during the run: %+v, %v; want FAIL with it returned", v, err)
	}
}
