package origins

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs/origins"
)

// auditFinding is the part of an audit -o json finding these tests read.
type auditFinding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Queue    string `json:"queue"`
	Related  string `json:"related"`
	Problem  string `json:"problem"`
	Fix      struct {
		Queue     string `json:"queue"`
		Attribute string `json:"attribute"`
		Value     string `json:"value"`
		Terraform string `json:"terraform"`
		Command   string `json:"command"`
		Text      string `json:"text"`
	} `json:"fix"`
}

// audit runs `dlqctl audit QUEUES --sample 0 -o json` and returns the
// findings of check (and the notes).
func (s *stack) audit(t testing.TB, check string, queues ...string) ([]auditFinding, []string) {
	t.Helper()
	r := s.run(t, append(append([]string{"audit"}, queues...), "--sample", "0", "-o", "json")...)
	if r.Code != 0 && r.Code != 3 {
		t.Fatalf("audit exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var rep struct {
		Findings []auditFinding `json:"findings"`
		Notes    []string       `json:"notes"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("audit -o json: %v\n%s", err, r.Stdout)
	}
	var out []auditFinding
	for _, f := range rep.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out, rep.Notes
}

func queueName(arn string) string { return arn[strings.LastIndexByte(arn, ':')+1:] }

// A queue that is a function's DeadLetterConfig, and one that is another
// function's on-failure destination, while their asynchronous invocations
// have MaximumRetryAttempts 0: one warning each, naming the function and
// the fix; with retries configured again, none.
func TestAuditWarnsLambdaDLQWhoseFunctionDoesNotRetry(t *testing.T) {
	s := newStack(t)
	_, dlcARN := s.queue(t, "aud-fn-dlq", nil)
	_, destARN := s.queue(t, "aud-fn-dest", nil)
	fnA, _ := s.function(t, "aud-dlc", dlcARN, 3, nil)
	fnB, _ := s.function(t, "aud-dest", "", 3, nil)
	// set replaces a function's event invoke configuration. moto keeps the
	// first one it was given (a second Put or Update is appended and never
	// read back; docs/emulators.md): delete it first, as a replacement.
	set := func(fn string, retries int32, dest string) {
		_, _ = s.lambda.DeleteFunctionEventInvokeConfig(t.Context(), &lambda.DeleteFunctionEventInvokeConfigInput{FunctionName: aws.String(fn)})
		in := &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String(fn), MaximumRetryAttempts: aws.Int32(retries)}
		if dest != "" {
			in.DestinationConfig = &lambdatypes.DestinationConfig{OnFailure: &lambdatypes.OnFailure{Destination: aws.String(dest)}}
		}
		if _, err := s.lambda.PutFunctionEventInvokeConfig(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	set(fnA, 0, "")
	set(fnB, 0, destARN)

	got, _ := s.audit(t, origins.CheckLambdaNoRetries, dlcARN, destARN)
	byFn := map[string]auditFinding{}
	for _, f := range got {
		byFn[f.Related] = f
	}
	if len(got) != 2 {
		t.Fatalf("%d %s findings, want 2 (one per function): %+v", len(got), origins.CheckLambdaNoRetries, got)
	}
	for fn, q := range map[string]string{fnA: queueName(dlcARN), fnB: queueName(destARN)} {
		f, ok := byFn[fn]
		if !ok {
			t.Fatalf("no finding names function %s: %+v", fn, got)
		}
		if f.Severity != "warn" || f.Queue != q || !strings.Contains(f.Problem, "MaximumRetryAttempts 0") {
			t.Errorf("finding for %s: %+v; want warn on queue %s saying MaximumRetryAttempts 0", fn, f, q)
		}
		if !strings.Contains(f.Fix.Command, "--function-name "+fn+" --maximum-retry-attempts 2") || !strings.Contains(f.Fix.Terraform, "maximum_retry_attempts") {
			t.Errorf("fix for %s: %+v", fn, f.Fix)
		}
	}
	if !strings.Contains(byFn[fnB].Problem, "on-failure destination") || !strings.Contains(byFn[fnA].Problem, "DeadLetterConfig") {
		t.Errorf("the problems do not say how each queue is the function's DLQ: %q / %q", byFn[fnA].Problem, byFn[fnB].Problem)
	}

	set(fnA, 2, "")
	set(fnB, 1, destARN)
	if got, _ := s.audit(t, origins.CheckLambdaNoRetries, dlcARN, destARN); len(got) != 0 {
		t.Fatalf("with retries configured, still %+v", got)
	}
}

// An SNS subscription whose RedrivePolicy names a queue without a policy
// letting SNS write: an error (exit 3), with the policy to set; a policy
// for another topic does not count; the policy of the fix clears it.
func TestAuditErrorsSNSSubscriptionDLQWithoutQueuePolicy(t *testing.T) {
	s := newStack(t)
	dlqURL, dlqARN := s.queue(t, "aud-sub-dlq", nil)
	_, subQ := s.queue(t, "aud-sub", nil)
	topic, err := s.sns.CreateTopic(t.Context(), &sns.CreateTopicInput{Name: aws.String(queueName(dlqARN) + "-topic")})
	if err != nil {
		t.Fatal(err)
	}
	topicARN := aws.ToString(topic.TopicArn)
	sub, err := s.sns.Subscribe(t.Context(), &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(subQ),
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `"}`}, ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	setPolicy := func(p string) {
		if _, err := s.sqs.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlqURL), Attributes: map[string]string{"Policy": p}}); err != nil {
			t.Fatal(err)
		}
	}

	r := s.run(t, "audit", dlqARN, "--sample", "0")
	if r.Code != 3 || !strings.Contains(r.Stdout, origins.CheckSNSDLQUnwritable) {
		t.Fatalf("audit of an SNS DLQ SNS may not write to: exit %d, want 3 naming %s:\n%s\n%s", r.Code, origins.CheckSNSDLQUnwritable, r.Stdout, r.Stderr)
	}
	got, _ := s.audit(t, origins.CheckSNSDLQUnwritable, dlqARN)
	if len(got) != 1 || got[0].Severity != "error" || got[0].Queue != queueName(dlqARN) || got[0].Related != aws.ToString(sub.SubscriptionArn) {
		t.Fatalf("findings %+v; want one error on %s naming subscription %s", got, queueName(dlqARN), aws.ToString(sub.SubscriptionArn))
	}
	fix := got[0].Fix
	if fix.Attribute != "Policy" || fix.Value != origins.SNSDLQPolicy(dlqARN, topicARN) || !strings.Contains(fix.Terraform, "aws_sqs_queue_policy") {
		t.Fatalf("fix %+v; want the Policy allowing %s", fix, topicARN)
	}

	other := strings.Replace(topicARN, queueName(topicARN), "someone-elses-topic", 1)
	setPolicy(origins.SNSDLQPolicy(dlqARN, other))
	if got, _ := s.audit(t, origins.CheckSNSDLQUnwritable, dlqARN); len(got) != 1 {
		t.Fatalf("a policy for topic %s lets %s write? findings %+v", other, topicARN, got)
	}

	setPolicy(fix.Value)
	if got, _ := s.audit(t, origins.CheckSNSDLQUnwritable, dlqARN); len(got) != 0 {
		t.Fatalf("with the fix's policy set, still %+v", got)
	}
}

// EventBridge rule targets without a DeadLetterConfig: an audited queue
// that is a target, and a function whose DLQ is audited that is a target,
// are warned about; a target of the same rule that is neither is not (the
// audit is scoped to the named queues); with DLQs on both, none.
func TestAuditWarnsEventBridgeTargetWithoutDLQ(t *testing.T) {
	s := newStack(t)
	_, tq := s.queue(t, "aud-eb-target", nil)
	_, fnDLQ := s.queue(t, "aud-eb-fn-dlq", nil)
	_, unrelated := s.queue(t, "aud-eb-other", nil)
	_, ebDLQ := s.queue(t, "aud-eb-dlq", nil)
	fn, fnARN := s.function(t, "aud-eb-fn", fnDLQ, 3, nil)
	bus := s.eventBus(t)
	targets := []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(tq)}, {Id: aws.String("fn"), Arn: aws.String(fnARN)}, {Id: aws.String("other"), Arn: aws.String(unrelated)}}
	rule, ruleARN := s.rule(t, bus, targets...)

	got, _ := s.audit(t, origins.CheckEventBridgeNoDLQ, tq, fnDLQ)
	ids := map[string]auditFinding{}
	for _, f := range got {
		if f.Related != ruleARN {
			t.Errorf("finding about another rule %s: %+v", f.Related, f)
		}
		ids[f.Queue] = f
	}
	if len(got) != 2 || ids[queueName(tq)].Check == "" || ids[fn].Check == "" {
		t.Fatalf("findings %+v; want one for target queue %s and one for function %s, none for %s", got, queueName(tq), fn, queueName(unrelated))
	}
	f := ids[queueName(tq)]
	if f.Severity != "warn" || !strings.Contains(f.Problem, "target q ") || !strings.Contains(f.Fix.Command, "aws events put-targets --rule "+rule+" --event-bus-name "+bus) ||
		!strings.Contains(f.Fix.Terraform, "dead_letter_config") {
		t.Errorf("finding %+v", f)
	}

	targets[0].DeadLetterConfig = &ebtypes.DeadLetterConfig{Arn: aws.String(ebDLQ)}
	targets[1].DeadLetterConfig = &ebtypes.DeadLetterConfig{Arn: aws.String(ebDLQ)}
	if _, err := s.events.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(bus), Targets: targets[:2]}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.audit(t, origins.CheckEventBridgeNoDLQ, tq, fnDLQ); len(got) != 0 {
		t.Fatalf("with DLQs on both targets, still %+v", got)
	}
}

// With SQS on a local endpoint and no Lambda, SNS or EventBridge endpoint
// of its own, the origin checks are not run against AWS's: the audit says
// so in its notes and still succeeds.
func TestAuditNotesOriginChecksItCannotRun(t *testing.T) {
	s := newStack(t)
	_, dlq := s.queue(t, "aud-skip", nil)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", "")
	t.Setenv("AWS_ENDPOINT_URL_SNS", "")
	_, notes := s.audit(t, origins.CheckLambdaNoRetries, dlq)
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"Lambda DLQ checks (lambda-dlq-no-retries) not run: SQS is served by " + s.env.SQSEndpoint + " and AWS_ENDPOINT_URL_LAMBDA is not set",
		"SNS subscription DLQ checks (sns-dlq-unwritable) not run"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "EventBridge target checks") {
		t.Errorf("EventBridge has its endpoint, yet: %s", joined)
	}
}

// denier answers every Lambda, SNS and EventBridge call with the access
// denial each service returns (moto does not enforce IAM on the shared
// stack, so a caller without the audit's list permissions is played by
// this server).
func denier(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		switch {
		case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AWSEvents."):
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"AccessDeniedException","message":"User is not authorized to perform: events:ListEventBuses"}`))
		case r.Form.Get("Action") != "":
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>AuthorizationError</Code><Message>User is not authorized to perform: sns:ListSubscriptions</Message></Error><RequestId>1</RequestId></ErrorResponse>`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"Message":"User is not authorized to perform: lambda:ListFunctions"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A caller that may not list functions, subscriptions or rules: the audit
// still runs (the SQS checks), and each origin check it could not run is
// a note naming the denial and the docs/iam.md row, not a failure.
func TestAuditNotesOriginChecksTheCallerMayNotRun(t *testing.T) {
	s := newStack(t)
	_, dlq := s.queue(t, "aud-denied", nil)
	deny := denier(t)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", deny)
	t.Setenv("AWS_ENDPOINT_URL_SNS", deny)
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", deny)
	_, notes := s.audit(t, origins.CheckLambdaNoRetries, dlq)
	joined := strings.Join(notes, "\n")
	for _, check := range []string{"Lambda DLQ checks (lambda-dlq-no-retries)", "SNS subscription DLQ checks (sns-dlq-unwritable)", "EventBridge target checks (eventbridge-target-no-dlq)"} {
		if !strings.Contains(joined, check+" not run: access denied") {
			t.Errorf("no access-denied note for %s:\n%s", check, joined)
		}
	}
	if !strings.Contains(joined, "dlqctl audit (Lambda, SNS, EventBridge DLQ checks)") {
		t.Errorf("the notes do not name the docs/iam.md row:\n%s", joined)
	}
}
