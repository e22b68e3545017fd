package runbooks

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/lambdafake"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestLambdaSNSEventBridgeRunbook runs lambda-sns-eventbridge-dlq.md on
// moto (SQS, SNS, Lambda's configuration) with lambdafake serving Invoke:
// a function's DLQ and a DLQ shared by two SNS subscriptions. Every event
// reaches the function once, every SNS message reaches the named
// subscription's queue once and the other subscriber nothing, and both
// DLQs end empty.
func TestLambdaSNSEventBridgeRunbook(t *testing.T) {
	env := testenv.RequireMoto(t)
	ctx := t.Context()
	fake, err := lambdafake.New(env.SQSEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfg := env.AWSConfig(ctx)
	sq := env.SQS(t)
	lc := lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	sc := sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(env.SQSEndpoint) })
	im := iam.NewFromConfig(cfg, func(o *iam.Options) { o.BaseEndpoint = aws.String(env.SQSEndpoint) })

	team := strings.ToLower(testenv.UniqueName(t, "rbo"))
	team = team[:min(len(team), 40)]
	dlqURL, dlqARN := clitest.CreateQueue(t, sq, team+"-orders-handler-dlq", nil)
	subDLQURL, subDLQARN := clitest.CreateQueue(t, sq, team+"-orders-topic-dlq", nil)
	emailURL, emailARN := clitest.CreateQueue(t, sq, team+"-orders-email", nil)
	searchURL, searchARN := clitest.CreateQueue(t, sq, team+"-orders-search", nil)

	role, err := im.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(team + "-role"), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`)})
	if err != nil {
		t.Fatal(err)
	}
	var code bytes.Buffer
	z := zip.NewWriter(&code)
	w, _ := z.Create("handler.py")
	w.Write([]byte("def handler(event, context):\n    return None\n"))
	z.Close()
	fn := team + "-orders-handler"
	if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String(fn), Role: role.Role.Arn, Runtime: lambdatypes.RuntimePython312,
		Handler: aws.String("handler.handler"), Code: &lambdatypes.FunctionCode{ZipFile: code.Bytes()}, Timeout: aws.Int32(3),
		DeadLetterConfig: &lambdatypes.DeadLetterConfig{TargetArn: aws.String(dlqARN)}}); err != nil {
		t.Fatal(err)
	}
	var events []string
	for i := range 6 {
		e := fmt.Sprintf(`{"orderId":"o-%d","amount":%d}`, i, 10+i)
		events = append(events, e)
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(e), MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"RequestID":    {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("req-%d", i))},
			"ErrorCode":    {DataType: aws.String("Number"), StringValue: aws.String("200")},
			"ErrorMessage": {DataType: aws.String("String"), StringValue: aws.String(`{"errorType":"TimeoutError","errorMessage":"db timeout"}`)},
		}}); err != nil {
			t.Fatal(err)
		}
	}

	topic, err := sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(team + "-orders")})
	if err != nil {
		t.Fatal(err)
	}
	redrive := `{"deadLetterTargetArn":"` + subDLQARN + `"}`
	email, err := sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(emailARN), ReturnSubscriptionArn: true, Attributes: map[string]string{"RedrivePolicy": redrive}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(searchARN), Attributes: map[string]string{"RedrivePolicy": redrive}}); err != nil {
		t.Fatal(err)
	}
	var envelopes []string
	for i := range 3 {
		b := fmt.Sprintf(`{"Type":"Notification","MessageId":"n-%d","TopicArn":"%s","Message":"{\"orderId\":\"o-%d\"}","Timestamp":"2026-12-04T02:00:00.000Z","SignatureVersion":"1","Signature":"c2ln","SigningCertURL":"https://sns/cert.pem","UnsubscribeURL":"https://sns/unsub"}`, i, aws.ToString(topic.TopicArn), i)
		envelopes = append(envelopes, b)
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(subDLQURL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}

	// What the DLQs hold: a seeding SendMessage that the SDK retried under
	// load can leave a message there twice. Each message in a DLQ must
	// reach its origin exactly once: a duplicate seed is two deliveries.
	inDLQ := func(url string) map[string]int {
		m := map[string]int{}
		for _, r := range clitest.SampleAll(t, env, url, 100) {
			m[r.Body]++
		}
		return m
	}
	wantEvents, wantEnvelopes := inDLQ(dlqURL), inDLQ(subDLQURL)

	inc := &incident{vars: map[string]string{
		"DLQ": dlqURL, "SUB_DLQ": subDLQURL, "SUBSCRIPTION": aws.ToString(email.SubscriptionArn),
		"VERIFY_FOR": "3s", "DLQCTL_STATE_DIR": t.TempDir(), "QUEUE_PREFIX": team,
		"AWS_ENDPOINT_URL_LAMBDA": srv.URL, "AWS_ENDPOINT_URL_SNS": env.SQSEndpoint, "AWS_ENDPOINT_URL_EVENTBRIDGE": env.SQSEndpoint,
		testenv.EnvLogsEndpoint: env.SQSEndpoint,
	}}
	runRunbook(t, env, "lambda-sns-eventbridge-dlq.md", inc)

	got := map[string]int{}
	for _, inv := range fake.Invocations() {
		if inv.Function == fn {
			got[inv.Payload]++
		}
	}
	for _, e := range events {
		if wantEvents[e] == 0 || got[e] != wantEvents[e] {
			t.Errorf("event %s reached the function %d times; the DLQ held it %d time(s), want once per message", e, got[e], wantEvents[e])
		}
	}
	if len(got) != len(events) {
		t.Errorf("the function received %d distinct events, want %d", len(got), len(events))
	}
	bodies := clitest.DrainBodies(t, sq, emailURL)
	for _, b := range envelopes {
		if wantEnvelopes[b] == 0 || bodies[b] != wantEnvelopes[b] {
			t.Errorf("the named subscription's queue received %q %d times; the DLQ held it %d time(s), want once per message", b, bodies[b], wantEnvelopes[b])
		}
	}
	for _, u := range []string{searchURL, dlqURL, subDLQURL} {
		if v, f := clitest.QueueDepth(t, sq, u); v+f != 0 {
			t.Errorf("%s holds %d message(s), want none", u, v+f)
		}
	}
}
