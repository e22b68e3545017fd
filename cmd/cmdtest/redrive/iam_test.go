package redrive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// iamAction maps an API operation, as the recording proxies see it, to the
// IAM action that authorizes it (batch calls are authorized as their
// single-message action; HeadBucket/ListObjectsV2 as s3:ListBucket,
// HeadObject as s3:GetObject).
var iamAction = map[string]string{
	"SendMessageBatch":             "sqs:SendMessage",
	"SendMessage":                  "sqs:SendMessage",
	"DeleteMessageBatch":           "sqs:DeleteMessage",
	"DeleteMessage":                "sqs:DeleteMessage",
	"ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
	"ChangeMessageVisibility":      "sqs:ChangeMessageVisibility",
	"HeadBucket":                   "s3:ListBucket",
	"ListObjectsV2":                "s3:ListBucket",
	"HeadObject":                   "s3:GetObject",
	"GetObject":                    "s3:GetObject",
	"PutObject":                    "s3:PutObject",
}

// recordedActions are the IAM actions of the calls the proxies (by
// service prefix) forwarded, sorted.
func recordedActions(proxies map[string]*faultproxy.Proxy) []string {
	seen := map[string]bool{}
	for service, p := range proxies {
		for op, n := range p.Stats().Requests {
			if n == 0 || op == "" {
				continue
			}
			if a, ok := iamAction[op]; ok {
				seen[a] = true
				continue
			}
			seen[service+":"+op] = true
		}
	}
	got := make([]string, 0, len(seen))
	for a := range seen {
		got = append(got, a)
	}
	sort.Strings(got)
	return got
}

// documentedActions reads docs/iam.md's "Actions per command" table: the
// first cell names the scenario (`dlqctl …`), the second lists the actions
// in backticks (the third, "On", names resources and may mention actions
// SQS itself needs).
func documentedActions(t *testing.T) map[string][]string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "iam.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(dlqctl [^`]+)` \\|([^|]*)\\|")
	act := regexp.MustCompile("`((?:sqs|s3|logs|kms):[A-Za-z]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var acts []string
		for _, a := range act.FindAllStringSubmatch(m[2], -1) {
			if !strings.HasPrefix(a[1], "kms:") { // called by S3 on our behalf, not by dlqctl
				acts = append(acts, a[1])
			}
		}
		sort.Strings(acts)
		out[m[1]] = acts
	}
	return out
}

// TestEveryCommandCallsExactlyTheDocumentedActions runs each command (and
// mode) through recording proxies in front of SQS and S3 and compares the
// IAM actions it needed with docs/iam.md: no undocumented call, and no
// documented action that never happens.
func TestEveryCommandCallsExactlyTheDocumentedActions(t *testing.T) {
	env := testenv.Require(t)
	if env.IsMoto() {
		t.Skip("recorded against local-aws-sqs + versitygw")
	}
	sqsP, err := faultproxy.New(env.SQSEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer sqsP.Close()
	s3P, err := faultproxy.New(env.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer s3P.Close()
	via := env
	via.SQSEndpoint, via.S3Endpoint = sqsP.URL, s3P.URL

	p := deadLettered(t, env, orderBodies(30, 0))
	recName := testenv.UniqueName(t, "iamrec")
	clitest.CreateQueue(t, env.SQS(t), recName, nil)
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "iam"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	arch := "s3://" + bucket + "/iam"
	var manifest string

	type scenario struct {
		doc  string   // the docs/iam.md row
		args []string // the command run
		code int      // wanted exit code; -1: a verdict either way (0 or 3)
		post func(stdout string)
	}
	scenarios := []scenario{
		{doc: "dlqctl queues", args: []string{"queues"}},
		{doc: "dlqctl sample", args: []string{"sample", p.dlqName}},
		{doc: "dlqctl group", args: []string{"group", p.dlqName, "--by", "source"}},
		{doc: "dlqctl classify", args: []string{"classify", p.dlqName}},
		{doc: "dlqctl audit", args: []string{"audit", "--prefix", p.dlqName[:len(p.dlqName)-4], "--fail-on", "error"}, code: -1},
		{doc: "dlqctl check", args: []string{"check", p.dlqName, "--max-visible", "1000", "--max-age", "30d"}},
		{doc: "dlqctl watch", args: []string{"watch", p.dlqName, "--count", "1"}},
		{doc: "dlqctl redrive --dry-run", args: []string{"redrive", p.dlqName, "--to", recName, "--dry-run"}},
		{doc: "dlqctl archive --dry-run", args: []string{"archive", p.dlqName, "--to", arch, "--dry-run"}},
		{doc: "dlqctl archive", args: []string{"archive", p.dlqName, "--to", arch, "--yes", "-o", "json"}, post: func(out string) {
			var s struct {
				Manifest string `json:"manifest"`
			}
			_ = json.Unmarshal([]byte(out), &s)
			manifest = s.Manifest
		}},
		{doc: "dlqctl archive verify", args: nil},
		{doc: "dlqctl group --from", args: []string{"group", "--from", arch + "/", "--by", "source"}},
		{doc: "dlqctl archive --delete", args: []string{"archive", p.dlqName, "--to", arch + "2", "--yes", "--delete", "--max", "10"}},
		{doc: "dlqctl restore", args: nil},
		{doc: "dlqctl restore --to source", args: nil},
		{doc: "dlqctl redrive", args: []string{"redrive", p.dlqName, "--to", recName, "--yes", "--max", "5", "--state-dir", state}},
		{doc: "dlqctl redrive --canary", args: []string{"redrive", p.dlqName, "--to", recName, "--yes", "--canary", "2", "--verify-for", "1s", "--verify-poll", "200ms", "--state-dir", state}},
		{doc: "dlqctl redrive --engine native", args: []string{"redrive", p.dlqName, "--engine", "native", "--yes"}},
		{doc: "dlqctl runs", args: []string{"runs", "--state-dir", state}},
		{doc: "dlqctl doctor", args: []string{"doctor", p.dlqName, "--to", recName, "--archive", arch + "/", "--state-dir", state}},
	}
	documented := documentedActions(t)
	for _, sc := range scenarios {
		args := sc.args
		switch sc.doc {
		case "dlqctl archive verify":
			args = []string{"archive", "verify", manifest}
		case "dlqctl restore":
			args = []string{"restore", manifest, "--to", recName, "--yes", "--max", "5", "--state-dir", state}
		case "dlqctl restore --to source":
			args = []string{"restore", manifest, "--to", "source", "--yes", "--max", "5", "--state-dir", state}
		}
		sqsP.ResetStats()
		s3P.ResetStats()
		r := clitest.Run(t, via, "", args...)
		if r.Code != sc.code && (sc.code != -1 || r.Code != 0 && r.Code != 3) {
			t.Fatalf("%s: exit %d, want %d: %s", strings.Join(args, " "), r.Code, sc.code, r.Stderr)
		}
		if sc.post != nil {
			sc.post(r.Stdout)
		}
		got := recordedActions(map[string]*faultproxy.Proxy{"sqs": sqsP, "s3": s3P})
		want, ok := documented[sc.doc]
		if !ok {
			t.Errorf("docs/iam.md has no row for `%s`; it calls %v", sc.doc, got)
			continue
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("`%s` calls %v; docs/iam.md documents %v", sc.doc, got, want)
		}
	}
}

// TestLogsLookupCallsOnlyTheDocumentedActions: `classify --logs` (on
// moto, the stack's CloudWatch Logs) needs the classify row's SQS actions
// and logs:FilterLogEvents, nothing else.
func TestLogsLookupCallsOnlyTheDocumentedActions(t *testing.T) {
	env := testenv.RequireMoto(t)
	sqsP, err := faultproxy.New(env.SQSEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer sqsP.Close()
	logsP, err := faultproxy.New(env.SQSEndpoint) // moto serves every API on one port
	if err != nil {
		t.Fatal(err)
	}
	defer logsP.Close()
	t.Setenv(testenv.EnvLogsEndpoint, logsP.URL)
	via := env
	via.SQSEndpoint = sqsP.URL

	c := env.SQS(t)
	name := testenv.UniqueName(t, "iamlogs")
	url, _ := clitest.CreateQueue(t, c, name, nil)
	out, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"order":"o-1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	group, stream := "/ecs/"+name, "orders/1"
	cwl := env.Logs(t)
	if _, err := cwl.CreateLogGroup(t.Context(), &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cwl.CreateLogStream(t.Context(), &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("2026-12-01T03:00:00.000Z ERROR processing message %s failed: dial tcp 10.0.0.7:5432: connect: connection refused", aws.ToString(out.MessageId))
	if _, err := cwl.PutLogEvents(t.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream),
		LogEvents: []cwltypes.InputLogEvent{{Message: aws.String(line), Timestamp: aws.Int64(time.Now().UnixMilli())}}}); err != nil {
		t.Fatal(err)
	}

	r := clitest.Run(t, via, "", "classify", name, "--logs", group, "--state-dir", t.TempDir(), "-o", "json")
	if r.Code != 0 {
		t.Fatalf("classify --logs: exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "transient") {
		t.Fatalf("the logged connection refusal did not classify the message as transient:\n%s", r.Stdout)
	}
	got := recordedActions(map[string]*faultproxy.Proxy{"sqs": sqsP, "logs": logsP})
	want := documentedActions(t)["dlqctl classify --logs"]
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("`classify --logs` calls %v; docs/iam.md documents %v", got, want)
	}
}
