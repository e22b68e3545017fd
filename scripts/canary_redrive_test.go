// Package scripts tests the shell scripts in this directory against the
// local stack (scripts/stack.sh) with the dlqctl built from this checkout.
package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
)

// summary is the JSON canary-redrive.sh prints on stdout.
type summary struct {
	DLQ       string                     `json:"dlq"`
	Status    string                     `json:"status"`
	StoppedAt *string                    `json:"stopped_at"`
	Reason    string                     `json:"reason"`
	ExitCode  int                        `json:"exit_code"`
	Moved     int                        `json:"moved"`
	Stages    map[string]json.RawMessage `json:"stages"`
}

type result struct {
	code           int
	stdout, stderr string
	sum            summary
}

func runScript(t *testing.T, env testenv.Env, args ...string) result {
	t.Helper()
	bin := testenv.BuildBinary(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatalf("canary-redrive.sh needs jq: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"canary-redrive.sh"}, args...)...)
	cmd.Env = append(env.Environ(), "DLQCTL="+bin, "XDG_STATE_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	if strings.TrimSpace(r.stdout) != "" {
		if err := json.Unmarshal(out.Bytes(), &r.sum); err != nil {
			t.Fatalf("stdout is not the JSON summary: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
		}
	}
	return r
}

// pair is a source queue whose RedrivePolicy (maxReceiveCount 2) targets a
// DLQ holding bodies that were dead-lettered through it for real.
type pair struct{ src, dlq, dlqName string }

func mkQueue(t *testing.T, c *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return url, a.Attributes[string(types.QueueAttributeNameQueueArn)]
}

func deadLettered(t *testing.T, env testenv.Env, bodies []string) pair {
	t.Helper()
	c := env.SQS(t)
	p := pair{dlqName: testenv.UniqueName(t, "dlq")}
	var dlqARN string
	p.dlq, dlqARN = mkQueue(t, c, p.dlqName, nil)
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": 2})
	p.src, _ = mkQueue(t, c, testenv.UniqueName(t, "src"), map[string]string{"RedrivePolicy": string(policy)})
	for i := 0; i < len(bodies); i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, len(bodies)); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(bodies[j])})
		}
		if _, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.src), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	stop := startWorker(t, env, p.src, worker.ModeDown)
	deadline := time.Now().Add(time.Minute)
	for depth(t, c, p.dlq) < len(bodies) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages reached the DLQ", depth(t, c, p.dlq), len(bodies))
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	return p
}

// startWorker consumes url in mode until the returned stop is called (or
// the test ends).
func startWorker(t *testing.T, env testenv.Env, url, mode string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		worker.Run(ctx, env.SQS(t), worker.Options{QueueURL: url, Mode: mode})
		close(done)
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func depth(t *testing.T, c *sqs.Client, url string) int {
	t.Helper()
	a, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range a.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// orders returns n OrderPaid bodies; with nullAmounts every amount is null,
// which the worker's "bug" mode fails.
func orders(n int, nullAmounts bool) []string {
	out := make([]string, n)
	for i := range out {
		amount := fmt.Sprintf("%d.90", 10+i)
		if nullAmounts {
			amount = "null"
		}
		out[i] = fmt.Sprintf(`{"eventType":"OrderPaid","eventId":"e-%d","payload":{"orderId":"o-%d","amount":%s}}`, i, i, amount)
	}
	return out
}

func oneLine(t *testing.T, stderr, prefix string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "canary-redrive: "+prefix) {
		t.Errorf("last stderr line %q; want it to start with %q", last, "canary-redrive: "+prefix)
	}
}

func TestCanaryRedrivePassesAndEmptiesTheDLQ(t *testing.T) {
	env := testenv.Require(t)
	t.Parallel()
	c := env.SQS(t)
	p := deadLettered(t, env, orders(30, true))
	startWorker(t, env, p.src, worker.ModeOK) // the fix shipped

	r := runScript(t, env, p.dlqName, "--canary", "3", "--verify-for", "2s", "--verify-poll", "500ms",
		"--ramp", "10,50", "--ramp-every", "1s", "--guard-interval", "500ms")
	if r.code != 0 || r.sum.Status != "ok" || r.sum.StoppedAt != nil {
		t.Fatalf("exit %d, summary %+v; want exit 0 and status ok\nstderr: %s", r.code, r.sum, r.stderr)
	}
	if r.sum.Moved != 30 {
		t.Errorf("summary says %d moved, want all 30", r.sum.Moved)
	}
	for _, st := range []string{"dry-run", "canary", "redrive"} {
		if _, ok := r.sum.Stages[st]; !ok {
			t.Errorf("summary has no %s stage: %s", st, r.stdout)
		}
	}
	if d := depth(t, c, p.dlq); d != 0 {
		t.Errorf("DLQ still holds %d messages", d)
	}
	deadline := time.Now().Add(20 * time.Second)
	for depth(t, c, p.src) != 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if d := depth(t, c, p.src); d != 0 {
		t.Errorf("the fixed worker left %d messages in the source", d)
	}
}

func TestCanaryRedriveStopsAtAFailingCanary(t *testing.T) {
	env := testenv.Require(t)
	t.Parallel()
	c := env.SQS(t)
	p := deadLettered(t, env, orders(20, true))
	startWorker(t, env, p.src, worker.ModeBug) // the bug is still live

	r := runScript(t, env, p.dlqName, "--canary", "3", "--verify-for", "8s", "--verify-poll", "500ms",
		"--ramp", "10,50", "--ramp-every", "1s")
	if r.code != 3 || r.sum.Status != "canary-failed" || r.sum.StoppedAt == nil || *r.sum.StoppedAt != "canary" {
		t.Fatalf("exit %d, summary %+v; want exit 3 stopped at the canary\nstderr: %s", r.code, r.sum, r.stderr)
	}
	oneLine(t, r.stderr, "canary failed: ")
	if _, ran := r.sum.Stages["redrive"]; ran {
		t.Errorf("the ramped redrive ran after a failed canary: %s", r.stdout)
	}
	// The 3 canary messages failed again and came back: all 20 are in the
	// DLQ (nothing lost), none left in the source.
	deadline := time.Now().Add(20 * time.Second)
	for depth(t, c, p.dlq) != 20 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if d, s := depth(t, c, p.dlq), depth(t, c, p.src); d != 20 || s != 0 {
		t.Errorf("DLQ %d, source %d; want all 20 back in the DLQ", d, s)
	}
}

func TestCanaryRedriveStopsAtATrippedGuard(t *testing.T) {
	env := testenv.Require(t)
	t.Parallel()
	c := env.SQS(t)
	p := deadLettered(t, env, orders(40, false))
	// Nobody consumes the source: its backlog grows past the guard.
	r := runScript(t, env, p.dlqName, "--canary", "2", "--verify-for", "1s", "--verify-poll", "500ms",
		"--ramp", "5", "--ramp-every", "1m", "--max-dest-backlog", "6", "--guard-interval", "500ms")
	if r.code != 3 || r.sum.Status != "guard-tripped" || r.sum.StoppedAt == nil || *r.sum.StoppedAt != "redrive" {
		t.Fatalf("exit %d, summary %+v; want exit 3 from the guard\nstderr: %s", r.code, r.sum, r.stderr)
	}
	oneLine(t, r.stderr, "guard max-dest-backlog tripped")
	if d, s := depth(t, c, p.dlq), depth(t, c, p.src); d+s != 40 || d == 0 {
		t.Errorf("DLQ %d + source %d; want 40 in all with the rest still in the DLQ", d, s)
	}
}

func TestCanaryRedriveNothingToDoAndBadInput(t *testing.T) {
	env := testenv.Require(t)
	t.Parallel()
	c := env.SQS(t)
	name := testenv.UniqueName(t, "empty-dlq")
	mkQueue(t, c, name, nil)
	r := runScript(t, env, name, "--canary", "3")
	if r.code != 0 || r.sum.Status != "ok" || r.sum.Reason != "nothing to redrive" || r.sum.Moved != 0 {
		t.Fatalf("empty DLQ: exit %d, summary %+v, stderr %s", r.code, r.sum, r.stderr)
	}
	if _, ran := r.sum.Stages["canary"]; ran {
		t.Errorf("a canary ran on an empty DLQ")
	}

	for _, args := range [][]string{{}, {name, "--canary", "zero"}, {name, "--bogus"}} {
		r := runScript(t, env, args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "canary-redrive: ") {
			t.Errorf("args %q: exit %d, stderr %q; want exit 2 and one line", args, r.code, r.stderr)
		}
	}

	r = runScript(t, env, testenv.UniqueName(t, "missing"), "--canary", "3")
	if r.code != 2 || r.sum.Status != "failed" || r.sum.StoppedAt == nil || *r.sum.StoppedAt != "dry-run" {
		t.Errorf("missing DLQ: exit %d, summary %+v; want dlqctl's exit 2 passed through from the dry-run", r.code, r.sum)
	}
	oneLine(t, r.stderr, "dry-run failed (exit 2): ")
}

// On a Kafka DLT the script needs no flag of its own: it does not pass
// --max-returns by default (a topic keeps every record, so its depth shows
// no returns and dlqctl refuses the flag), the canary watches for
// --verify-for, and every record is replayed once. Asking for
// --max-returns there is refused at the dry run, before anything moves.
func TestCanaryRedriveOnAKafkaTopic(t *testing.T) {
	env := testenv.Require(t)
	t.Parallel()
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, _, payments, paymentsDLT, _, _ := kafkaseed.Topics(prefix)
	dlt := "kafka://" + brokers + "/" + paymentsDLT
	n := res.DeadLetters[paymentsDLT]
	if n == 0 {
		t.Fatalf("the seed dead-lettered nothing into %s: %+v", paymentsDLT, res)
	}

	r := runScript(t, env, dlt, "--max-returns", "5%")
	if r.code != 2 || r.sum.Status != "failed" || r.sum.StoppedAt == nil || *r.sum.StoppedAt != "dry-run" || r.sum.Moved != 0 {
		t.Fatalf("--max-returns on Kafka: exit %d, summary %+v; want exit 2 at the dry run\nstderr: %s", r.code, r.sum, r.stderr)
	}
	oneLine(t, r.stderr, "dry-run failed (exit 2): dlqctl: --max-returns needs")
	if c := clitest.CopiesIn(t, brokers, payments); len(c) != 0 {
		t.Fatalf("the refused run replayed %d record(s)", len(c))
	}

	r = runScript(t, env, dlt, "--canary", "2", "--verify-for", "2s", "--ramp", "50,500", "--ramp-every", "1s")
	if r.code != 0 || r.sum.Status != "ok" || r.sum.Moved != n {
		t.Fatalf("exit %d, summary %+v; want exit 0, status ok, all %d moved\nstderr: %s", r.code, r.sum, n, r.stderr)
	}
	clitest.EachCopiedOnce(t, brokers, payments, n)
}

func TestMain(m *testing.M) {
	// Run the scripts from this directory whatever `go test` was given.
	if _, err := os.Stat(filepath.Join(".", "canary-redrive.sh")); err != nil {
		fmt.Fprintln(os.Stderr, "scripts tests must run in the scripts directory:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
