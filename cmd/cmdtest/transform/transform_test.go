// Package transform tests `redrive --transform` (repair and replay) end
// to end against the local stack: SQS (local-aws-sqs and moto), RabbitMQ
// and S3 (versitygw).
package transform

import (
	"bytes"
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
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// fixExpr repairs the string amounts and refuses (an error: the message
// stays in the DLQ) an order without its required customer.
const fixExpr = `if .json.customer == null then error("customer is required") else .json.amount |= tonumber end`

// incident is a source queue whose RedrivePolicy (maxReceiveCount 2)
// targets a DLQ, with orders dead-lettered through it for real: fixable
// ones (a string amount) and unfixable ones (no customer as well).
type incident struct {
	srcURL, dlqURL, dlqName, srcName string
	fixable, unfixable               []string // bodies
}

func orderBody(i int, customer bool) string {
	if customer {
		return fmt.Sprintf(`{"order":"o-%d","customer":"c-%d","amount":"%d.50","note":"naïve ✓ <tag>"}`, i, i, 10+i)
	}
	return fmt.Sprintf(`{"order":"o-%d","amount":"%d.50"}`, i, 10+i)
}

// repaired is what fixExpr makes of orderBody(i, true): jq's encoding
// (keys sorted, compact, no HTML escaping).
func repaired(i int) string {
	return fmt.Sprintf(`{"amount":%d.5,"customer":"c-%d","note":"naïve ✓ <tag>","order":"o-%d"}`, 10+i, i, i)
}

func deadLettered(t *testing.T, env testenv.Env, fixable, unfixable int) incident {
	t.Helper()
	c := env.SQS(t)
	in := incident{dlqName: testenv.UniqueName(t, "xf-dlq"), srcName: testenv.UniqueName(t, "xf-src")}
	var dlqARN string
	in.dlqURL, dlqARN = clitest.CreateQueue(t, c, in.dlqName, nil)
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": 2})
	in.srcURL, _ = clitest.CreateQueue(t, c, in.srcName, map[string]string{"RedrivePolicy": string(policy)})
	var bodies []string
	for i := range fixable {
		in.fixable = append(in.fixable, orderBody(i, true))
	}
	for i := range unfixable {
		in.unfixable = append(in.unfixable, orderBody(1000+i, false))
	}
	bodies = append(append(bodies, in.fixable...), in.unfixable...)
	for i := 0; i < len(bodies); i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, len(bodies)); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(bodies[j]),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
					"sig":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, byte(j)}},
				}})
		}
		if _, err := c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(in.srcURL), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { worker.Run(ctx, c, worker.Options{QueueURL: in.srcURL, Mode: worker.ModeDown}); close(done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		v, inflight := clitest.QueueDepth(t, c, in.dlqURL)
		if v+inflight >= len(bodies) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages reached the DLQ", v+inflight, len(bodies))
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	<-done
	// A message moved while the worker held it may still be invisible in
	// the DLQ (moto keeps its visibility timeout): wait until all are
	// visible, so the run under test reads every one.
	for {
		v, _ := clitest.SettledDepth(t, c, in.dlqURL)
		if v >= len(bodies) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages are visible in the DLQ", v, len(bodies))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return in
}

// received is one message read from a queue (and given back).
type received struct {
	Body  string
	Attrs map[string]types.MessageAttributeValue
}

// drain reads every message of url (holding them until it is done, then
// giving them back), by message id.
func drain(t *testing.T, c *awssqs.Client, url string) []received {
	t.Helper()
	var out []received
	seen := map[string]bool{}
	var held []types.Message
	// A receive whose answer was lost under load (its messages held for
	// 60 s) is waited out by the client itself (testenv.Env.SQS heals it).
	for empty := 0; empty < 2; {
		r, err := c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: 60, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range r.Messages {
			if !seen[aws.ToString(m.MessageId)] {
				seen[aws.ToString(m.MessageId)] = true
				out = append(out, received{Body: aws.ToString(m.Body), Attrs: m.MessageAttributes})
			}
		}
		held = append(held, r.Messages...)
	}
	for i := 0; i < len(held); i += 10 {
		var e []types.ChangeMessageVisibilityBatchRequestEntry
		for j := i; j < min(i+10, len(held)); j++ {
			e = append(e, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), ReceiptHandle: held[j].ReceiptHandle, VisibilityTimeout: 0})
		}
		_, _ = c.ChangeMessageVisibilityBatch(context.Background(), &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: e})
	}
	return out
}

func bodies(ms []received) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		out[m.Body]++
	}
	return out
}

func TestTransformBadInputExitsTwo(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fix.jq")
	if err := os.WriteFile(file, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "q", "--transform", ".json.amount |= tonumber", "--yes"}, "--archive-originals s3://"},
		{[]string{"redrive", "q", "--transform", ".json.amount |=", "--archive-originals", "s3://b/p"}, "invalid expression"},
		{[]string{"redrive", "q", "--transform", ".", "--transform-file", file}, "exclude each other"},
		{[]string{"redrive", "q", "--transform-file", file, "--archive-originals", "s3://b/p"}, "is empty"},
		{[]string{"redrive", "q", "--archive-originals", "s3://b/p"}, "add --transform EXPR"},
		{[]string{"redrive", "q", "--transform", ".", "--archive-originals", "/tmp/x"}, "s3://BUCKET/PREFIX"},
		{[]string{"redrive", "q", "--engine", "native", "--transform", ".", "--archive-originals", "s3://b/p"}, "cannot honour --transform"},
		{[]string{"redrive", "kafka://127.0.0.1:1/orders.DLT", "--transform", ".", "--yes"}, "--archive-originals s3://"},
		{[]string{"redrive", "q", "--transform", ".", "--archive-originals", "s3://b/p", "--originals-sse", "aes256"}, "--originals-sse \"aes256\": use AES256, aws:kms or aws:kms:dsse"},
		{[]string{"redrive", "q", "--transform", ".", "--archive-originals", "s3://b/p", "--originals-kms-key-id", "alias/dlq"}, "--originals-kms-key-id needs --originals-sse aws:kms"},
		{[]string{"redrive", "q", "--transform", ".", "--dry-run", "--originals-sse", "AES256"}, "add --archive-originals s3://BUCKET/PREFIX, or drop them"},
		{[]string{"archive", "q", "--to", "s3://dlq-archive/p", "--sse", "kms"}, "--sse \"kms\": use AES256"},
	}
	for _, tc := range cases {
		r := clitest.Run(t, testenv.Env{}, "", tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// TestTransformRedriveRepairsArchivesAndLeavesTheUnfixable is the issue's
// "done means" on SQS (local-aws-sqs and moto): the fixable orders reach
// their source repaired with their attributes and the provenance marker,
// the unfixable stay in the DLQ unchanged, the archive holds every
// original byte for byte (verified), and restoring it undoes the fix.
func TestTransformRedriveRepairsArchivesAndLeavesTheUnfixable(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, env testenv.Env) {
		in := deadLettered(t, env, 9, 3)
		bucket := clitest.Bucket(t, env, "xf")
		state := t.TempDir()
		r := clitest.Run(t, env, "", "--state-dir", state, "redrive", in.dlqName, "--transform", fixExpr,
			"--archive-originals", "s3://"+bucket+"/originals", "--yes", "-o", "json")
		if r.Code != 4 {
			t.Fatalf("exit %d (want 4: three orders could not be repaired)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		var sum cmd.RedriveSummary
		if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
			t.Fatal(err)
		}
		xf := sum.Transform
		if sum.Moved != 9 || xf == nil || xf.Changed != 9 || xf.Unchanged != 0 || xf.Failed != 3 || len(xf.Errors) != 1 ||
			xf.Errors[0].Reason != transform.ReasonExpression || xf.Errors[0].Count != 3 || !strings.Contains(xf.Errors[0].FirstError, "customer is required") ||
			xf.Errors[0].FirstID == "" || sum.Skipped[redrive.SkipTransform] != 3 {
			t.Fatalf("summary %+v transform %+v", sum.Result, xf)
		}
		if xf.Originals == nil || xf.Originals.Records != 9 || !strings.HasPrefix(xf.Originals.Manifest, "s3://"+bucket+"/originals/") {
			t.Fatalf("originals %+v", xf.Originals)
		}
		if !strings.Contains(r.Stderr, "could not be transformed") {
			t.Errorf("stderr does not say why the run is partial: %q", r.Stderr)
		}

		c := env.SQS(t)
		left := bodies(drain(t, c, in.dlqURL))
		wantLeft := map[string]int{}
		for _, b := range in.unfixable {
			wantLeft[b] = 1
		}
		if !equalCounts(left, wantLeft) {
			t.Fatalf("DLQ holds %v, want the unfixable orders unchanged %v", left, wantLeft)
		}
		got := drain(t, c, in.srcURL)
		want := map[string]int{}
		for i := range in.fixable {
			want[repaired(i)] = 1
		}
		if gb := bodies(got); !equalCounts(gb, want) {
			// A send whose answer was lost and that the SDK retried
			// (moto slow under load) may leave two copies; the run must
			// have reported each as possibly delivered twice.
			extra := 0
			for b, n := range gb {
				if want[b] == 0 {
					t.Fatalf("source holds %q, which is no repaired order\n%v", b, gb)
				}
				extra += n - 1
			}
			if len(gb) != len(want) || extra > sum.MaybeTwice {
				t.Fatalf("source holds %v\nwant %v (%d extra copies, %d reported as possibly delivered twice)", gb, want, extra, sum.MaybeTwice)
			}
			t.Logf("%d extra copies, all reported as possibly delivered twice (maybe_twice %d)", extra, sum.MaybeTwice)
		}
		for _, m := range got {
			if aws.ToString(m.Attrs["tenant"].StringValue) != "acme" || len(m.Attrs["sig"].BinaryValue) != 4 {
				t.Errorf("copy lost its attributes: %+v", m.Attrs)
			}
			var mk transform.Marker
			if err := json.Unmarshal([]byte(aws.ToString(m.Attrs[transform.Attribute].StringValue)), &mk); err != nil ||
				mk.RunID != sum.RunID || mk.ExprSHA256 != xf.SHA256 || mk.OriginalID == "" {
				t.Errorf("provenance marker %q (run %s, sha %s)", aws.ToString(m.Attrs[transform.Attribute].StringValue), sum.RunID, xf.SHA256)
			}
		}

		// The archive: verified, and every original byte for byte.
		if v := clitest.Run(t, env, "", "archive", "verify", xf.Originals.Manifest, "-o", "json"); v.Code != 0 {
			t.Fatalf("archive verify: exit %d\n%s\n%s", v.Code, v.Stdout, v.Stderr)
		}
		recs := clitest.SampleArchive(t, env, xf.Originals.Manifest)
		arch := map[string]int{}
		for _, rec := range recs {
			arch[rec.Body]++
			if rec.Attributes["tenant"].Value != "acme" || rec.Attributes["sig"].Base64 == "" {
				t.Errorf("archived original lost its attributes: %+v", rec.Attributes)
			}
		}
		wantArch := map[string]int{}
		for _, b := range in.fixable {
			wantArch[b] = 1
		}
		if !equalCounts(arch, wantArch) {
			t.Fatalf("archive holds %v\nwant the originals %v", arch, wantArch)
		}

		// runs shows the expression the journal recorded.
		rr := clitest.Run(t, env, "", "--state-dir", state, "runs", "-o", "json")
		if rr.Code != 0 || !strings.Contains(rr.Stdout, `"expression_sha256": "`+xf.SHA256+`"`) || !strings.Contains(rr.Stdout, "customer is required") {
			t.Fatalf("runs -o json does not show the transform: %s", rr.Stdout)
		}

		// Undo: the originals restore unchanged.
		undoName := testenv.UniqueName(t, "xf-undo")
		undoURL, _ := clitest.CreateQueue(t, c, undoName, nil)
		u := clitest.Run(t, env, "", "--state-dir", state, "restore", xf.Originals.Manifest, "--to", undoName, "--yes", "-o", "json")
		if u.Code != 0 {
			t.Fatalf("restore of the originals: exit %d\n%s\n%s", u.Code, u.Stdout, u.Stderr)
		}
		if ub := bodies(drain(t, c, undoURL)); !equalCounts(ub, wantArch) {
			t.Fatalf("restored %v, want the originals %v", ub, wantArch)
		}

		// restore --transform repairs on the way out of an archive (no
		// --archive-originals: the archive is the originals).
		fixName := testenv.UniqueName(t, "xf-fix")
		fixURL, _ := clitest.CreateQueue(t, c, fixName, nil)
		rf := clitest.Run(t, env, "", "--state-dir", state, "restore", xf.Originals.Manifest, "--to", fixName, "--transform", fixExpr, "--yes", "-o", "json")
		var rsum cmd.RestoreSummary
		if rf.Code != 0 || json.Unmarshal([]byte(rf.Stdout), &rsum) != nil || rsum.Transform == nil || rsum.Transform.Changed != 9 || rsum.Transform.Originals != nil {
			t.Fatalf("restore --transform: exit %d\n%s\n%s", rf.Code, rf.Stdout, rf.Stderr)
		}
		if fb := bodies(drain(t, c, fixURL)); !equalCounts(fb, want) {
			t.Fatalf("restore --transform sent %v, want %v", fb, want)
		}
	})
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTransformEveryMessageFailingRefuses: an expression that fails on
// every message moves nothing, archives nothing, and exits 2.
func TestTransformEveryMessageFailingRefuses(t *testing.T) {
	env := testenv.Require(t)
	in := deadLettered(t, env, 0, 4)
	bucket := clitest.Bucket(t, env, "xf")
	r := clitest.Run(t, env, "", "--state-dir", t.TempDir(), "redrive", in.dlqName, "--transform", fixExpr,
		"--archive-originals", "s3://"+bucket+"/originals", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--transform failed on every message read (4 message(s)") || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Fatalf("exit %d, stderr %q; want exit 2 refusing the expression", r.Code, r.Stderr)
	}
	if left := bodies(drain(t, env.SQS(t), in.dlqURL)); len(left) != 4 {
		t.Fatalf("DLQ holds %v; want the 4 messages untouched", left)
	}
	if got := drain(t, env.SQS(t), in.srcURL); len(got) != 0 {
		t.Fatalf("the source received %d message(s)", len(got))
	}
	objs, err := env.S3(t).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Contents) != 0 {
		t.Fatalf("the archive holds %d object(s); want nothing written", len(objs.Contents))
	}
}

// TestTransformDryRunDiff: --dry-run --transform shows the before/after
// of each sampled message and the counts; plain when piped, coloured on a
// terminal; and its -o json follows docs/schema (clitest.Run checks).
func TestTransformDryRunDiff(t *testing.T) {
	env := testenv.Require(t)
	in := deadLettered(t, env, 2, 1)
	args := []string{"redrive", in.dlqName, "--transform", fixExpr, "--dry-run"}

	piped := clitest.Run(t, env, "", args...)
	if piped.Code != 0 {
		t.Fatalf("exit %d\n%s\n%s", piped.Code, piped.Stdout, piped.Stderr)
	}
	for _, want := range []string{
		`  - .json.amount: "10.50"`, `  + .json.amount: 10.5`, `  - .json.amount: "11.50"`, `  + .json.amount: 11.5`,
		"failed ", "customer is required",
		"transform: 2 changed, 0 unchanged, 1 failed",
		"failed: 1 expression error (first: message ",
	} {
		if !strings.Contains(piped.Stdout, want) {
			t.Errorf("piped dry run lacks %q:\n%s", want, piped.Stdout)
		}
	}
	if strings.Contains(piped.Stdout, "\x1b[") {
		t.Errorf("piped output has colour codes:\n%q", piped.Stdout)
	}
	if strings.Contains(piped.Stdout, ".attributes.") {
		t.Errorf("the diff shows attribute changes the expression did not make:\n%s", piped.Stdout)
	}

	// On a terminal: the same lines, in colour (red before, green after).
	var out, errOut bytes.Buffer
	io := output.Test(strings.NewReader(""), &out, &errOut, true)
	io.Color = true
	clitest.SetStackEnv(t, env)
	if code := cmd.Run(t.Context(), io, args); code != 0 {
		t.Fatalf("tty: exit %d\n%s", code, errOut.String())
	}
	for _, want := range []string{"\x1b[31m  - .json.amount: \"10.50\"\x1b[0m", "\x1b[32m  + .json.amount: 10.5\x1b[0m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tty dry run lacks %q:\n%q", want, out.String())
		}
	}

	// -o json: the counts and the samples (schema-checked by clitest.Run).
	j := clitest.Run(t, env, "", append(args, "-o", "json")...)
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(j.Stdout), &plan); err != nil || j.Code != 0 {
		t.Fatalf("exit %d, %v\n%s", j.Code, err, j.Stdout)
	}
	tp := plan.Transform
	if tp == nil || tp.Changed != 2 || tp.Failed != 1 || len(tp.Samples) != 3 || plan.WouldMove != 2 || plan.Skipped[redrive.SkipTransform] != 1 {
		t.Fatalf("plan %+v transform %+v", plan.Plan, tp)
	}
	// Nothing changed: the DLQ still holds all three, unchanged.
	if left := bodies(drain(t, env.SQS(t), in.dlqURL)); len(left) != 3 || left[in.fixable[0]] != 1 {
		t.Fatalf("DLQ after dry runs: %v", left)
	}
}
