package origins

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/dlqctl/dlqctl/internal/clitest"
)

// A Lambda asynchronous-invocation DLQ (the function's DeadLetterConfig):
// the dry run names the function; the redrive invokes it asynchronously
// once per message with the event byte for byte, invokes no other function,
// and leaves the DLQ empty.
func TestLambdaAsyncDLQGoesBackToItsFunction(t *testing.T) {
	s := newStack(t)
	dlqURL, dlqARN := s.queue(t, "fn-dlq", nil)
	fn, _ := s.function(t, "orders-handler", dlqARN, 3, nil)
	other, _ := s.function(t, "other-fn", "", 3, nil)
	evs := events("la", 6)
	for i, e := range evs {
		s.send(t, dlqURL, e, lambdaAsyncAttrs(i))
	}

	plan := s.run(t, "redrive", dlqURL, "--dry-run")
	if plan.Code != 0 || !strings.Contains(plan.Stdout, "invoke function "+fn+" (async)") || !strings.Contains(plan.Stdout, "6") {
		t.Fatalf("dry run (exit %d) does not plan 6 invocations of %s:\n%s\n%s", plan.Code, fn, plan.Stdout, plan.Stderr)
	}
	if n := len(s.fake.Invocations()); n != 0 {
		t.Fatalf("the dry run invoked %d time(s)", n)
	}

	r := s.run(t, "redrive", dlqURL, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("redrive exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sum := summary(t, r)
	if sum["moved"] != float64(6) {
		t.Fatalf("moved %v, want 6: %s", sum["moved"], r.Stdout)
	}
	exactlyOnce(t, "invocations of "+fn, s.invokedWith(fn), evs)
	if got := s.invokedWith(other); len(got) != 0 {
		t.Errorf("function %s, which does not dead-letter into the DLQ, was invoked: %v", other, got)
	}
	for _, inv := range s.fake.Invocations() {
		if inv.Type != "Event" {
			t.Errorf("invocation type %q, want Event (asynchronous)", inv.Type)
		}
	}
	if d := s.depth(t, dlqURL); d != 0 {
		t.Fatalf("DLQ still holds %d message(s)", d)
	}
}

// Lambda on-failure destination records: the function named by
// requestContext.functionArn is invoked with requestPayload, byte for byte;
// a Kinesis batch pointer cannot be replayed from the message: it stays,
// named in the plan and the report, exit 4.
func TestOnFailureDestinationRecordsReplayTheirPayload(t *testing.T) {
	s := newStack(t)
	dlqURL, dlqARN := s.queue(t, "fn-onfail", nil)
	fn, fnARN := s.function(t, "payments", "", 5, nil)
	if _, err := s.lambda.PutFunctionEventInvokeConfig(t.Context(), &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String(fn),
		MaximumRetryAttempts: aws.Int32(1), DestinationConfig: &lambdatypes.DestinationConfig{OnFailure: &lambdatypes.OnFailure{Destination: aws.String(dlqARN)}}}); err != nil {
		t.Fatal(err)
	}
	payloads := []string{`{"paymentId":"p-1","cents":1250}`, `{"paymentId":"p-2","cents":99, "spaced" : [1, 2]}`, `{"paymentId":"p-3","nested":{"a":"ü"}}`}
	for i, p := range payloads {
		s.send(t, dlqURL, fmt.Sprintf(`{"version":"1.0","timestamp":"2026-12-04T02:00:0%dZ","requestContext":{"requestId":"r-%d","functionArn":"%s:$LATEST","condition":"RetriesExhausted","approximateInvokeCount":2},"requestPayload":%s,"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"responsePayload":{"errorType":"Error","errorMessage":"card declined"}}`, i, i, fnARN, p), nil)
	}
	kinesis := fmt.Sprintf(`{"requestContext":{"requestId":"k-1","functionArn":"%s","condition":"RetryAttemptsExhausted","approximateInvokeCount":3},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"version":"1.0","timestamp":"2026-12-04T02:00:00Z","KinesisBatchInfo":{"shardId":"shardId-000000000001","startSequenceNumber":"49601189658422359378836298521827638475320189012309704722","endSequenceNumber":"49601189658422359378836298522902373528957594348623495186","approximateArrivalOfFirstRecord":"2026-12-04T01:59:00Z","approximateArrivalOfLastRecord":"2026-12-04T01:59:01Z","batchSize":500,"streamArn":"arn:aws:kinesis:us-east-1:123456789012:stream/clicks"}}`, fnARN)
	s.send(t, dlqURL, kinesis, nil)

	plan := s.run(t, "redrive", dlqURL, "--dry-run")
	for _, want := range []string{"invoke function " + fn + " (async)", "cannot replay: a Kinesis batch pointer (stream arn:aws:kinesis:us-east-1:123456789012:stream/clicks, shard shardId-000000000001"} {
		if !strings.Contains(plan.Stdout, want) {
			t.Fatalf("dry run does not say %q:\n%s\n%s", want, plan.Stdout, plan.Stderr)
		}
	}
	r := s.run(t, "redrive", dlqURL, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 4 {
		t.Fatalf("redrive exit %d, want 4 (the Kinesis pointer stays):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sum := summary(t, r)
	if sum["moved"] != float64(3) {
		t.Fatalf("moved %v, want 3: %s", sum["moved"], r.Stdout)
	}
	exactlyOnce(t, "invocations of "+fn, s.invokedWith(fn), payloads)
	left, _ := s.drain(t, dlqURL)
	exactlyOnce(t, "left in the DLQ", left, []string{kinesis})
}

// An SNS subscription's DLQ, on a topic with two other subscribers: each
// message reaches the failed subscription's queue once, as SNS delivers it
// (the notification envelope), and the other subscribers receive nothing.
// The DLQ is filled by SNS itself (moto): the DLQ was the topic's only
// subscriber while the messages were published, so it holds exactly what
// SNS delivers to an SQS endpoint.
func TestSNSSubscriptionDLQReachesOnlyTheFailedSubscription(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	dlqURL, dlqARN := s.queue(t, "sub-dlq", nil)
	topic, err := s.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(strings.ReplaceAll(dlqARN[strings.LastIndexByte(dlqARN, ':')+1:], "dlq", "topic"))})
	if err != nil {
		t.Fatal(err)
	}
	seedSub, err := s.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(dlqARN), ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	msgs := events("sns", 5)
	for _, m := range msgs {
		if _, err := s.sns.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(m), Subject: aws.String("order")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.sns.Unsubscribe(ctx, &sns.UnsubscribeInput{SubscriptionArn: seedSub.SubscriptionArn}); err != nil {
		t.Fatal(err)
	}
	failedURL, failedARN := s.queue(t, "sub-email", nil)
	otherURL, otherARN := s.queue(t, "sub-audit", nil)
	rawURL, rawARN := s.queue(t, "sub-search", nil)
	failed, err := s.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(failedARN), ReturnSubscriptionArn: true,
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `"}`}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{otherARN, rawARN} {
		attrs := map[string]string{}
		if ep == rawARN {
			attrs["RawMessageDelivery"] = "true"
		}
		if _, err := s.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(ep), Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	inDLQ := s.peekBodies(t, dlqURL, len(msgs))
	for _, b := range inDLQ {
		var env struct{ Type, TopicArn, Message string }
		if json.Unmarshal([]byte(b), &env) != nil || env.Type != "Notification" || env.TopicArn != aws.ToString(topic.TopicArn) {
			t.Fatalf("the DLQ does not hold SNS envelopes of the topic: %s", clip(b))
		}
	}
	subID := aws.ToString(failed.SubscriptionArn)
	subID = subID[strings.LastIndexByte(subID, ':')+1:]

	plan := s.run(t, "redrive", dlqURL, "--dry-run")
	if !strings.Contains(plan.Stdout, subID) || !strings.Contains(plan.Stdout, "5") {
		t.Fatalf("dry run does not plan 5 messages for subscription %s:\n%s\n%s", subID, plan.Stdout, plan.Stderr)
	}
	r := s.run(t, "redrive", dlqURL, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("redrive exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	got, _ := s.drain(t, failedURL)
	exactlyOnce(t, "the failed subscription's queue", got, inDLQ)
	for _, u := range []string{otherURL, rawURL} {
		if n := s.depth(t, u); n != 0 {
			t.Errorf("another subscriber's queue received %d message(s): the replay reached the topic", n)
		}
	}
	if d := s.depth(t, dlqURL); d != 0 {
		t.Fatalf("DLQ still holds %d message(s)", d)
	}
}

// An EventBridge target DLQ, on a rule with a second target: each event
// goes back to the target its TARGET_ARN names — an SQS target receives it
// by SendMessage without EventBridge's error attributes, a Lambda target is
// invoked asynchronously with it — and the rule's other target receives
// nothing (no PutEvents).
func TestEventBridgeTargetDLQGoesBackToItsTarget(t *testing.T) {
	s := newStack(t)
	dlqURL, dlqARN := s.queue(t, "eb-dlq", nil)
	bus := s.eventBus(t)
	tq, tqARN := s.queue(t, "eb-target", nil)
	otherURL, otherARN := s.queue(t, "eb-other", nil)
	fn, fnARN := s.function(t, "eb-fn", "", 3, nil)
	_, ruleARN := s.rule(t, bus,
		ebtypes.Target{Id: aws.String("orders-queue"), Arn: aws.String(tqARN), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)}},
		ebtypes.Target{Id: aws.String("orders-fn"), Arn: aws.String(fnARN), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)}},
		ebtypes.Target{Id: aws.String("audit"), Arn: aws.String(otherARN)})
	ev := func(i int) string {
		return fmt.Sprintf(`{"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467%03d","detail-type":"OrderPlaced","source":"shop.orders","account":"123456789012","time":"2026-12-04T02:00:00Z","region":"us-east-1","resources":[],"detail":{"orderId":"o-%d"}}`, i, i)
	}
	var toQueue, toFn []string
	for i := range 8 {
		target := tqARN
		if i%2 == 1 {
			target = fnARN
		}
		b := ev(i)
		if target == tqARN {
			toQueue = append(toQueue, b)
		} else {
			toFn = append(toFn, b)
		}
		s.send(t, dlqURL, b, map[string]string{"RULE_ARN": ruleARN, "TARGET_ARN": target, "ERROR_CODE": "SDK_CLIENT_ERROR",
			"ERROR_MESSAGE": "Unable to invoke target", "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts", "RETRY_ATTEMPTS": "185"})
	}

	plan := s.run(t, "redrive", dlqURL, "--dry-run")
	for _, want := range []string{"target orders-queue of rule", "target orders-fn of rule"} {
		if !strings.Contains(plan.Stdout, want) {
			t.Fatalf("dry run does not name %q:\n%s\n%s", want, plan.Stdout, plan.Stderr)
		}
	}
	r := s.run(t, "redrive", dlqURL, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("redrive exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	got, attrs := s.drain(t, tq)
	// A send whose answer was lost (a reset or a timeout of the loaded
	// emulator) is retried by the SDK and may reach a standard queue
	// twice: allowed only as far as the run reports it (maybe_twice).
	var sum struct {
		MaybeTwice int `json:"maybe_twice"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatalf("redrive summary: %v\n%s", err, r.Stdout)
	}
	doubled := 0
	for b, n := range got {
		if n == 2 {
			doubled++
			got[b] = 1
		}
	}
	if doubled > sum.MaybeTwice {
		t.Errorf("the SQS target received %d event(s) twice; the run reported %d maybe twice\nsummary: %s\nstderr: %s", doubled, sum.MaybeTwice, r.Stdout, r.Stderr)
	} else if doubled > 0 {
		t.Logf("%d event(s) twice at the SQS target, reported by the run (maybe_twice %d)", doubled, sum.MaybeTwice)
	}
	exactlyOnce(t, "the SQS target", got, toQueue)
	for _, a := range ebAttributeNames {
		if attrs[a] {
			t.Errorf("the SQS target received EventBridge's DLQ attribute %s", a)
		}
	}
	exactlyOnce(t, "invocations of the Lambda target "+fn, s.invokedWith(fn), toFn)
	if n := s.depth(t, otherURL); n != 0 {
		t.Errorf("the rule's other target received %d message(s)", n)
	}
	if d := s.depth(t, dlqURL); d != 0 {
		t.Fatalf("DLQ still holds %d message(s)", d)
	}
}

var ebAttributeNames = []string{"RULE_ARN", "TARGET_ARN", "ERROR_CODE", "ERROR_MESSAGE", "EXHAUSTED_RETRY_CONDITION", "RETRY_ATTEMPTS"}

// An archive of a Lambda function's DLQ restores --to QUEUE only: the
// function's events have no source queue to go back to, and restore
// --to source says so (exit 2) before anything is sent.
func TestRestoreToSourceOfALambdaDLQIsRefused(t *testing.T) {
	s := newStack(t)
	dlqURL, dlqARN := s.queue(t, "fn-dlq", nil)
	s.function(t, "orders-handler", dlqARN, 3, nil)
	for i, e := range events("rs", 3) {
		s.send(t, dlqURL, e, lambdaAsyncAttrs(i))
	}
	bucket := clitest.Bucket(t, s.env, "fnarch")
	r := s.run(t, "archive", dlqURL, "--to", "s3://"+bucket+"/a", "--delete", "--yes", "-o", "json", "--state-dir", t.TempDir())
	var sum struct {
		Manifest string `json:"manifest"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil || sum.Manifest == "" {
		t.Fatalf("archive: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = s.run(t, "restore", sum.Manifest, "--to", "source", "--yes", "--state-dir", t.TempDir())
	if r.Code != 2 || !strings.Contains(r.Stderr, "is fed by Lambda, SNS or EventBridge, not by queues: restore --to QUEUE") {
		t.Fatalf("restore --to source of a Lambda DLQ's archive: exit %d\n%s\nwant exit 2 with the refusal", r.Code, r.Stderr)
	}
	if n := len(s.fake.Invocations()); n != 0 {
		t.Fatalf("the refused restore invoked the function %d time(s)", n)
	}
}
