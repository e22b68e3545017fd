package emulatorfacts

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestConcurrentReceivesLoseNothing: 12 receivers take a 400-message queue
// apart at the same time (as a redrive's workers do), each message held
// for 5 minutes. AWS hands each message to one receive and answers every
// receive. moto 5.2.1's receive_message walks the queue's set of pending
// messages while another receive adds to it: "Set changed size during
// iteration", an HTTP 500 after it had marked messages received, so those
// messages stayed in flight with nobody holding them (and the SDK's retry
// of the 500 found them gone). The stack runs moto with receives under the
// queue's own lock (scripts/moto_server.py, docs/emulators.md row 29): no
// error, and every message received exactly once.
func TestConcurrentReceivesLoseNothing(t *testing.T) {
	facts(t, func(t *testing.T, e testenv.Env, c *sqs.Client) {
		q := mkQueue(t, c, "crcv", false, nil)
		const total = 400
		fill(t, c, q, total)
		var mu sync.Mutex
		got := map[string]int{}
		var lost error
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				for empty := 0; empty < 3; {
					out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, VisibilityTimeout: 300})
					mu.Lock()
					switch {
					case err != nil && isLost(err):
						lost = err
					case err != nil:
						t.Errorf("receive: %v", err)
					case len(out.Messages) == 0:
						empty++
					default:
						empty = 0
						for _, m := range out.Messages {
							got[aws.ToString(m.Body)]++
						}
					}
					stop := lost != nil || err != nil
					mu.Unlock()
					if stop {
						return
					}
				}
			})
		}
		wg.Wait()
		must(t, lost)
		twice := 0
		for _, n := range got {
			if n > 1 {
				twice++
			}
		}
		_, inFlight := queueCounts(t, c, q)
		expect(t, e, "messages received (of 400), received twice, and in flight after 12 concurrent receivers", [3]int{len(got), twice, inFlight}, both([3]int{total, 0, total}))
	})
}
