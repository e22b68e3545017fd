package origins

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// iamOf maps an operation, as the recording proxies and lambdafake see it,
// to the IAM action that authorizes it.
func iamOf(service, op string) string {
	switch op {
	case "SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch":
		op = strings.TrimSuffix(op, "Batch")
	}
	return service + ":" + op
}

// documentedOriginActions reads the docs/iam.md rows `dlqctl redrive
// --to source (…)` and `dlqctl audit (…)`: every action in backticks.
func documentedOriginActions(t *testing.T) map[string][]string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "iam.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(dlqctl (?:redrive --to source|audit) \\([^`]+\\))` \\|([^|]*)\\|")
	act := regexp.MustCompile("`((?:sqs|lambda|sns|events):[A-Za-z]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var acts []string
		for _, a := range act.FindAllStringSubmatch(m[2], -1) {
			acts = append(acts, a[1])
		}
		sort.Strings(acts)
		out[m[1]] = acts
	}
	return out
}

// TestOriginRedrivesCallExactlyTheDocumentedActions runs a redrive of each
// kind through recording proxies (SQS, SNS, EventBridge on moto) and
// lambdafake (which counts Lambda operations), and compares the IAM
// actions each needed with its docs/iam.md row: nothing undocumented,
// nothing documented that never happens.
func TestOriginRedrivesCallExactlyTheDocumentedActions(t *testing.T) {
	s := newStack(t)
	proxies := map[string]*faultproxy.Proxy{}
	for _, svc := range []string{"sqs", "sns", "events"} {
		p, err := faultproxy.New(s.env.SQSEndpoint)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		proxies[svc] = p
	}
	via := s.env
	via.SQSEndpoint = proxies["sqs"].URL
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxies["sns"].URL)
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", proxies["events"].URL)

	// One DLQ of each kind, one message each.
	lambdaDLQ, lambdaARN := s.queue(t, "iam-fn-dlq", nil)
	s.function(t, "iam-fn", lambdaARN, 3, nil)
	s.send(t, lambdaDLQ, `{"a":1}`, lambdaAsyncAttrs(1))

	subDLQ, subDLQARN := s.queue(t, "iam-sub-dlq", nil)
	topic, err := s.sns.CreateTopic(t.Context(), &sns.CreateTopicInput{Name: aws.String(strings.ReplaceAll(subDLQARN[strings.LastIndexByte(subDLQARN, ':')+1:], "dlq", "topic"))})
	if err != nil {
		t.Fatal(err)
	}
	_, subQ := s.queue(t, "iam-sub", nil)
	if _, err := s.sns.Subscribe(t.Context(), &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(subQ),
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + subDLQARN + `"}`, "RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	s.send(t, subDLQ, `{"b":2}`, nil)

	ebDLQ, ebDLQARN := s.queue(t, "iam-eb-dlq", nil)
	_, tq := s.queue(t, "iam-eb-target", nil)
	_, ruleARN := s.rule(t, s.eventBus(t), ebtypes.Target{Id: aws.String("q"), Arn: aws.String(tq), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(ebDLQARN)}})
	s.send(t, ebDLQ, `{"c":3}`, map[string]string{"RULE_ARN": ruleARN, "TARGET_ARN": tq, "ERROR_CODE": "THROTTLING"})

	documented := documentedOriginActions(t)
	for _, sc := range []struct {
		doc, dlq string
		args     []string // nil: redrive DLQ --to source
	}{
		{"dlqctl redrive --to source (Lambda async DLQ)", lambdaDLQ, nil},
		{"dlqctl redrive --to source (SNS subscription DLQ)", subDLQ, nil},
		{"dlqctl redrive --to source (EventBridge target DLQ)", ebDLQ, nil},
		// audit's Lambda, SNS and EventBridge checks, on the three DLQs
		// and the rule's target queue (every listing they make).
		{"dlqctl audit (Lambda, SNS, EventBridge DLQ checks)", "", []string{"audit", lambdaDLQ, subDLQ, ebDLQ, tq, "--sample", "0"}},
	} {
		for _, p := range proxies {
			p.ResetStats()
		}
		s.fake.ResetOps()
		args := sc.args
		if args == nil {
			args = []string{"redrive", sc.dlq, "--yes", "--state-dir", t.TempDir()}
		}
		r := testRun(t, via, args...)
		if r.Code != 0 && (sc.args == nil || r.Code != 3) {
			t.Fatalf("%s: exit %d:\n%s\n%s", sc.doc, r.Code, r.Stdout, r.Stderr)
		}
		seen := map[string]bool{}
		for svc, p := range proxies {
			for op, n := range p.Stats().Requests {
				if n > 0 && op != "" {
					seen[iamOf(svc, op)] = true
				}
			}
		}
		for op, n := range s.fake.Ops() {
			if n > 0 {
				seen[iamOf("lambda", op)] = true
			}
		}
		var got []string
		for a := range seen {
			got = append(got, a)
		}
		sort.Strings(got)
		want, ok := documented[sc.doc]
		if !ok {
			t.Errorf("docs/iam.md has no row for `%s`; it calls %v", sc.doc, got)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("`%s` calls %v; docs/iam.md documents %v", sc.doc, got, want)
		}
	}
}
