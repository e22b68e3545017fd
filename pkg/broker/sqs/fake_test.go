package sqs

import (
	"time"

	"github.com/dlqctl/dlqctl/internal/sqsfake"
)

// fakeSQS is the shared in-memory SQS (internal/sqsfake) with one standard
// queue, "dlq", and the short helpers this package's unit tests use.
type fakeSQS struct {
	*sqsfake.SQS
	url string
}

func newFakeSQS() *fakeSQS {
	f := sqsfake.New(sqsfake.Options{})
	return &fakeSQS{SQS: f, url: f.AddQueue("dlq", false, nil)}
}

// put adds visible messages with the given ids.
func (f *fakeSQS) put(ids ...string) { f.Put(f.url, ids...) }

// receive receives up to max visible messages, hiding them for vis.
func (f *fakeSQS) receive(max int, vis time.Duration) []*Message {
	now := time.Now()
	var out []*Message
	for _, m := range f.Take(f.url, max, vis) {
		out = append(out, &Message{Record: Record{MessageID: *m.MessageId, Body: *m.Body}, ReceiptHandle: *m.ReceiptHandle, ReceivedAt: now})
	}
	return out
}

// expire ends the visibility of ids now (as if their timeout ran out).
func (f *fakeSQS) expire(ids ...string) { f.Expire(f.url, ids...) }

func (f *fakeSQS) isDeleted(id string) bool { return f.Deleted(f.url, id) }
func (f *fakeSQS) isVisible(id string) bool { return f.Visible(f.url, id) }
