package sqs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// TestSendBatchMarksEntriesAnAmbiguousRetryMayHaveDoubled: a
// SendMessageBatch whose answer is lost after SQS enqueued it (reset after,
// 500 after) is sent again by the SDK: a standard queue then holds the
// messages twice, and SendBatch marks exactly those entries MaybeTwice. A
// retry after a throttling answer (SQS did not act) marks nothing, nor does
// a FIFO queue (it drops the repeat by deduplication id). On both servers.
func TestSendBatchMarksEntriesAnAmbiguousRetryMayHaveDoubled(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		for _, tc := range []struct {
			name       string
			fault      faultproxy.Fault
			fifo       bool
			twice      bool
			wantCopies int
		}{
			{"reset-after", faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.ResetAfter, Limit: 1}, false, true, 8},
			{"500-after", faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.Status500After, Limit: 1}, false, true, 8},
			{"throttled", faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.Throttle, Limit: 1}, false, false, 4},
			{"fifo-reset-after", faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.ResetAfter, Limit: 1}, true, false, 4},
		} {
			t.Run(tc.name, func(t *testing.T) {
				api, _, q := mkQueue(t, e, tc.fifo)
				p, err := faultproxy.New(e.SQSEndpoint, tc.fault)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				c := sqs.New(awssqs.NewFromConfig(e.AWSConfig(t.Context()), func(o *awssqs.Options) { o.BaseEndpoint = aws.String(p.URL) }), e.Region)
				var entries []sqs.SendEntry
				for i := range 4 {
					en := sqs.SendEntry{Body: fmt.Sprintf(`{"n":%d}`, i)}
					if tc.fifo {
						en.GroupID, en.DedupID = "g", fmt.Sprint(i)
					}
					entries = append(entries, en)
				}
				res, err := c.SendBatch(context.Background(), q, entries)
				if err != nil {
					t.Fatalf("SendBatch: %v", err)
				}
				for i, r := range res {
					if r.Err != nil || r.MessageID == "" || r.MaybeTwice != tc.twice {
						t.Errorf("entry %d: err %v, id %q, maybe twice %v; want sent, maybe twice %v", i, r.Err, r.MessageID, r.MaybeTwice, tc.twice)
					}
				}
				// Two empty long polls end the count — once the copies
				// expected are in, or after 15 s: a loaded server (moto
				// under a full test run) can answer a long poll empty
				// while it still stores the batch.
				got := 0
				start := time.Now()
				for empty := 0; empty < 2 || (got < tc.wantCopies && time.Since(start) < 15*time.Second); {
					out, err := api.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
					if err != nil {
						t.Fatal(err)
					}
					if len(out.Messages) == 0 {
						empty++
					}
					got += len(out.Messages)
				}
				if got != tc.wantCopies {
					t.Errorf("the queue holds %d copies, want %d (proxy: %s)", got, tc.wantCopies, p.Stats())
				}
			})
		}
	})
}
