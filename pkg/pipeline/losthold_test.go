package pipeline_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// gatedSink accepts every delivery at once and makes it durable only when
// gate is closed (an archive part still being written while its messages'
// holds are lost).
type gatedSink struct {
	recSink
	gate chan struct{}
}

func (s *gatedSink) Deliver(ctx context.Context, w int, key string, items []pipeline.Item, payloads []any) ([]pipeline.Outcome, pipeline.Commit) {
	outs, _ := s.recSink.Deliver(ctx, w, key, items, payloads)
	return outs, &slowCommit{done: s.gate}
}

// TestLostHoldReceivedAgainWhileInProgressIsNotDeliveredTwice: the
// heartbeat loses the hold of a FIFO group's three messages (SQS answers
// ReceiptHandleIsInvalid) while their copies wait for the sink's commit;
// they become visible and the run, still busy, receives them again. They
// must not be delivered a second time (an archive would hold them twice,
// and the second copy's delete would be reported as failed): each is a
// redelivery of a message in hand, counted (Duplicates), held under its
// new handle, with which the first delivery's ack deletes it. The run is
// complete: 3 delivered once, the queue empty.
func TestLostHoldReceivedAgainWhileInProgressIsNotDeliveredTwice(t *testing.T) {
	f, c := newFake(t)
	q := fifoDLQ(t, f, c, 1, 3)
	var losing atomic.Bool
	losing.Store(true)
	f.SetEntryFail(func(op, _ string) *types.BatchResultErrorEntry {
		if op == "ChangeMessageVisibilityBatch" && losing.Load() {
			return &types.BatchResultErrorEntry{Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true, Message: aws.String("The input receipt handle is invalid.")}
		}
		return nil
	})
	src := sqs.NewQueueSource(c, q, sqs.QueueSourceOptions{Visibility: 5 * time.Second, Wait: time.Second})
	sink := &gatedSink{gate: make(chan struct{})}
	id := f.Messages(q.URL)[0].ID
	go func() {
		defer close(sink.gate)
		deadline := time.Now().Add(20 * time.Second)
		for src.LeasesLost() < 3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		losing.Store(false)
		f.ExpireAll(q.URL) // their visibility ends: SQS hands them out again
		for f.ReceiveCount(q.URL, id) < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := run(t, src, sink, pipeline.Options{Workers: 2})

	if src.LeasesLost() != 3 || f.ReceiveCount(q.URL, id) < 2 {
		t.Fatalf("leases lost %d, receive count %d: the holds were not lost and the messages not received again as planned", src.LeasesLost(), f.ReceiveCount(q.URL, id))
	}
	delivered, _ := sink.bodies()
	checkGroupOrder(t, delivered) // fails on a second delivery
	if len(delivered) != 3 || !res.Complete || res.Delivered != 3 || res.NotAcked != 0 {
		t.Fatalf("delivered %v, result %+v; want the 3 messages delivered once, complete", delivered, res)
	}
	if src.Duplicates() != 3 {
		t.Fatalf("duplicates %d; want the 3 messages received again counted", src.Duplicates())
	}
	if cnt := f.Counts(q.URL); cnt.Deleted != 3 || cnt.Visible+cnt.InFlight != 0 {
		t.Fatalf("queue after the run: %+v; want the 3 deleted", cnt)
	}
}
