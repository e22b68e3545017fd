package clitest

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestLostReceiveWaitDrainsWhatALostReceiveTook: a drain that holds what
// it receives (visibility 4 s) through a proxy that loses the answer of
// its first receive after the server applied it. Stopping at the first
// empty answers misses those messages (they are in flight, held by
// nobody); with LostReceiveWait it waits until they are visible again and
// receives every message.
func TestLostReceiveWaitDrainsWhatALostReceiveTook(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		p, err := faultproxy.New(e.SQSEndpoint)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c := sqs.NewFromConfig(e.AWSConfig(t.Context()), func(o *sqs.Options) { o.BaseEndpoint = aws.String(p.URL) })
		const n, hold = 25, 4
		for _, wait := range []bool{false, true} {
			_, url := FillQueue(t, e, "lostrcv", n)
			p.SetFaults(faultproxy.LostReceives(1, 1))
			seen := map[string]bool{}
			lost := NewLostReceiveWait(hold * time.Second)
			for empty := 0; empty < 2 || (wait && !lost.Stop(t, c, url, len(seen), &empty)); {
				out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: hold, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Messages) == 0 {
					empty++
					continue
				}
				empty = 0
				for _, m := range out.Messages {
					seen[aws.ToString(m.Body)] = true
				}
				if len(seen) == n {
					break
				}
			}
			switch {
			case !wait && len(seen) == n:
				t.Fatalf("without waiting the drain got all %d: the proxy lost no receive, the test shows nothing", n)
			case wait && len(seen) != n:
				t.Errorf("with LostReceiveWait the drain got %d of %d", len(seen), n)
			}
		}
	})
}
