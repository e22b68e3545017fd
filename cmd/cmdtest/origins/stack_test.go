// Package origins tests `redrive --to source` on SQS DLQs fed by Lambda
// asynchronous invocations, Lambda on-failure destinations, SNS
// subscriptions and EventBridge rule targets (issue 29), on moto_server
// (SQS, SNS, EventBridge, Lambda's configuration) with internal/lambdafake
// serving Lambda's Invoke in front of it.
package origins

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/lambdafake"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// stack is moto plus a lambdafake in front of it, and clients for both.
type stack struct {
	env    testenv.Env
	fake   *lambdafake.Server
	sqs    *sqs.Client
	lambda *lambda.Client
	sns    *sns.Client
	events *eventbridge.Client
	role   string

	mu   sync.Mutex
	seen map[string]map[string]int // bodiesIn: bodies read so far, per queue
}

// newStack starts a lambdafake for the test and points dlqctl (in-process
// and subprocesses) at it for Lambda, and at moto for SQS, SNS and
// EventBridge.
func newStack(t testing.TB) *stack {
	t.Helper()
	env := testenv.RequireMoto(t)
	fake, err := lambdafake.New(env.SQSEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_SNS", env.SQSEndpoint)
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", env.SQSEndpoint)
	t.Setenv("AWS_ENDPOINT_URL_KINESIS", env.SQSEndpoint)
	cfg := env.AWSConfig(t.Context())
	s := &stack{env: env, fake: fake, sqs: env.SQS(t),
		lambda: lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
		sns:    sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(env.SQSEndpoint) }),
		events: eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(env.SQSEndpoint) }),
	}
	im := iam.NewFromConfig(cfg, func(o *iam.Options) { o.BaseEndpoint = aws.String(env.SQSEndpoint) })
	name := testenv.UniqueName(t, "role")
	r, err := im.CreateRole(t.Context(), &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`)})
	var exists *iamtypes.EntityAlreadyExistsException
	switch {
	case errors.As(err, &exists):
		// The name is this test's own: an SDK retry of a call whose answer
		// was lost (moto slow under make test's load) found the role the
		// first attempt made.
		g, gerr := im.GetRole(t.Context(), &iam.GetRoleInput{RoleName: aws.String(name)})
		if gerr != nil {
			t.Fatal(err, gerr)
		}
		s.role = aws.ToString(g.Role.Arn)
	case err != nil:
		t.Fatal(err)
	default:
		s.role = aws.ToString(r.Role.Arn)
	}
	return s
}

// run runs dlqctl in-process against the stack.
func (s *stack) run(t testing.TB, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, s.env, "", args...)
}

// queue creates a queue; attrs as SQS takes them.
func (s *stack) queue(t testing.TB, prefix string, attrs map[string]string) (url, arn string) {
	t.Helper()
	out, err := s.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(t, prefix)), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
}

func zipped(t testing.TB) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.Create("handler.py")
	w.Write([]byte("def handler(event, context):\n    return None\n"))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// function creates a function (through lambdafake, which keeps its
// DeadLetterConfig); dlq "" for none; env sets its environment.
func (s *stack) function(t testing.TB, prefix, dlq string, timeout int32, env map[string]string) (name, arn string) {
	t.Helper()
	name = testenv.UniqueName(t, prefix)
	in := &lambda.CreateFunctionInput{FunctionName: aws.String(name), Role: aws.String(s.role), Runtime: lambdatypes.RuntimePython312,
		Handler: aws.String("handler.handler"), Code: &lambdatypes.FunctionCode{ZipFile: zipped(t)}, Timeout: aws.Int32(timeout)}
	if dlq != "" {
		in.DeadLetterConfig = &lambdatypes.DeadLetterConfig{TargetArn: aws.String(dlq)}
	}
	if env != nil {
		in.Environment = &lambdatypes.Environment{Variables: env}
	}
	out, err := s.lambda.CreateFunction(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return name, aws.ToString(out.FunctionArn)
}

// invokedWith returns, per payload, how many times lambdafake accepted it
// for function name.
func (s *stack) invokedWith(name string) map[string]int {
	out := map[string]int{}
	for _, inv := range s.fake.Invocations() {
		if inv.Function == name {
			out[inv.Payload]++
		}
	}
	return out
}

// send puts messages into a queue as their producer (Lambda, SNS,
// EventBridge) would have: body and string attributes.
func (s *stack) send(t testing.TB, url, body string, attrs map[string]string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	if len(attrs) > 0 {
		in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
		for k, v := range attrs {
			typ := "String"
			if k == "ErrorCode" || k == "RETRY_ATTEMPTS" {
				typ = "Number"
			}
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(v)}
		}
	}
	s.seed(t, url, 1, func(opt func(*sqs.Options)) error {
		_, err := s.sqs.SendMessage(t.Context(), in, opt)
		return err
	})
}

// seed puts n messages into url (one SendMessage or SendMessageBatch call)
// exactly once: the call is not retried by the SDK, whose retry of a send
// whose answer was lost leaves two copies (moto is slow under make test's
// load), and a call that failed is repeated only when moto's exact counts
// show that nothing arrived. The queue must be idle while it is seeded.
func (s *stack) seed(t testing.TB, url string, n int, call func(func(*sqs.Options)) error) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		before := s.depth(t, url)
		err := call(func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
		if err == nil {
			return
		}
		switch after := s.depth(t, url); {
		case after == before+n:
			return
		case after != before || attempt == 5:
			t.Fatalf("seeding %s: %v, and the queue went from %d to %d messages (want +%d or +0)", url, err, before, after, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lambdaAsyncAttrs are the attributes Lambda gives an event it
// dead-letters (docs/redrive.md cites AWS's page).
func lambdaAsyncAttrs(i int) map[string]string {
	return map[string]string{"RequestID": fmt.Sprintf("3f1c%04d-aaaa-bbbb-cccc-000000000000", i), "ErrorCode": "200",
		"ErrorMessage": `{"errorType":"TimeoutError","errorMessage":"connect ETIMEDOUT 10.0.3.7:5432"}`}
}

// bodies drains a queue and counts its bodies (with their attributes'
// names, so a test can see that none leaked).
func (s *stack) drain(t testing.TB, url string) (bodies map[string]int, attrNames map[string]bool) {
	t.Helper()
	bodies, attrNames = map[string]int{}, map[string]bool{}
	empty := 0
	// Messages still in flight (a run's release that reached moto late on
	// a loaded machine) are waited for, up to dlqctl's default visibility
	// and some: moto's counts are exact.
	deadline := time.Now().Add(90 * time.Second)
	for empty < 2 || (s.depth(t, url) > 0 && time.Now().Before(deadline)) {
		out, err := s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			bodies[aws.ToString(m.Body)]++
			for k := range m.MessageAttributes {
				attrNames[k] = true
			}
			if _, err := s.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bodies, attrNames
}

// depth is a queue's visible + in-flight count (moto's counts are exact).
func (s *stack) depth(t testing.TB, url string) int {
	t.Helper()
	v, f := clitest.QueueDepth(t, s.sqs, url)
	return v + f
}

// exactlyOnce fails t unless got holds each of want once and nothing
// else; it reports whether it did.
func exactlyOnce(t testing.TB, what string, got map[string]int, want []string) bool {
	t.Helper()
	ok := true
	w := map[string]bool{}
	for _, b := range want {
		w[b] = true
		if got[b] != 1 {
			ok = false
			t.Errorf("%s: %q arrived %d times, want once", what, clip(b), got[b])
		}
	}
	for b, n := range got {
		if !w[b] {
			ok = false
			t.Errorf("%s: unexpected %q (%d times)", what, clip(b), n)
		}
	}
	return ok
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func events(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"eventType":"OrderPlaced","orderId":"%s-%03d","amount":%d.50,"note":"unicodé ✓"}`, prefix, i, i+10)
	}
	return out
}

// summary parses -o json.
func summary(t testing.TB, r clitest.Result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("not JSON (exit %d): %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return m
}

// eventBus creates a bus of the test's own, so no other test's rule sees
// its events.
func (s *stack) eventBus(t testing.TB) string {
	t.Helper()
	name := testenv.UniqueName(t, "bus")
	_, err := s.events.CreateEventBus(t.Context(), &eventbridge.CreateEventBusInput{Name: aws.String(name)})
	var exists *ebtypes.ResourceAlreadyExistsException
	if err != nil && !errors.As(err, &exists) { // exists: the name is this test's own, an SDK retry found the bus its lost first attempt made
		t.Fatal(err)
	}
	return name
}

// rule creates a rule on bus with targets.
func (s *stack) rule(t testing.TB, bus string, targets ...ebtypes.Target) (name, arn string) {
	t.Helper()
	name = testenv.UniqueName(t, "rule")
	out, err := s.events.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: aws.String(name), EventBusName: aws.String(bus),
		EventPattern: aws.String(`{"source":["shop.orders"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.events.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: aws.String(name), EventBusName: aws.String(bus), Targets: targets}); err != nil {
		t.Fatal(err)
	}
	return name, aws.ToString(out.RuleArn)
}

// peekBodies reads n bodies of a queue without consuming them (visibility
// back to 0).
func (s *stack) peekBodies(t testing.TB, url string, n int) []string {
	t.Helper()
	var out []string
	var handles []*string
	for tries := 0; len(out) < n && tries < 20; tries++ {
		r, err := s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Messages {
			out = append(out, aws.ToString(m.Body))
			handles = append(handles, m.ReceiptHandle)
		}
	}
	for _, h := range handles {
		if _, err := s.sqs.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: h, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != n {
		t.Fatalf("read %d message(s) of %s, want %d", len(out), url, n)
	}
	return out
}

// testRun runs dlqctl in-process against env (a stack reached through
// proxies).
func testRun(t testing.TB, env testenv.Env, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, env, "", args...)
}

// TestMotoDropsDeadLetterConfig pins the moto 5.2.1 fact lambdafake exists
// for (docs/emulators.md): a function created on moto with a
// DeadLetterConfig answers without it; through lambdafake it keeps it, as
// Lambda does.
func TestMotoDropsDeadLetterConfig(t *testing.T) {
	s := newStack(t)
	_, dlq := s.queue(t, "dlc", nil)
	direct := lambda.NewFromConfig(s.env.AWSConfig(t.Context()), func(o *lambda.Options) { o.BaseEndpoint = aws.String(s.env.SQSEndpoint) })
	name := testenv.UniqueName(t, "dlc-moto")
	if _, err := direct.CreateFunction(t.Context(), &lambda.CreateFunctionInput{FunctionName: aws.String(name), Role: aws.String(s.role), Runtime: lambdatypes.RuntimePython312,
		Handler: aws.String("handler.handler"), Code: &lambdatypes.FunctionCode{ZipFile: zipped(t)}, DeadLetterConfig: &lambdatypes.DeadLetterConfig{TargetArn: aws.String(dlq)}}); err != nil {
		t.Fatal(err)
	}
	got, err := direct.GetFunctionConfiguration(t.Context(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeadLetterConfig != nil && aws.ToString(got.DeadLetterConfig.TargetArn) != "" {
		t.Fatalf("moto now keeps DeadLetterConfig (%s): lambdafake's copy of it can go (docs/emulators.md)", aws.ToString(got.DeadLetterConfig.TargetArn))
	}
	viaFake, _ := s.function(t, "dlc-fake", dlq, 3, nil)
	got, err = s.lambda.GetFunctionConfiguration(t.Context(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(viaFake)})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeadLetterConfig == nil || aws.ToString(got.DeadLetterConfig.TargetArn) != dlq {
		t.Fatalf("through lambdafake the DeadLetterConfig is %v, want %s", got.DeadLetterConfig, dlq)
	}
}
