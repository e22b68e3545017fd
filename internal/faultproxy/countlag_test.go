package faultproxy

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

func visibleOf(t *testing.T, c *sqs.Client, url string) (visible int, other string) {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	return v, out.Attributes["QueueArn"]
}

// TestCountLag: with a lag of d, GetQueueAttributes through the proxy
// answers the Approximate* counts as they were d ago — a queue watched
// empty and then filled still reads empty, then catches up after d; a
// queue first seen full keeps reading full for d after it was drained —
// while the other attributes are the upstream's. On both servers.
func TestCountLag(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		direct := e.SQS(t)
		p, err := New(e.SQSEndpoint)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		const lag = 1500 * time.Millisecond
		p.SetCountLag(lag)
		c := through(t, e, p)

		// Filled just before: watched empty, then filled.
		fresh := newQueue(t, direct, nil)
		p.Watch(fresh)
		sendN(t, direct, fresh, 7)
		filledAt := time.Now()
		if v, arn := visibleOf(t, c, fresh); v != 0 || arn == "" {
			t.Fatalf("just filled: lagged count %d (arn %q); want 0 and the real attributes", v, arn)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, _ := visibleOf(t, c, fresh)
			if v == 7 {
				if since := time.Since(filledAt); since < lag {
					t.Fatalf("the count caught up after %s, before the lag of %s", since, lag)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the lagged count never caught up: %d", v)
			}
			time.Sleep(100 * time.Millisecond)
		}

		// Drained just before: first seen full, then emptied. The drain
		// (5 receives and deletes) must end within the lag: on a loaded
		// machine it took more than 1.5 s, and a receive whose answer was
		// lost (moto under load, docs/emulators.md) leaves its messages in
		// flight for the queue's 30 s visibility (ci30: the drain took
		// 30.5 s against a lag of 5 s). So this part lags by 2 minutes;
		// nothing waits for it (the answer is the sample taken at Watch).
		const drainLag = 2 * time.Minute
		p.SetCountLag(drainLag)
		full := newQueue(t, direct, nil)
		sendN(t, direct, full, 5)
		// local-aws-sqs's counts themselves trail a send by a moment.
		waitCount(t, direct, full, 5)
		p.Watch(full)
		watched := time.Now()
		for got := 0; got < 5; {
			out, err := direct.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(full), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				if _, err := direct.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(full), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
				got++
			}
		}
		waitCount(t, direct, full, 0)
		if v, _ := visibleOf(t, c, full); v != 5 {
			t.Fatalf("just drained (%s after it was seen full): lagged count %d; want the 5 of before", time.Since(watched).Round(time.Millisecond), v)
		}
		if p.LaggedAnswers() == 0 {
			t.Fatal("no lagged answer counted")
		}

		// Lag 0: the upstream's counts.
		p.SetCountLag(0)
		if v, _ := visibleOf(t, c, full); v != 0 {
			t.Fatalf("without lag: count %d; want 0", v)
		}
	})
}

func waitCount(t *testing.T, c *sqs.Client, url string, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := visibleOf(t, c, url)
		if v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("direct count %d, want %d", v, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
