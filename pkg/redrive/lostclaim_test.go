package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// movedAway is a source whose every batch changed hands between its
// read and its publish (broker.Intender answering ErrLeaseLost): a Kafka
// partition that moved to another member of the group after the poll.
type movedAway struct{ broker.Source }

func (movedAway) Intend(string, []broker.Message) (bool, error) {
	return false, fmt.Errorf("its partition moved to another member: %w", broker.ErrLeaseLost)
}

func (movedAway) PublishedBefore(broker.Message) (string, bool, bool) { return "", false, false }

// TestABatchNoLongerTheRunsIsNotPublished: when the source says a batch
// is no longer the run's to publish, the mover sends none of it, gives it
// back and stops the run (not complete, the reason named): the new holder
// publishes it, so nothing reaches the destination twice.
func TestABatchNoLongerTheRunsIsNotPublished(t *testing.T) {
	api, c, truth := incident(t)
	dlq := resolve(t, c, truth.DLQ.URL)
	rec := resolve(t, c, createQueue(t, api, testenv.UniqueName(t, "recovery"), nil))
	j, err := redrive.CreateJournal(t.TempDir(), redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	inner := newQueueSource(c, dlq, 30*time.Second, time.Second)
	src := movedAway{inner}
	opt := redrive.Options{Publisher: sqs.NewPublisher(c), DestDepth: c.DestinationDepth, SourceCaps: capsOf(inner), Journal: j, Router: sqs.ToQueue(rec)}
	res, err := redrive.Run(ctxT(t, 2*time.Minute), src, opt)
	if cerr := inner.Close(context.Background()); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil && !errors.Is(err, broker.ErrLeaseLost) {
		t.Fatalf("run: %v", err)
	}
	why := fmt.Sprint(err)
	if res != nil {
		why += " " + res.Note
	}
	if res == nil || res.Moved != 0 || res.Complete || !strings.Contains(why, "partition moved") {
		t.Fatalf("result %+v, error %v; want nothing moved, not complete, the reason named", res, err)
	}
	if got := drain(t, api, rec.URL); len(got) != 0 {
		t.Fatalf("%d message(s) published from batches that were no longer the run's", len(got))
	}
	want := len(truth.InQueue(truth.DLQ.Name))
	if d := depth(t, c, dlq.URL); d.Visible+d.InFlight != want {
		t.Fatalf("DLQ holds %+v; want all %d still there", d, want)
	}
}
