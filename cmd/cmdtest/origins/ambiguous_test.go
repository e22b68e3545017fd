package origins

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
)

// Two SNS subscriptions share one DLQ: a message does not say which of
// them failed, so it is never guessed — it stays, the report says why and
// what to do, exit 4. --origin SUBSCRIPTION_ARN then replays it to that
// subscription (raw message delivery: the raw message, its attributes
// kept), and a Lambda subscriber is invoked with the SNS event shape.
func TestSharedSubscriptionDLQIsNeverGuessed(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	dlqURL, dlqARN := s.queue(t, "shared-dlq", nil)
	topic, err := s.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(strings.ReplaceAll(dlqARN[strings.LastIndexByte(dlqARN, ':')+1:], "dlq", "topic"))})
	if err != nil {
		t.Fatal(err)
	}
	rawURL, rawARN := s.queue(t, "shared-raw", nil)
	fn, fnARN := s.function(t, "shared-fn", "", 3, nil)
	redrive := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `"}`}
	rawSub, err := s.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(rawARN), ReturnSubscriptionArn: true,
		Attributes: map[string]string{"RedrivePolicy": redrive["RedrivePolicy"], "RawMessageDelivery": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	fnSub, err := s.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("lambda"), Endpoint: aws.String(fnARN), ReturnSubscriptionArn: true, Attributes: redrive})
	if err != nil {
		t.Fatal(err)
	}
	raw := `{"orderId":"o-raw-1","total":"12.00"}`
	s.send(t, dlqURL, raw, map[string]string{"tenant": "acme"})

	r := s.run(t, "redrive", dlqURL, "--yes", "--state-dir", t.TempDir())
	if r.Code != 4 {
		t.Fatalf("redrive exit %d, want 4:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "ambiguous origin: 2 SNS subscriptions share") || !strings.Contains(r.Stdout, "--origin SUBSCRIPTION_ARN") {
		t.Fatalf("the report does not say the origin is ambiguous and how to name it:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stderr, "1 message(s) stay in") {
		t.Fatalf("stderr does not say what stayed:\n%s", r.Stderr)
	}
	if d := s.depth(t, dlqURL); d != 1 || s.depth(t, rawURL) != 0 || len(s.fake.Invocations()) != 0 {
		t.Fatalf("the ambiguous message moved (DLQ %d, raw subscriber %d, invocations %d)", d, s.depth(t, rawURL), len(s.fake.Invocations()))
	}

	r = s.run(t, "redrive", dlqURL, "--yes", "--origin", aws.ToString(rawSub.SubscriptionArn), "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("redrive --origin exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	got, attrs := s.drain(t, rawURL)
	exactlyOnce(t, "the raw subscriber", got, []string{raw})
	if !attrs["tenant"] {
		t.Errorf("the raw message lost its attribute tenant: %v", attrs)
	}

	// The Lambda subscriber: an SNS envelope in the DLQ is invoked as the
	// SNS event.
	env := `{"Type":"Notification","MessageId":"9b1c-1","TopicArn":"` + aws.ToString(topic.TopicArn) + `","Subject":"order","Message":"{\"orderId\":\"o-2\"}","Timestamp":"2026-12-04T02:00:00.000Z","SignatureVersion":"1","Signature":"c2ln","SigningCertURL":"https://sns.us-east-1.amazonaws.com/cert.pem","UnsubscribeURL":"https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe"}`
	s.send(t, dlqURL, env, nil)
	r = s.run(t, "redrive", dlqURL, "--yes", "--origin", aws.ToString(fnSub.SubscriptionArn), "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("redrive --origin (lambda subscription) exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	inv := s.invokedWith(fn)
	if len(inv) != 1 {
		t.Fatalf("the Lambda subscriber was invoked %v", inv)
	}
	for p := range inv {
		for _, want := range []string{`"EventSource":"aws:sns"`, `"EventSubscriptionArn":"` + aws.ToString(fnSub.SubscriptionArn) + `"`, `"SigningCertUrl":"https://sns.us-east-1.amazonaws.com/cert.pem"`, `"Message":"{\"orderId\":\"o-2\"}"`} {
			if !strings.Contains(p, want) {
				t.Errorf("the SNS event lacks %s: %s", want, p)
			}
		}
	}
	if d := s.depth(t, dlqURL); d != 0 {
		t.Fatalf("DLQ still holds %d message(s)", d)
	}
}

// --origin with something that is neither a function nor a subscription,
// or with --to QUEUE, is bad input: exit 2, one sentence, nothing moved.
func TestOriginFlagRefusals(t *testing.T) {
	s := newStack(t)
	dlqURL, _ := s.queue(t, "refuse-dlq", nil)
	s.send(t, dlqURL, `{"a":1}`, lambdaAsyncAttrs(1))
	for _, args := range [][]string{
		{"--origin", "arn:aws:events:us-east-1:123456789012:rule/orders"},
		{"--origin", "arn:aws:lambda:us-east-1:123456789012:function:does-not-exist"},
		{"--origin", "arn:aws:lambda:us-east-1:123456789012:function:x", "--to", "some-queue"},
	} {
		r := s.run(t, append([]string{"redrive", dlqURL, "--yes"}, args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--origin") {
			t.Errorf("%v: exit %d, want 2 with a sentence naming --origin:\n%s", args, r.Code, r.Stderr)
		}
	}
	if d := s.depth(t, dlqURL); d != 1 {
		t.Fatalf("DLQ holds %d, want 1: a refusal changed something", d)
	}
}

// A caller who may not list SNS subscriptions: the run does not fail as a
// whole — the messages that needed the listing stay in the DLQ with the
// reason (exit 4), and the listing is not retried for every message.
func TestOriginListingDeniedLeavesMessagesNamed(t *testing.T) {
	s := newStack(t)
	deny, err := faultproxy.New(s.env.SQSEndpoint, faultproxy.Fault{Action: "ListSubscriptions", Kind: faultproxy.Deny})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(deny.Close)
	t.Setenv("AWS_ENDPOINT_URL_SNS", deny.URL)
	dlqURL, _ := s.queue(t, "denied-dlq", nil)
	s.send(t, dlqURL, `{"orderId":"o-1"}`, nil)
	r := s.run(t, "redrive", dlqURL, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 4 {
		t.Fatalf("exit %d, want 4:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "no origin: could not find which SNS subscription uses") {
		t.Fatalf("the report does not say why the message stays:\n%s", r.Stdout)
	}
	if d := s.depth(t, dlqURL); d != 1 {
		t.Fatalf("DLQ holds %d, want 1", d)
	}
	if n := deny.Stats().Requests["ListSubscriptions"]; n > 6 {
		t.Errorf("ListSubscriptions was called %d times: a failed listing must be remembered for the run", n)
	}
}
