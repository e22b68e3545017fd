package emulatorfacts

import (
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// expect logs what e's server did and fails when it differs from what
// docs/emulators.md says that server does (want has one entry per Kind).
func expect(t *testing.T, e testenv.Env, what string, got any, want map[testenv.Kind]any) {
	t.Helper()
	t.Logf("%s on %s: %v", what, e.Kind, got)
	w, ok := want[e.Kind]
	if !ok {
		t.Errorf("%s: no documented value for %s (observed %v)", what, e.Kind, got)
		return
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("%s on %s = %#v, docs/emulators.md says %#v", what, e.Kind, got, w)
	}
}

// both is a want map with one value for both servers.
func both(v any) map[testenv.Kind]any {
	return map[testenv.Kind]any{testenv.KindLocal: v, testenv.KindMoto: v}
}

// sqsClient is e's SQS client without the SDK's retries: a fact is what
// the server answered to one request. A retried request whose first answer
// was lost (a receive the server carried out, asked again) would make the
// server look as if it did something else — two receives' worth of
// messages in flight, a group locked by a receive nobody saw. Without
// retries such a call fails with its error, and the test says so instead
// of recording a wrong fact.
func sqsClient(t *testing.T, e testenv.Env) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(e.AWSConfig(t.Context()), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(e.SQSEndpoint)
		o.RetryMaxAttempts = 1
	})
}

// lostAnswer is raised by must (as a panic that facts recovers) when a
// call's answer was lost on the way back.
type lostAnswer struct{ err error }

// isLost reports whether err means the server's answer did not reach the
// client: the connection broke while the request or its answer was under
// way (with aws-sdk-go-v2 this shows as "StatusCode: 200 … deserialization
// failed … use of closed network connection" under load, aws-sdk-go-v2
// issue #2737). The server may or may not have carried the request out.
func isLost(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// must fails t with err (nil: nothing). A lost answer instead ends the
// attempt, and facts runs the scenario again.
func must(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if isLost(err) {
		panic(lostAnswer{err})
	}
	t.Fatal(err)
}

// facts runs fn on each server (testenv.ForEachServer) with a client that
// does not retry (sqsClient). When an answer is lost (must, code) the
// server's state is no longer known — a receive it carried out may hold
// messages nobody saw — so the attempt ends and fn runs again from the
// start on new queues, up to three times; each lost answer is logged.
func facts(t *testing.T, fn func(t *testing.T, e testenv.Env, c *sqs.Client)) {
	t.Helper()
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		for attempt := 1; ; attempt++ {
			err := factsAttempt(t, e, fn)
			if err == nil {
				return
			}
			if attempt == 3 {
				t.Fatalf("%s: the answer to a call was lost in three attempts in a row; last: %v", e.Kind, err)
			}
			t.Logf("attempt %d on %s: an answer was lost (%v); the scenario runs again on new queues", attempt, e.Kind, err)
		}
	})
}

func factsAttempt(t *testing.T, e testenv.Env, fn func(t *testing.T, e testenv.Env, c *sqs.Client)) (lost error) {
	defer func() {
		if r := recover(); r != nil {
			la, ok := r.(lostAnswer)
			if !ok {
				panic(r)
			}
			lost = la.err
		}
	}()
	fn(t, e, sqsClient(t, e))
	return nil
}

type queue struct {
	URL, ARN string
}

func mkQueue(t *testing.T, c *sqs.Client, prefix string, fifo bool, attrs map[string]string) queue {
	t.Helper()
	name := testenv.UniqueName(t, prefix)
	a := map[string]string{}
	for k, v := range attrs {
		a[k] = v
	}
	if fifo {
		name += ".fifo"
		a["FifoQueue"] = "true"
		if _, ok := a["ContentBasedDeduplication"]; !ok {
			a["ContentBasedDeduplication"] = "true"
		}
	}
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
	if err != nil {
		must(t, err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { c.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	ga, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		must(t, err)
	}
	return queue{URL: url, ARN: ga.Attributes["QueueArn"]}
}

// fill sends total messages "m0", "m1", … to q in batches of 10.
func fill(t *testing.T, c *sqs.Client, q queue, total int) {
	t.Helper()
	for i := 0; i < total; i += 10 {
		var es []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, total); j++ {
			es = append(es, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprint("m", j))})
		}
		out, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: es})
		must(t, err)
		if len(out.Failed) > 0 {
			t.Fatalf("filling %s: %d entries failed: %v", q.URL, len(out.Failed), out.Failed)
		}
	}
}

func send(t *testing.T, c *sqs.Client, q queue, body, group string) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body)}
	if group != "" {
		in.MessageGroupId = aws.String(group)
	}
	out, err := c.SendMessage(t.Context(), in)
	if err != nil {
		must(t, err)
	}
	return aws.ToString(out.MessageId)
}

// receive asks for every attribute both ways (see TestSystemAttributeNames).
func receive(t *testing.T, c *sqs.Client, q queue, max, visibility int32) []sqstypes.Message {
	t.Helper()
	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), MaxNumberOfMessages: max, VisibilityTimeout: visibility,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		AttributeNames:              []sqstypes.QueueAttributeName{"All"},
	})
	if err != nil {
		must(t, err)
	}
	return out.Messages
}

func bodies(ms []sqstypes.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

func queueCounts(t *testing.T, c *sqs.Client, q queue) (visible, notVisible int) {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
	if err != nil {
		must(t, err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	notVisible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, notVisible
}

// code returns the API error code of err: "" for nil, "HTTP <status>,
// undecodable body" when the SDK could not read the server's answer.
func code(err error) string {
	if err == nil {
		return ""
	}
	if isLost(err) {
		panic(lostAnswer{err})
	}
	var de *smithy.DeserializationError
	var re *smithyhttp.ResponseError
	if errors.As(err, &de) && errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d, undecodable body", re.HTTPStatusCode())
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return fmt.Sprintf("non-API: %v", err)
}

func message(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return ""
}
