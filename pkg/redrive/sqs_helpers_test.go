package redrive_test

import (
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// newQueueSource reads q through a lease for a redrive, decoding each
// record for selection (what cmd opens through the queue's endpoint).
func newQueueSource(c *sqs.Client, q *sqs.Queue, visibility, wait time.Duration) *sqs.QueueSource {
	return sqs.NewQueueSource(c, q, sqs.QueueSourceOptions{Visibility: visibility, Wait: wait, Decode: inspect.Decode})
}

// newUnselectedQueueSource is newQueueSource decoding only the marker.
func newUnselectedQueueSource(c *sqs.Client, q *sqs.Queue, visibility, wait time.Duration) *sqs.QueueSource {
	return sqs.NewQueueSource(c, q, sqs.QueueSourceOptions{Visibility: visibility, Wait: wait, Decode: inspect.DecodeMarker})
}

// capsOf is the capabilities of the queue a source reads (the zero value
// for a source that is not a queue).
func capsOf(src broker.Source) broker.Capabilities {
	if qs, ok := src.(interface{ Queue() *sqs.Queue }); ok {
		return sqs.Capabilities(qs.Queue().FIFO)
	}
	return broker.Capabilities{}
}

// fakeRedrive resolves the fake's DLQ and destination queues and opens a
// redrive journal for a run out of the DLQ (closed with the test).
func fakeRedrive(t *testing.T, c *sqs.Client, dlqURL, destURL string) (dlq, dest *sqs.Queue, j *redrive.Journal) {
	t.Helper()
	var err error
	if dlq, err = c.Resolve(t.Context(), dlqURL); err != nil {
		t.Fatal(err)
	}
	if dest, err = c.Resolve(t.Context(), destURL); err != nil {
		t.Fatal(err)
	}
	if j, err = redrive.CreateJournal(t.TempDir(), redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return dlq, dest, j
}
