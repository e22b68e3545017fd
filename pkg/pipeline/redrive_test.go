package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// The real redrive sink (send, journal, then delete) on the pipeline and
// the fake: its FIFO and per-entry failure paths.

// filterSelection is the selection --filter src builds.
func filterSelection(t *testing.T, src string) redrive.Selector {
	t.Helper()
	f, err := inspect.CompileFilter(src)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := classify.NewSelector(nil, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func redriveRun(t *testing.T, c *sqs.Client, src *sqs.QueueSource, dest *sqs.Queue, sel redrive.Selector) *redrive.Result {
	t.Helper()
	j, err := redrive.CreateJournal(t.TempDir(), redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive",
		Source: src.Name(), Destination: dest.Name, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := redrive.Run(ctx, src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(dest), Select: sel})
	if cerr := src.Close(context.Background()); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	if err != nil {
		t.Fatalf("redrive.Run: %v", err)
	}
	sum := res.Moved + res.Resumed + res.SkippedTotal() + res.Failed + res.Unknown + res.SentNotDeleted
	if res.Received < sum {
		t.Fatalf("redrive accounting: received %d < %d accounted", res.Received, sum)
	}
	return res
}

// TestBlockedGroupIsNamedWhenDeleteAnswersAreSlow: as above, with every
// delete's answer held for 150 ms after the server applied it. The server
// frees the group as soon as its message is deleted, so another worker
// receives the group's next message before the delete returns. That is
// not a server that ignores group locks (local-aws-sqs): the run must
// still name g3 as blocked and not call itself complete. Before the
// source counted the messages being deleted, it took that receive for
// one and reported the run complete (a CI run under load did the same
// without the delay).
func TestBlockedGroupIsNamedWhenDeleteAnswersAreSlow(t *testing.T) {
	f, c := newFake(t)
	q := fifoDLQ(t, f, c, 5, 20)
	dest := resolve(t, c, f.AddQueue("orders.fifo", true, nil))
	f.SetDeleteAnswered(func() { time.Sleep(150 * time.Millisecond) })
	src := newQueueSource(c, q, 30*time.Second, time.Second)
	res := redriveRun(t, c, src, dest, filterSelection(t, `.body != "g3-00"`))
	if res.Moved != 80 || res.Complete || len(res.BlockedGroups) != 1 || res.BlockedGroups[0] != "g3" || !strings.Contains(res.Note, "g3") {
		t.Fatalf("moved %d, complete %v, blocked groups %v, note %q; want 80 moved, g3 named as blocked, not complete", res.Moved, res.Complete, res.BlockedGroups, res.Note)
	}
	allVisible(t, f, q, 20)
}

// TestFilteredFIFORedriveNamesTheBlockedGroup: a filtered redrive of a
// FIFO DLQ that leaves g3's first message unselected moves every other
// group completely, in order, to a FIFO destination, moves nothing of g3
// (a g3 message received with its head is skipped as behind an unselected
// message; the rest cannot be received), and names g3 as blocked.
func TestFilteredFIFORedriveNamesTheBlockedGroup(t *testing.T) {
	f, c := newFake(t)
	q := fifoDLQ(t, f, c, 5, 20)
	dest := resolve(t, c, f.AddQueue("orders.fifo", true, nil))
	src := newQueueSource(c, q, 30*time.Second, time.Second)
	res := redriveRun(t, c, src, dest, filterSelection(t, `.body != "g3-00"`))

	var moved []string
	for _, m := range f.Messages(dest.URL) {
		if m.GroupID == "g3" {
			t.Fatalf("%s of the blocked group was moved", m.Body)
		}
		moved = append(moved, m.Body)
	}
	checkGroupOrder(t, moved) // the destination holds each group in order
	if len(moved) != 80 || res.Moved != 80 || res.Complete || res.Blocked == 0 ||
		res.Blocked+res.SkippedTotal() != 20 || len(res.BlockedGroups) != 1 || res.BlockedGroups[0] != "g3" {
		t.Fatalf("result %+v, destination holds %d; want 80 moved, g3 blocked", res, len(moved))
	}
	if res.Skipped[redrive.SkipFiltered] != 1 || res.SkippedTotal() != 1+res.Skipped[redrive.SkipGroupBlocked] {
		t.Fatalf("skipped %v", res.Skipped)
	}
	if !strings.Contains(res.Note, "g3") {
		t.Fatalf("note %q does not name the blocked group", res.Note)
	}
	allVisible(t, f, q, 20)
}

// TestRedriveRefusedEntryStaysInTheDLQ: the destination refuses one entry
// of a SendMessageBatch (a per-entry, non-retryable failure): it is counted
// failed, stays in the DLQ (visible after the run), nothing else is lost
// or duplicated, and the run is not complete.
func TestRedriveRefusedEntryStaysInTheDLQ(t *testing.T) {
	f, c := newFake(t)
	q := standardDLQ(t, f, c, 30)
	dest := resolve(t, c, f.AddQueue("orders", false, nil))
	f.SetSendFail(func(_ string, e types.SendMessageBatchRequestEntry) *types.BatchResultErrorEntry {
		if aws.ToString(e.MessageBody) == "m-13" {
			return &types.BatchResultErrorEntry{Code: aws.String("InvalidParameterValue"), SenderFault: true, Message: aws.String("refused")}
		}
		return nil
	})
	src := newQueueSource(c, q, 30*time.Second, time.Second)
	res := redriveRun(t, c, src, dest, nil)

	if res.Failed != 1 || res.Moved != 29 || res.Complete || res.Unknown != 0 || res.SentNotDeleted != 0 {
		t.Fatalf("result %+v; want 29 moved, 1 failed, not complete", res)
	}
	left := f.Messages(q.URL)
	if len(left) != 1 || left[0].Body != "m-13" || !left[0].Visible {
		t.Fatalf("left in the DLQ: %+v; want m-13, visible", left)
	}
	var got []string
	for _, m := range f.Messages(dest.URL) {
		got = append(got, m.Body)
	}
	checkOnce(t, got)
	if len(got) != 29 {
		t.Fatalf("destination holds %d; want 29", len(got))
	}
}
