package faultproxy

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// through returns an SDK client for e's SQS that goes through p.
func through(t *testing.T, e testenv.Env, p *Proxy) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(e.AWSConfig(t.Context()), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(p.URL)
	})
}

func newQueue(t *testing.T, c *sqs.Client, attrs map[string]string) string {
	t.Helper()
	q, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, "fp")), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	return aws.ToString(q.QueueUrl)
}

func sendN(t *testing.T, c *sqs.Client, url string, n int) {
	t.Helper()
	for i := 0; i < n; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String("m" + strconv.Itoa(j))})
		}
		out, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v %+v", err, out)
		}
	}
}

// TestSDKThroughProxy: aws-sdk-go-v2 speaks the SQS JSON protocol through
// the proxy to local-aws-sqs and to moto (moto routes by the signature's
// credential scope, which must survive the proxy), actions are recognised
// from X-Amz-Target, and EntryFail / ResetAfter / Latency act on real calls.
func TestSDKThroughProxy(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		p, err := New(e.SQSEndpoint,
			Fault{Action: "SendMessageBatch", Kind: EntryFail, EntryEvery: 3, Limit: 1, EntrySenderFault: true},
			Fault{Kind: Latency, Delay: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c := through(t, e, p)
		url := newQueue(t, c, nil)
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := range 6 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("b")})
		}
		out, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Successful) != 4 || len(out.Failed) != 2 || aws.ToString(out.Failed[0].Id) != "0" || aws.ToString(out.Failed[1].Id) != "3" {
			t.Fatalf("batch result %+v", out)
		}
		// The delete reaches the server, its answer is lost, the SDK
		// retries it (deleting twice with one handle succeeds).
		p.SetFaults(Fault{Action: "DeleteMessage", Kind: ResetAfter, Limit: 1})
		rec, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1})
		if err != nil || len(rec.Messages) != 1 {
			t.Fatalf("receive: %v %+v", err, rec)
		}
		if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: rec.Messages[0].ReceiptHandle}); err != nil {
			t.Fatalf("delete after a reset: %v", err)
		}
		st := p.Stats()
		if st.Requests["SendMessageBatch"] != 1 || st.Requests["ReceiveMessage"] != 1 || st.Requests["DeleteMessage"] != 2 || st.Fired[ResetAfter] != 1 || st.Fired[EntryFail] != 1 {
			t.Errorf("stats %s", st)
		}
	})
}

// TestLostReceiveWithTheSDKRetryer pins what the package comment says: a
// ReceiveMessage whose answer is lost after the server acted is retried by
// the SDK's standard retryer, the caller sees no error and other messages,
// and the lost batch stays in flight until its visibility timeout, then
// comes back with its receive count raised.
func TestLostReceiveWithTheSDKRetryer(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		direct := e.SQS(t)
		url := newQueue(t, direct, map[string]string{"VisibilityTimeout": "2"})
		sendN(t, direct, url, 15)

		p, _ := New(e.SQSEndpoint, LostReceives(1, 1))
		defer p.Close()
		c := through(t, e, p)
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			AttributeNames:              []sqstypes.QueueAttributeName{"All"},
		})
		if err != nil {
			t.Fatalf("the SDK should have retried the lost receive: %v", err)
		}
		attempts, _ := retry.GetAttemptResults(out.ResultMetadata)
		lost := p.Stats().LostReceivedMessages
		if len(attempts.Results) != 2 || lost != 10 || len(out.Messages) != 5 {
			t.Fatalf("attempts %d, lost %d, received %d: want 2 attempts, 10 lost, the other 5 received", len(attempts.Results), lost, len(out.Messages))
		}
		seen := map[string]bool{}
		for _, m := range out.Messages {
			seen[aws.ToString(m.MessageId)] = true
			direct.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
		// Nothing is visible until the lost batch's visibility expires.
		again, err := direct.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil || len(again.Messages) != 0 {
			t.Fatalf("the lost batch should be in flight: %v, %d messages visible", err, len(again.Messages))
		}
		var back []sqstypes.Message
		deadline := time.Now().Add(15 * time.Second)
		for len(back) < 10 && time.Now().Before(deadline) {
			r, err := direct.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 30,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
				AttributeNames:              []sqstypes.QueueAttributeName{"All"},
			})
			if err != nil {
				t.Fatal(err)
			}
			back = append(back, r.Messages...)
		}
		if len(back) != 10 {
			t.Fatalf("%d of the 10 lost messages came back after the visibility timeout", len(back))
		}
		for _, m := range back {
			if seen[aws.ToString(m.MessageId)] {
				t.Errorf("message %s was both received and lost", aws.ToString(m.MessageId))
			}
			if rc := m.Attributes["ApproximateReceiveCount"]; rc != "2" {
				t.Errorf("lost message came back with ApproximateReceiveCount %q, want 2", rc)
			}
		}
	})
}
