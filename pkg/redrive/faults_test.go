package redrive_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestRedriveThroughFaultsKeepsExactAccounting runs a redrive through a
// proxy that throttles, answers 500/503, resets connections (also after the
// server applied a send), slows responses, and fails entries inside send and
// delete batches. Afterwards every message is in the DLQ or the recovery
// queue, none is lost, and duplicates stay within what the proxy made
// unknowable (sends whose answer it dropped).
func TestRedriveThroughFaultsKeepsExactAccounting(t *testing.T) {
	env := testenv.Require(t)
	api := env.SQS(t)
	const n = 400
	dlqURL := createQueue(t, api, testenv.UniqueName(t, "fdlq"), nil)
	recURL := createQueue(t, api, testenv.UniqueName(t, "frec"), nil)
	bodies := map[string]bool{}
	mk := func(i int) string { return fmt.Sprintf(`{"order":"o-%04d","amount":%d}`, i, i) }
	for i := range n {
		bodies[mk(i)] = true
	}
	if err := seed.FillDLQ(ctxT(t, time.Minute), api, dlqURL, n, mk); err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(env.SQSEndpoint,
		faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.ResetAfter, Every: 6, Limit: 3},
		faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.EntryFail, Every: 5, EntryEvery: 3},
		faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.EntryFail, Every: 9, EntryEvery: 10, Limit: 2,
			EntryCode: "InvalidParameterValue", EntrySenderFault: true},
		faultproxy.Fault{Action: "DeleteMessageBatch", Kind: faultproxy.EntryFail, Every: 4, EntryEvery: 2},
		faultproxy.Fault{Kind: faultproxy.Throttle, Every: 7},
		faultproxy.Fault{Kind: faultproxy.Status500, Every: 11},
		faultproxy.Fault{Kind: faultproxy.Status503, Every: 13},
		faultproxy.Fault{Action: "ReceiveMessage", Kind: faultproxy.ResetBefore, Every: 8},
		faultproxy.Fault{Kind: faultproxy.Slow, Every: 9, Delay: 300 * time.Millisecond},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	// The same retry policy as dlqctl's Factory: 6 attempts, no client-side
	// retry quota.
	faulty := awssqs.NewFromConfig(env.AWSConfig(context.Background()), func(o *awssqs.Options) {
		o.BaseEndpoint = aws.String(proxy.URL)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 6; so.RateLimiter = ratelimit.None })
	})
	c := sqs.New(faulty, env.Region)
	dlq := resolve(t, c, dlqURL)

	stateDir := t.TempDir()
	j, err := redrive.CreateJournal(stateDir, redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	runOnce := func(c *sqs.Client, j *redrive.Journal) (*redrive.Result, error) {
		src := newQueueSource(c, resolve(t, c, dlqURL), 30*time.Second, time.Second)
		res, err := redrive.Run(ctxT(t, 2*time.Minute), src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(resolve(t, c, recURL)), Concurrency: 4})
		if cerr := src.Close(context.Background()); cerr != nil {
			t.Fatalf("close: %v", cerr)
		}
		if res == nil {
			t.Fatalf("run returned no result: %v", err)
		}
		return res, err
	}
	res, runErr := runOnce(c, j)
	st := proxy.Stats()
	t.Logf("result: moved %d failed %d unknown %d sent-not-deleted %d errors %v (run error %v); proxy: %s", res.Moved, res.Failed, res.Unknown, res.SentNotDeleted, res.Errors, runErr, st)
	if st.Fired[faultproxy.ResetAfter] == 0 || st.Fired[faultproxy.EntryFail] == 0 || st.Fired[faultproxy.Throttle] == 0 {
		t.Fatalf("the proxy did not inject the faults: %s", st)
	}
	if runErr != nil {
		// The faults can line up so that one call fails all its SDK retries:
		// the run then stops (the CLI exits 4). Nothing may be lost at that
		// point (the stopped run released what it held), and a resume of
		// the same run must finish the job without re-sending what was
		// journaled.
		j.Close()
		assertNoLoss(t, api, dlqURL, recURL, bodies, st.UnansweredSendEntries, true)
		j2, err := redrive.OpenJournal(stateDir, j.Meta().ID)
		if err != nil {
			t.Fatal(err)
		}
		defer j2.Close()
		res2, err := runOnce(sqs.New(api, env.Region), j2)
		if err != nil || res2.Err() != nil {
			t.Fatalf("resume after the stop: %v / %v", err, res2.Err())
		}
		left, inDest := assertNoLoss(t, api, dlqURL, recURL, bodies, proxy.Stats().UnansweredSendEntries, false)
		if left != 0 || inDest < n {
			t.Fatalf("after resume: %d left in the DLQ, %d in the destination", left, inDest)
		}
		return
	}
	// Completes, or stops with exit 4; never anything else.
	if err := res.Err(); err != nil && errs.Code(err) != errs.ExitPartial {
		t.Fatalf("run ended with %v (exit %d), want success or partial", err, errs.Code(err))
	}
	if res.Failed == 0 || errs.Code(res.Err()) != errs.ExitPartial {
		t.Fatalf("permanent entry failures must be reported (failed %d, err %v)", res.Failed, res.Err())
	}

	left := drain(t, api, dlqURL)
	moved := drain(t, api, recURL)
	inDLQ, inDest := map[string]int{}, map[string]int{}
	for _, m := range left {
		inDLQ[aws.ToString(m.Body)]++
	}
	dups := 0
	for _, m := range moved {
		b := aws.ToString(m.Body)
		inDest[b]++
		if inDest[b] > 1 {
			dups++
		}
	}
	for b := range bodies {
		if inDLQ[b] == 0 && inDest[b] == 0 {
			t.Fatalf("message lost: %s", b)
		}
		if inDLQ[b] > 1 {
			t.Fatalf("message duplicated inside the DLQ: %s", b)
		}
	}
	if len(left) != n-res.Moved-res.Resumed {
		t.Fatalf("DLQ holds %d, want %d - %d moved", len(left), n, res.Moved)
	}
	// The refused messages are exactly the ones left behind.
	if len(left) != res.Failed {
		t.Fatalf("%d messages left in the DLQ, the run reported %d refused", len(left), res.Failed)
	}
	// A copy exists twice (twice in the destination, or in the destination
	// and still in the DLQ) only when a send's answer was lost and the SDK
	// retried it: bounded by the entries of those sends.
	extra := dups
	for b := range inDLQ {
		if inDest[b] > 0 {
			extra++
		}
	}
	if extra > st.UnansweredSendEntries {
		t.Fatalf("%d extra copies, more than the %d send entries whose answer was lost", extra, st.UnansweredSendEntries)
	}
	// The run reports its possible duplicates, and they cover what the
	// destination received twice: every doubled copy is one the summary
	// counts and the journal marks maybe_twice (a send whose answer was
	// lost and that the SDK sent again). It may report more than happened
	// (a 5xx before SQS acted looks the same as one after).
	n2, recs := j.MaybeTwice()
	marked := map[string]bool{}
	for _, r := range recs {
		marked[r.SHA] = true
	}
	for b, k := range inDest {
		if k > 1 && !marked[sha256hex(b)] {
			t.Errorf("%s reached the destination %d times but the journal does not mark it maybe_twice", b, k)
		}
	}
	if res.MaybeTwice < dups || n2 < dups || (st.Fired[faultproxy.ResetAfter] > 0 && dups > 0 && res.MaybeTwice == 0) {
		t.Fatalf("the run reports %d possible duplicates (journal %d); the destination received %d copies twice", res.MaybeTwice, n2, dups)
	}
	t.Logf("possible duplicates reported: %d (journal %d); doubled in the destination: %d", res.MaybeTwice, n2, dups)
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// assertNoLoss checks that every body is in the DLQ or the destination,
// none twice in the DLQ, and that extra copies stay within the send entries
// whose answer was lost. With peek it looks without consuming (received
// messages are released); otherwise it drains both queues. It returns the
// number of messages left in the DLQ and in the destination.
func assertNoLoss(t *testing.T, api *awssqs.Client, dlqURL, destURL string, bodies map[string]bool, unanswered int, peek bool) (int, int) {
	t.Helper()
	read := func(url string) []string {
		var out []string
		if !peek {
			for _, m := range drain(t, api, url) {
				out = append(out, aws.ToString(m.Body))
			}
			return out
		}
		c := sqs.New(api, "")
		q := resolve(t, c, url)
		var held []*sqs.Message
		for empty := 0; empty < 3; {
			msgs, err := c.Receive(context.Background(), q, 10, 60*time.Second, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				empty++
				continue
			}
			empty = 0
			held = append(held, msgs...)
			for _, m := range msgs {
				out = append(out, m.Body)
			}
		}
		if err := c.Release(context.Background(), q, held); err != nil {
			t.Fatal(err)
		}
		return out
	}
	left, moved := read(dlqURL), read(destURL)
	inDLQ, inDest := map[string]int{}, map[string]int{}
	for _, b := range left {
		inDLQ[b]++
	}
	extra := 0
	for _, b := range moved {
		inDest[b]++
		if inDest[b] > 1 {
			extra++
		}
	}
	for b := range bodies {
		if inDLQ[b] == 0 && inDest[b] == 0 {
			t.Fatalf("message lost: %s", b)
		}
		if inDLQ[b] > 1 {
			t.Fatalf("message duplicated inside the DLQ: %s", b)
		}
		if inDLQ[b] > 0 && inDest[b] > 0 {
			extra++
		}
	}
	if extra > unanswered {
		t.Fatalf("%d extra copies, more than the %d send entries whose answer was lost", extra, unanswered)
	}
	return len(left), len(moved)
}

// TestRedriveStopsWhenTheDestinationFailsAndResumeFinishes: a send call that
// fails all of its retries (here six 503s in a row) stops the run — the
// batch's outcome is unknown, so it stays in the DLQ, and the CLI exits 4 —
// and a resume of the same run moves everything with no loss and, since
// the failed calls never reached the server, no duplicate.
func TestRedriveStopsWhenTheDestinationFailsAndResumeFinishes(t *testing.T) {
	env := testenv.Require(t)
	api := env.SQS(t)
	const n = 60
	dlqURL := createQueue(t, api, testenv.UniqueName(t, "sdlq"), nil)
	recURL := createQueue(t, api, testenv.UniqueName(t, "srec"), nil)
	bodies := map[string]bool{}
	mk := func(i int) string { return fmt.Sprintf(`{"stop":%d}`, i) }
	for i := range n {
		bodies[mk(i)] = true
	}
	if err := seed.FillDLQ(ctxT(t, time.Minute), api, dlqURL, n, mk); err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(env.SQSEndpoint, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.Status503, Every: 1, Limit: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	faulty := sqs.New(awssqs.NewFromConfig(env.AWSConfig(context.Background()), func(o *awssqs.Options) {
		o.BaseEndpoint = aws.String(proxy.URL)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 6; so.RateLimiter = ratelimit.None })
	}), env.Region)
	stateDir := t.TempDir()
	j, err := redrive.CreateJournal(stateDir, redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(c *sqs.Client, j *redrive.Journal) (*redrive.Result, error) {
		src := newQueueSource(c, resolve(t, c, dlqURL), 30*time.Second, time.Second)
		res, err := redrive.Run(ctxT(t, 2*time.Minute), src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(resolve(t, c, recURL)), Concurrency: 1})
		if cerr := src.Close(context.Background()); cerr != nil {
			t.Fatalf("close: %v", cerr)
		}
		if res == nil {
			t.Fatalf("no result: %v", err)
		}
		return res, err
	}
	res, runErr := run(faulty, j)
	if runErr == nil || res.Unknown == 0 || res.Moved != 0 {
		t.Fatalf("want a stopped run with an unknown batch and nothing moved; got err %v, %+v", runErr, res)
	}
	if left, moved := assertNoLoss(t, api, dlqURL, recURL, bodies, 0, true); left != n || moved != 0 {
		t.Fatalf("after the stop: %d in the DLQ, %d in the destination; want %d and 0", left, moved, n)
	}
	j.Close()
	j2, err := redrive.OpenJournal(stateDir, j.Meta().ID)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	res2, err := run(faulty, j2) // the proxy's faults are used up
	if err != nil || res2.Err() != nil || res2.Moved != n {
		t.Fatalf("resume: err %v / %v, moved %d of %d", err, res2.Err(), res2.Moved, n)
	}
	if left, moved := assertNoLoss(t, api, dlqURL, recURL, bodies, 0, false); left != 0 || moved != n {
		t.Fatalf("after resume: %d left in the DLQ, %d in the destination; want 0 and %d", left, moved, n)
	}
}
