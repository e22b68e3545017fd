package emulatorfacts

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestConcurrentDeletesDeleteEverything: DeleteMessageBatch calls at the
// same time, as a redrive's workers make them, delete every message they
// name. moto 5.2.1 rebuilds a queue's message list in delete_message
// without a lock, so two deletes at once could each write back a list that
// still holds the other's message: a deleted message came back, in flight
// and then visible (a CI run's archive --delete left 10 "in flight" after
// deleting all 60). The stack runs moto_server with that method under the
// queue's own lock (scripts/moto_server.py, docs/emulators.md row 28).
// Without it this test failed 3 runs of 3 with DLQCTL_EMULATOR_STRESS=1
// (20 deletes of 10 by 16 workers in a queue of 3,000: 1, 12 and 20 came
// back) and passed with it; the default size catches it only under load.
func TestConcurrentDeletesDeleteEverything(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "cdel", false, nil)
		// total messages in the queue (a delete's rebuild walks them all:
		// the longer the walk, the wider moto's race), n of them received
		// and deleted. The default size takes seconds and catches the race
		// on a loaded machine (make test); DLQCTL_EMULATOR_STRESS=1 is the
		// size that reproduces it on a quiet one (about 2 minutes on moto).
		total, n := 600, 200
		if os.Getenv("DLQCTL_EMULATOR_STRESS") != "" {
			total = 3000
		}
		fill(t, c, q, total)
		var handles []string
		for len(handles) < n {
			out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1})
			if err != nil {
				must(t, err)
			}
			for _, m := range out.Messages {
				handles = append(handles, aws.ToString(m.ReceiptHandle))
			}
		}
		batches := make(chan []string, len(handles)/10+1)
		for i := 0; i < n; i += 10 {
			batches <- handles[i : i+10]
		}
		close(batches)
		var wg sync.WaitGroup
		var lostMu sync.Mutex
		var lost error // a delete whose answer was lost (must, in the test's goroutine below)
		for range 16 {
			wg.Go(func() {
				for b := range batches {
					var es []sqstypes.DeleteMessageBatchRequestEntry
					for k, h := range b {
						es = append(es, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(k)), ReceiptHandle: aws.String(h)})
					}
					out, err := c.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: es})
					switch {
					case err != nil && isLost(err):
						lostMu.Lock()
						lost = err
						lostMu.Unlock()
					case err != nil || len(out.Failed) > 0:
						t.Errorf("delete: %v %v", err, out)
					}
				}
			})
		}
		wg.Wait()
		must(t, lost)
		if v, nv := queueCounts(t, c, q); nv != 0 || v != total-n {
			t.Fatalf("%d of %d messages received and deleted, and the queue holds %d visible and %d in flight; want %d and 0", n, total, v, nv, total-n)
		}
	})
}
