package inspect

// --logs end to end on moto_server (SQS and CloudWatch Logs): plain
// messages dead-lettered by a real RedrivePolicy while the demo consumer
// logs its failures in three styles, then classified from those logs.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// logsIncident is a DLQ on moto fed by three consumers that log their
// failures to their own log groups, plus one message no consumer ever
// logged.
type logsIncident struct {
	env    testenv.Env
	dlq    string
	groups map[string]string // style -> log group
	ids    map[string]string // message id -> style ("none" for the unlogged one)
}

func seedLogsIncident(t *testing.T, perStyle int) *logsIncident {
	t.Helper()
	env := testenv.RequireMoto(t)
	t.Setenv(testenv.EnvLogsEndpoint, env.SQSEndpoint)
	c := env.SQS(t)
	cwl := env.Logs(t)
	ctx := t.Context()
	base := testenv.UniqueName(t, "lg")
	dlqURL, dlqARN := clitest.CreateQueue(t, c, base+"-dlq", nil)
	inc := &logsIncident{env: env, dlq: dlqURL, groups: map[string]string{}, ids: map[string]string{}}
	styles := []struct{ style, mode, group string }{
		{worker.StylePowertools, worker.ModeDown, "/aws/lambda/" + base + "-payments"},
		{worker.StyleService, worker.ModeBug, "/ecs/" + base + "-orders"},
		{worker.StyleLambda, worker.ModeDown, "/aws/lambda/" + base + "-shipping"},
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, len(styles))
	defer func() {
		stop()
		for range styles {
			<-done
		}
	}()
	for i, s := range styles {
		redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqARN)
		url, _ := clitest.CreateQueue(t, c, fmt.Sprintf("%s-src%d", base, i), map[string]string{"RedrivePolicy": redrive})
		inc.groups[s.style] = s.group
		for n := 0; n < perStyle; n += 10 {
			var entries []types.SendMessageBatchRequestEntry
			for j := n; j < min(n+10, perStyle); j++ {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)),
					MessageBody: aws.String(fmt.Sprintf(`{"eventType":"OrderPaid","payload":{"order":"o-%d","amount":null}}`, j))})
			}
			out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("send: %v %v", err, out)
			}
			for _, ok := range out.Successful {
				inc.ids[aws.ToString(ok.MessageId)] = s.style
			}
		}
		sink := &worker.LogSink{API: cwl, Group: s.group, Style: s.style}
		go func() {
			worker.Run(wctx, c, worker.Options{QueueURL: url, Mode: s.mode, Concurrency: 1, Logs: sink,
				OnError: func(err error) { t.Logf("worker %s: %v", s.style, err) }})
			done <- struct{}{}
		}()
	}
	// One plain message no consumer ever saw: its logs say nothing.
	out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(`{"eventType":"OrderPaid","payload":{"order":"o-x"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	inc.ids[aws.ToString(out.MessageId)] = "none"
	want := 3*perStyle + 1
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, f := clitest.QueueDepth(t, c, dlqURL)
		if v+f >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages were dead-lettered", v+f, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return inc
}

func (inc *logsIncident) logsFlag() string {
	return inc.groups[worker.StylePowertools] + "," + inc.groups[worker.StyleService] + "," + inc.groups[worker.StyleLambda]
}

func TestClassifyWithLogsFindsWhyPlainMessagesFailed(t *testing.T) {
	inc := seedLogsIncident(t, 12)
	state := t.TempDir()
	// Without --logs: SQS recorded no reason, everything is unknown.
	plain := clitest.Run(t, inc.env, "", "classify", inc.dlq, "--all", "-o", "json")
	if plain.Code != 0 {
		t.Fatalf("classify: %d %s", plain.Code, plain.Stderr)
	}
	var recs []record.Record
	if err := json.Unmarshal([]byte(plain.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Class != "unknown" {
			t.Fatalf("without --logs %s is %s, want unknown", r.MessageID, r.Class)
		}
	}

	res := clitest.Run(t, inc.env, "", "classify", inc.dlq, "--all", "--logs", inc.logsFlag(), "--state-dir", state, "-o", "json")
	if res.Code != 0 {
		t.Fatalf("classify --logs: %d %s", res.Code, res.Stderr)
	}
	recs = nil
	if err := json.Unmarshal([]byte(res.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(inc.ids) {
		t.Fatalf("classified %d messages, want %d", len(recs), len(inc.ids))
	}
	want := map[string]struct{ class, rule, typ string }{
		worker.StylePowertools: {"transient", "transient-failure", "ConnectionError"},
		worker.StyleService:    {"permanent", "permanent-failure", ""},
		worker.StyleLambda:     {"transient", "transient-failure", ""},
		"none":                 {"unknown", "default", ""},
	}
	for _, r := range recs {
		style, ok := inc.ids[r.MessageID]
		if !ok {
			t.Fatalf("unexpected message %s", r.MessageID)
		}
		w := want[style]
		if r.Class != w.class || r.Rule != w.rule {
			b, _ := json.Marshal(r.Failure)
			t.Errorf("%s (%s): class %s rule %s, want %s/%s; failure %s", r.MessageID, style, r.Class, r.Rule, w.class, w.rule, b)
			continue
		}
		f := r.Failure
		if style == "none" {
			if f == nil || f.Source == nil || f.Source.Note != "no log line mentions this message" || f.HasContext() {
				t.Errorf("unlogged message: failure %+v, want only the note that no log line mentions it", f)
			}
			continue
		}
		if f == nil || f.Format != "logs" || f.Source == nil || f.Source.LogGroup != inc.groups[style] || f.Source.LogStream == "" || f.Source.Timestamp.IsZero() || len(f.Source.Lines) == 0 {
			t.Errorf("%s (%s): failure %+v, want format logs with its source in %s", r.MessageID, style, f, inc.groups[style])
			continue
		}
		if w.typ != "" && f.Type != w.typ {
			t.Errorf("%s (%s): failure type %q, want %q", r.MessageID, style, f.Type, w.typ)
		}
		if style == worker.StyleLambda && (f.Source.RequestID == "" || !strings.Contains(f.Reason, "Task timed out after")) {
			t.Errorf("lambda: request id %q reason %q, want the invocation's timeout found through its request id", f.Source.RequestID, f.Reason)
		}
	}
	if !strings.Contains(res.Stderr, "FilterLogEvents call(s)") || strings.Contains(res.Stderr, "from the cache") {
		t.Errorf("first run stderr: %s", res.Stderr)
	}

	// A re-run reads the cache: no call at all.
	again := clitest.Run(t, inc.env, "", "classify", inc.dlq, "--all", "--logs", inc.logsFlag(), "--state-dir", state, "--summary", "-o", "json")
	if again.Code != 0 || !strings.Contains(again.Stderr, "0 FilterLogEvents call(s) (37 answered from the cache)") {
		t.Errorf("re-run: code %d stderr %s", again.Code, again.Stderr)
	}

	// Throttled searches are retried: through a proxy that answers every
	// second FilterLogEvents with ThrottlingException (3 times), a fresh
	// search gives the same answer.
	proxy, err := faultproxy.New(inc.env.SQSEndpoint, faultproxy.Fault{Action: "FilterLogEvents", Kind: faultproxy.Throttle, Every: 2, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	t.Setenv(testenv.EnvLogsEndpoint, proxy.URL)
	thr := clitest.Run(t, inc.env, "", "classify", inc.dlq, "--all", "--logs", inc.logsFlag(), "--state-dir", state, "--logs-refresh", "--summary", "-o", "json")
	t.Setenv(testenv.EnvLogsEndpoint, inc.env.SQSEndpoint)
	if thr.Code != 0 || proxy.Stats().Fired[faultproxy.Throttle] != 3 {
		t.Fatalf("throttled run: code %d, throttles %d\n%s", thr.Code, proxy.Stats().Fired[faultproxy.Throttle], thr.Stderr)
	}
	var sum cmd.ClassifyReport
	if err := json.Unmarshal([]byte(thr.Stdout), &sum); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, c := range sum.Classes {
		counts[c.Class] = c.Count
	}
	if counts["transient"] != 24 || counts["permanent"] != 12 || counts["unknown"] != 1 {
		t.Errorf("throttled run classified %v, want 24 transient, 12 permanent, 1 unknown", counts)
	}

	// sample --logs writes records that keep what was found: classify
	// --from needs no --logs (and no CloudWatch Logs) to say the same.
	file := filepath.Join(t.TempDir(), "dlq.ndjson")
	smp := clitest.Run(t, inc.env, "", "sample", inc.dlq, "-n", "100", "--logs", inc.logsFlag(), "--state-dir", state, "-o", "ndjson")
	if smp.Code != 0 || strings.Count(smp.Stdout, "\n") != len(inc.ids) {
		t.Fatalf("sample --logs: %d, %d lines\n%s", smp.Code, strings.Count(smp.Stdout, "\n"), smp.Stderr)
	}
	if err := os.WriteFile(file, []byte(smp.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(testenv.EnvLogsEndpoint, "http://127.0.0.1:9") // nothing listens: offline must not need it
	off := clitest.Run(t, testenv.Env{}, "", "classify", "--from", file, "--summary", "-o", "json")
	t.Setenv(testenv.EnvLogsEndpoint, inc.env.SQSEndpoint)
	sum = cmd.ClassifyReport{}
	if err := json.Unmarshal([]byte(off.Stdout), &sum); off.Code != 0 || err != nil {
		t.Fatalf("classify --from: %d %v\n%s", off.Code, err, off.Stderr)
	}
	offCounts := map[string]int{}
	for _, c := range sum.Classes {
		offCounts[c.Class] = c.Count
	}
	if offCounts["transient"] != 24 || offCounts["permanent"] != 12 || offCounts["unknown"] != 1 {
		t.Errorf("classify --from the sampled records: %v, want what --logs found (24 transient, 12 permanent, 1 unknown)", offCounts)
	}

	// --explain shows the log lines used (the Lambda one through its request id).
	var lambdaID, noneID string
	for id, s := range inc.ids {
		switch s {
		case worker.StyleLambda:
			lambdaID = id
		case "none":
			noneID = id
		}
	}
	ex := clitest.Run(t, inc.env, "", "classify", inc.dlq, "--logs", inc.logsFlag(), "--state-dir", state, "--explain", lambdaID)
	for _, s := range []string{"format: logs", "through Lambda request", "processing record " + lambdaID, "Task timed out after 3.00 seconds", "=> class transient"} {
		if !strings.Contains(ex.Stdout, s) {
			t.Errorf("--explain lacks %q:\n%s", s, ex.Stdout)
		}
	}
	ex = clitest.Run(t, inc.env, "", "classify", inc.dlq, "--logs", inc.logsFlag(), "--state-dir", state, "--explain", noneID)
	if !strings.Contains(ex.Stdout, "no log line mentions this message") || !strings.Contains(ex.Stdout, "=> class unknown") {
		t.Errorf("--explain of the unlogged message:\n%s", ex.Stdout)
	}
}

func TestLogsFlagsBadInput(t *testing.T) {
	env := testenv.RequireMoto(t)
	t.Setenv(testenv.EnvLogsEndpoint, env.SQSEndpoint)
	c := env.SQS(t)
	url, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lgbad"), nil)
	// A missing group is bad input even when no message needs the logs:
	// on an empty queue nothing would ever look it up.
	empty, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lgempty"), nil)
	missing := "/aws/lambda/" + testenv.UniqueName(t, "missing")
	if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"classify", url, "--logs", "arn:aws:logs:us-east-1:1:log-group:x"}, "is not a CloudWatch Logs group name"},
		{[]string{"classify", url, "--logs", "/x", "--logs-window", "yesterday"}, "--logs-window"},
		{[]string{"group", url, "--by", "error", "--logs-window", "6h"}, "need --logs"},
		{[]string{"sample", url, "--logs", missing}, "does not exist"},
		{[]string{"sample", empty, "--logs", missing}, "does not exist"},
		{[]string{"group", empty, "--by", "error", "--logs", missing}, "does not exist"},
		{[]string{"classify", empty, "--logs", missing}, "does not exist"},
		{[]string{"redrive", empty, "--to", url, "--class", "transient", "--logs", missing, "--yes"}, "does not exist"},
	} {
		res := clitest.Run(t, env, "", append(tc.args, "--state-dir", t.TempDir())...)
		if res.Code != 2 || !strings.Contains(res.Stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, res.Code, res.Stderr, tc.want)
		}
	}
	if v, f := clitest.SettledDepth(t, c, url); v != 1 || f != 0 {
		t.Errorf("after the bad runs the queue holds %d visible / %d in flight, want 1 / 0", v, f)
	}
}

// redrive --class transient --logs moves exactly the messages whose logs
// name a transient failure; the rest stay in the DLQ.
func TestRedriveClassTransientWithLogs(t *testing.T) {
	inc := seedLogsIncident(t, 6)
	c := inc.env.SQS(t)
	destURL, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lgdest"), nil)
	state := t.TempDir()
	dry := clitest.Run(t, inc.env, "", "redrive", inc.dlq, "--to", destURL, "--class", "transient", "--logs", inc.logsFlag(), "--state-dir", state, "--dry-run", "-o", "json")
	if dry.Code != 0 || !strings.Contains(dry.Stderr, "FilterLogEvents call(s)") {
		t.Fatalf("dry-run: %d\n%s\n%s", dry.Code, dry.Stdout, dry.Stderr)
	}
	// archive selects by the same evidence: the 6 whose logs name a
	// validation error are the permanent ones.
	bucket := testenv.BucketName(t, "lg")
	if _, err := inc.env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	arch := clitest.Run(t, inc.env, "", "archive", inc.dlq, "--to", "s3://"+bucket+"/dlq", "--class", "permanent", "--logs", inc.logsFlag(), "--state-dir", state, "--dry-run", "-o", "json")
	var plan struct {
		Selected int `json:"selected"`
		Scanned  int `json:"scanned"`
	}
	if err := json.Unmarshal([]byte(arch.Stdout), &plan); arch.Code != 0 || err != nil || plan.Selected != 6 || plan.Scanned != 19 {
		t.Fatalf("archive --class permanent --logs --dry-run: code %d, plan %+v (%v), want 6 of 19\n%s", arch.Code, plan, err, arch.Stderr)
	}
	res := clitest.Run(t, inc.env, "", "redrive", inc.dlq, "--to", destURL, "--class", "transient", "--logs", inc.logsFlag(), "--state-dir", state, "--yes", "--concurrency", "2")
	if res.Code != 0 {
		t.Fatalf("redrive: %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "answered from the cache") {
		t.Errorf("the redrive searched the logs again instead of using what the dry run cached:\n%s", res.Stderr)
	}
	moved := map[string]bool{}
	for _, b := range receiveAllRecords(t, c, destURL) {
		moved[b] = true
	}
	left := map[string]bool{}
	for _, b := range receiveAllRecords(t, c, inc.dlq) {
		left[b] = true
	}
	if len(moved) != 12 || len(left) != 7 {
		t.Fatalf("moved %d, left %d; want the 12 transient ones moved and 7 left", len(moved), len(left))
	}
	for id := range moved {
		if s := inc.ids[id]; s != worker.StylePowertools && s != worker.StyleLambda {
			t.Errorf("moved %s, whose logs (%s) name no transient failure", id, s)
		}
	}
	for id := range left {
		if s := inc.ids[id]; s != worker.StyleService && s != "none" {
			t.Errorf("left %s (%s) in the DLQ although its logs name a transient failure", id, s)
		}
	}
}

// receiveAllRecords drains url and returns the original message ids of
// what it held (the dlqctl redrive marker names the original of a copy).
func receiveAllRecords(t *testing.T, c *sqs.Client, url string) []string {
	t.Helper()
	var ids []string
	for empty := 0; empty < 2; {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if a, ok := m.MessageAttributes[record.MarkerAttribute]; ok {
				var mk record.Marker
				if json.Unmarshal([]byte(aws.ToString(a.StringValue)), &mk) == nil && mk.OriginalID != "" {
					id = mk.OriginalID
				}
			}
			ids = append(ids, id)
			if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

// A search that finds nothing for any message says what to check instead
// of leaving the user with a wall of unknowns.
func TestLogsNothingFoundSaysWhatToCheck(t *testing.T) {
	env := testenv.RequireMoto(t)
	t.Setenv(testenv.EnvLogsEndpoint, env.SQSEndpoint)
	c := env.SQS(t)
	url, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lgnone"), nil)
	var entries []types.SendMessageBatchRequestEntry
	for i := 0; i < 10; i++ {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(`{"n":1}`)})
	}
	if _, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
		t.Fatal(err)
	}
	group := "/aws/lambda/" + testenv.UniqueName(t, "quiet")
	if err := (&worker.LogSink{API: env.Logs(t), Group: group, Style: worker.StyleService}).Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := clitest.Run(t, env, "", "classify", url, "--summary", "--logs", group, "--state-dir", t.TempDir())
	if res.Code != 0 || !strings.Contains(res.Stderr, "mentions any of the 10 messages") || !strings.Contains(res.Stdout, "unknown") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", res.Code, res.Stdout, res.Stderr)
	}
}
