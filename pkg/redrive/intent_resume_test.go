package redrive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestResumeReportsTheKilledAttemptsUnconfirmedSends: a killed attempt's
// journal (as kill -9 leaves it) has a confirmed batch not yet deleted,
// the intents of two batches it had handed to SQS without recording the
// outcome, and one intent whose messages someone else took from the DLQ
// meanwhile. The resume deletes the confirmed batch without sending it,
// sends the unconfirmed ones again and reports exactly them as possibly
// delivered twice (with the destination, in the journal too), reports the
// vanished ones as sent, and leaves no intent open.
func TestResumeReportsTheKilledAttemptsUnconfirmedSends(t *testing.T) {
	env := testenv.Require(t)
	api := env.SQS(t)
	c := sqs.New(api, env.Region)
	ctx := ctxT(t, 3*time.Minute)
	dlqURL := createQueue(t, api, testenv.UniqueName(t, "idlq"), nil)
	destURL := createQueue(t, api, testenv.UniqueName(t, "idst"), nil)
	t.Cleanup(func() {
		for _, u := range []string{dlqURL, destURL} {
			_, _ = api.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	const n = 40
	var ids []string
	for b := 0; b < n/10; b++ {
		var es []types.SendMessageBatchRequestEntry
		for i := 0; i < 10; i++ {
			es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf(`{"order":%d}`, b*10+i))})
		}
		out, err := api.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: es})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("seeding: %v %v", err, out)
		}
		for _, s := range out.Successful {
			ids = append(ids, aws.ToString(s.MessageId))
		}
	}
	dlq, dest := resolve(t, c, dlqURL), resolve(t, c, destURL)
	state := t.TempDir()
	meta := redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()}
	// The killed attempt's journal: ids[0:10] confirmed (not yet deleted),
	// ids[10:23] handed to SQS by two workers, never confirmed; two ids
	// that are no longer in the DLQ, never confirmed either.
	j, err := redrive.CreateJournal(state, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Intend(dest.Name, ids[0:10]); err != nil {
		t.Fatal(err)
	}
	var recs []redrive.SentRecord
	for _, id := range ids[0:10] {
		recs = append(recs, redrive.SentRecord{Orig: id, Dest: dest.URL, DestID: "earlier-" + id, SHA: "00"})
	}
	if err := j.Sent(recs); err != nil {
		t.Fatal(err)
	}
	unconfirmed := ids[10:23]
	if err := j.Intend(dest.Name, unconfirmed[:10]); err != nil {
		t.Fatal(err)
	}
	if err := j.Intend(dest.Name, unconfirmed[10:]); err != nil {
		t.Fatal(err)
	}
	gone := []string{"taken-by-someone-1", "taken-by-someone-2"}
	if err := j.Intend(dest.Name, gone); err != nil {
		t.Fatal(err)
	}
	j.Close() // what was written is what a kill leaves: intents are fsynced before the send

	j2, err := redrive.OpenJournal(state, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	src := newUnselectedQueueSource(c, dlq, 30*time.Second, time.Second)
	res, err := redrive.Run(ctx, src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j2, Router: sqs.ToQueue(dest), Concurrency: 4})
	_ = src.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Resumed != 10 || res.Moved != n-10 {
		t.Fatalf("resume: complete %v, resumed %d, moved %d; want complete, 10 deleted without sending, %d moved", res.Complete, res.Resumed, res.Moved, n-10)
	}
	if res.MaybeTwice != len(unconfirmed) || res.MaybeTwiceResent != len(unconfirmed) {
		t.Fatalf("maybe_twice %d (resent %d), want %d: the unconfirmed sends still in the DLQ", res.MaybeTwice, res.MaybeTwiceResent, len(unconfirmed))
	}
	var got []string
	for _, m := range res.MaybeTwiceMessages {
		if m.Destination != dest.Name || m.Cause != redrive.CauseResent || m.Orig != m.ID {
			t.Errorf("maybe_twice_messages entry %+v; want destination %s, cause resent, orig = id", m, dest.Name)
		}
		got = append(got, m.ID)
	}
	want := append([]string(nil), unconfirmed...)
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reported %v, want the unconfirmed %v", got, want)
	}
	if res.UnconfirmedGone != 2 || len(res.UnconfirmedGoneMessages) != 2 || res.UnconfirmedGoneMessages[0].ID != gone[0] || res.UnconfirmedGoneMessages[1].Cause != redrive.CauseGone {
		t.Fatalf("unconfirmed_gone %d %+v, want the 2 vanished ids", res.UnconfirmedGone, res.UnconfirmedGoneMessages)
	}
	// The destination holds one copy of each of the 30 sent; each copy's
	// marker names its DLQ message id (what a consumer deduplicates on).
	copies := drain(t, api, destURL)
	byOrig := map[string]int{}
	for _, m := range copies {
		var mk record.Marker
		if err := json.Unmarshal([]byte(aws.ToString(m.MessageAttributes[record.MarkerAttribute].StringValue)), &mk); err != nil {
			t.Fatalf("copy without a readable marker: %v", err)
		}
		byOrig[mk.OriginalID]++
	}
	for _, id := range ids[10:] {
		if byOrig[id] != 1 {
			t.Errorf("%s: %d copies at the destination, want 1", id, byOrig[id])
		}
	}
	if len(copies) != n-10 {
		t.Errorf("%d copies at the destination, want %d", len(copies), n-10)
	}
	// The journal agrees: nothing left unconfirmed, the resends counted.
	runs, err := redrive.ListRuns(state)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	if r := runs[0]; r.Unconfirmed != 0 || r.MaybeTwice != len(unconfirmed) || r.Sent != n || r.Deleted != n {
		t.Fatalf("runs: sent %d deleted %d unconfirmed %d maybe_twice %d; want %d %d 0 %d", r.Sent, r.Deleted, r.Unconfirmed, r.MaybeTwice, n, n, len(unconfirmed))
	}
}

// TestResumeNamesTheKilledAttemptsRetriedSends: a killed attempt recorded a
// batch as sent, three of its copies marked maybe twice (the SDK sent them
// again after a lost answer), and died before deleting the batch and
// before its report. The resume deletes the batch without sending it and
// names those three as possibly delivered twice — nobody else could (the
// origins kill -9 test found ten such duplicates unnamed under load).
func TestResumeNamesTheKilledAttemptsRetriedSends(t *testing.T) {
	env := testenv.Require(t)
	api := env.SQS(t)
	c := sqs.New(api, env.Region)
	ctx := ctxT(t, 3*time.Minute)
	dlqURL := createQueue(t, api, testenv.UniqueName(t, "tdlq"), nil)
	destURL := createQueue(t, api, testenv.UniqueName(t, "tdst"), nil)
	t.Cleanup(func() {
		for _, u := range []string{dlqURL, destURL} {
			_, _ = api.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	var es []types.SendMessageBatchRequestEntry
	for i := 0; i < 10; i++ {
		es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf(`{"order":%d}`, i))})
	}
	out, err := api.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: es})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("seeding: %v %v", err, out)
	}
	var ids []string
	for _, s := range out.Successful {
		ids = append(ids, aws.ToString(s.MessageId))
	}
	dlq, dest := resolve(t, c, dlqURL), resolve(t, c, destURL)
	state := t.TempDir()
	meta := redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()}
	j, err := redrive.CreateJournal(state, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Intend(dest.Name, ids); err != nil {
		t.Fatal(err)
	}
	twice := map[string]bool{ids[2]: true, ids[5]: true, ids[7]: true}
	var recs []redrive.SentRecord
	for _, id := range ids {
		recs = append(recs, redrive.SentRecord{Orig: id, Dest: dest.URL, DestID: "earlier-" + id, SHA: "00", MaybeTwice: twice[id]})
	}
	if err := j.Sent(recs); err != nil {
		t.Fatal(err)
	}
	j.Close() // killed: the batch is sent, not deleted, and never reported

	j2, err := redrive.OpenJournal(state, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	src := newUnselectedQueueSource(c, dlq, 30*time.Second, time.Second)
	res, err := redrive.Run(ctx, src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j2, Router: sqs.ToQueue(dest), Concurrency: 2})
	_ = src.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Resumed != len(ids) || res.Moved != 0 {
		t.Fatalf("resume: complete %v, resumed %d, moved %d; want complete, all %d deleted without sending", res.Complete, res.Resumed, res.Moved, len(ids))
	}
	if res.MaybeTwice != len(twice) || res.MaybeTwiceResent != 0 || res.MaybeTwiceEarlier != len(twice) {
		t.Fatalf("maybe_twice %d (resent %d, earlier %d), want %d retried by the killed attempt", res.MaybeTwice, res.MaybeTwiceResent, res.MaybeTwiceEarlier, len(twice))
	}
	for _, m := range res.MaybeTwiceMessages {
		if !twice[m.ID] || m.Cause != redrive.CauseRetried || m.Destination != dest.URL {
			t.Errorf("maybe_twice_messages entry %+v; want one of %v, cause retried, destination %s", m, twice, dest.URL)
		}
	}
	if len(res.MaybeTwiceMessages) != len(twice) {
		t.Fatalf("named %d copies, want %d", len(res.MaybeTwiceMessages), len(twice))
	}
}
