package redrive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/queue"
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
	faulty := sqs.NewFromConfig(env.AWSConfig(context.Background()), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(proxy.URL)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 6; so.RateLimiter = ratelimit.None })
	})
	c := queue.New(faulty, env.Region)
	dlq := resolve(t, c, dlqURL)
	rec := resolve(t, c, recURL)

	res, _ := move(t, c, dlq, t.TempDir(), runCfg{router: redrive.ToQueue(rec), opt: redrive.Options{Concurrency: 4}})
	st := proxy.Stats()
	t.Logf("result: moved %d failed %d unknown %d sent-not-deleted %d errors %v; proxy: %s", res.Moved, res.Failed, res.Unknown, res.SentNotDeleted, res.Errors, st)
	if st.Fired[faultproxy.ResetAfter] == 0 || st.Fired[faultproxy.EntryFail] == 0 || st.Fired[faultproxy.Throttle] == 0 {
		t.Fatalf("the proxy did not inject the faults: %s", st)
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
}
