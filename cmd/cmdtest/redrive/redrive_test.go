package redrive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// ---- fixtures ---------------------------------------------------------

// pair is a source queue whose RedrivePolicy (maxReceiveCount 2) targets a
// DLQ, with bodies dead-lettered through it for real.
type pair struct {
	srcURL, dlqURL, dlqName, srcName string
}

// deadLettered sends bodies to a fresh source queue and lets the worker (in
// "down" mode) fail them until SQS has moved every one into the DLQ.
func deadLettered(t *testing.T, env testenv.Env, bodies []string) pair {
	t.Helper()
	c := env.SQS(t)
	p := pair{dlqName: testenv.UniqueName(t, "dlq"), srcName: testenv.UniqueName(t, "src")}
	var dlqARN string
	p.dlqURL, dlqARN = clitest.CreateQueue(t, c, p.dlqName, nil)
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": 2})
	p.srcURL, _ = clitest.CreateQueue(t, c, p.srcName, map[string]string{"RedrivePolicy": string(policy)})
	for i := 0; i < len(bodies); i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, len(bodies)); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(bodies[j])})
		}
		if _, err := c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(p.srcURL), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { worker.Run(ctx, c, worker.Options{QueueURL: p.srcURL, Mode: worker.ModeDown}); close(done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		v, inflight := clitest.QueueDepth(t, c, p.dlqURL)
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
	return p
}

// startWorker consumes the source in the mode held by a file; it returns
// the file (write "ok"/"bug" to it) and a stop function.
func startWorker(t *testing.T, env testenv.Env, url, mode string) (modeFile string, stop func()) {
	t.Helper()
	modeFile = filepath.Join(t.TempDir(), "mode")
	if err := os.WriteFile(modeFile, []byte(mode), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		worker.Run(ctx, env.SQS(t), worker.Options{QueueURL: url, ModeFile: modeFile, Mode: mode})
		close(done)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return modeFile, stop
}

func orderBodies(n int, nullEvery int) []string {
	out := make([]string, n)
	for i := range out {
		amount := fmt.Sprintf("%d.50", 10+i)
		if nullEvery > 0 && i%nullEvery == 0 {
			amount = "null"
		}
		out[i] = fmt.Sprintf(`{"eventType":"OrderPaid","eventId":"e-%d","payload":{"order":"o-%d","amount":%s}}`, i, i, amount)
	}
	return out
}

func bodiesIn(t *testing.T, c *awssqs.Client, url string) map[string]int {
	t.Helper()
	got := map[string]int{}
	seen := map[string]bool{}
	var held []types.Message
	empty := 0
	for empty < 2 {
		out, err := c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range out.Messages {
			if !seen[aws.ToString(m.MessageId)] {
				seen[aws.ToString(m.MessageId)] = true
				got[aws.ToString(m.Body)]++
			}
		}
		held = append(held, out.Messages...)
	}
	for i := 0; i < len(held); i += 10 {
		var e []types.ChangeMessageVisibilityBatchRequestEntry
		for j := i; j < min(i+10, len(held)); j++ {
			e = append(e, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), ReceiptHandle: held[j].ReceiptHandle, VisibilityTimeout: 0})
		}
		_, _ = c.ChangeMessageVisibilityBatch(context.Background(), &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: e})
	}
	return got
}

// ---- flags ------------------------------------------------------------

func TestRedriveFlagsParseIntoOptions(t *testing.T) {
	var got *cmd.RedriveOptions
	f := &cmd.Factory{IO: output.Test(nil, io.Discard, io.Discard, false)}
	c := cmd.NewCmdRedrive(f, func(_ context.Context, o *cmd.RedriveOptions) error { got = o; return nil })
	c.SetArgs([]string{"orders-dlq", "--to", "orders-recovery", "--ramp", "5,20", "--ramp", "50", "--ramp-every", "30s",
		"--max-returns", "5%", "--on-guard", "pause", "--class", "transient", "--canary", "10", "--verify-for", "1m"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.DLQ != "orders-dlq" || got.To != "orders-recovery" || fmt.Sprint(got.Ramp) != "[5 20 50]" || got.RampEvery != 30*time.Second ||
		got.MaxReturns != 0.05 || got.OnGuard != "pause" || got.Canary != 10 || got.VerifyFor != time.Minute || got.Selection.Classes[0] != "transient" {
		t.Fatalf("options: %+v", got)
	}
}

func TestRedriveBadFlagsExitTwoBeforeTouchingAnything(t *testing.T) {
	env := testenv.Require(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dry-run", "--canary", "3"}, "--dry-run and --canary"},
		{[]string{"--engine", "native", "--filter", ".body != null"}, "cannot honour --filter"},
		{[]string{"--engine", "native", "--rate", "900"}, "1 to 500"},
		{[]string{"--rate", "5", "--ramp", "1,2"}, "--rate and --ramp"},
		{[]string{"--max-returns", "lots"}, "percentage"},
		{[]string{"--ramp", "5,x"}, "positive number"},
		{[]string{"--on-guard", "panic"}, "abort or pause"},
		{[]string{"--filter", ".body | bogus("}, "filter"},
	} {
		r := clitest.Run(t, env, "", append([]string{"redrive", "whatever-dlq", "--yes"}, tc.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line mentioning %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// ---- behaviour --------------------------------------------------------

func TestRedriveWithoutYesInAScriptChangesNothing(t *testing.T) {
	env := testenv.Require(t)
	p := deadLettered(t, env, orderBodies(5, 0))
	r := clitest.Run(t, env, "", "redrive", p.dlqName, "--state-dir", t.TempDir())
	if r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("exit %d, stderr %q; want exit 2 asking for --yes", r.Code, r.Stderr)
	}
	if v, inflight := clitest.SettledDepth(t, env.SQS(t), p.dlqURL); v != 5 || inflight != 0 {
		t.Fatalf("DLQ %d visible, %d in flight; want 5 untouched", v, inflight)
	}
}

func TestRedriveDryRunPlansAndChangesNothing(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	c := env.SQS(t)
	n := len(truth.InQueue(truth.DLQ.Name))
	r := clitest.Run(t, env, "", "redrive", truth.DLQ.Name, "--dry-run", "--class", "transient", "--rate", "2", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	want := map[string]int{}
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		if clitest.ExpectedClass(m) == "transient" {
			want[m.SourceName]++
		}
	}
	total := 0
	for src, k := range want {
		if plan.ByDestination[src]["transient"] != k {
			t.Fatalf("plan sends %v to %s, want %d transient", plan.ByDestination[src], src, k)
		}
		total += k
	}
	if plan.Scanned != n || plan.WouldMove != total || plan.Skipped[redrive.SkipFiltered] != n-total {
		t.Fatalf("plan scanned %d, would move %d, skipped %v; want %d, %d, %d not selected", plan.Scanned, plan.WouldMove, plan.Skipped, n, total, n-total)
	}
	if plan.EstimatedSeconds != float64(total)/2 {
		t.Fatalf("estimate %.1fs, want %d messages at 2/s", plan.EstimatedSeconds, total)
	}
	if v, inflight := clitest.SettledDepth(t, c, truth.DLQ.URL); v != n || inflight != 0 {
		t.Fatalf("after the dry run the DLQ has %d visible, %d in flight; want %d, 0", v, inflight, n)
	}
	for _, q := range truth.Sources() {
		if v, inflight := clitest.QueueDepth(t, c, q.URL); v+inflight != 0 {
			t.Fatalf("dry run sent messages to %s", q.Name)
		}
	}
}

func TestRedriveClassSelectionToRecoveryQueue(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	truth, err := seed.Incident(context.Background(), c, seed.Options{Prefix: testenv.UniqueName(t, "cls")})
	if err != nil {
		t.Fatal(err)
	}
	recName := testenv.UniqueName(t, "recovery")
	recURL, _ := clitest.CreateQueue(t, c, recName, nil)
	state := t.TempDir()
	r := clitest.Run(t, env, "", "redrive", truth.DLQ.Name, "--to", recName, "--class", "transient", "--yes", "-o", "json", "--state-dir", state)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	want := map[string]bool{}
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		if clitest.ExpectedClass(m) == "transient" {
			want[m.Body] = true
		}
	}
	got := bodiesIn(t, c, recURL)
	if len(got) != len(want) || clitest.SummaryOf(t, r).Moved != len(want) {
		t.Fatalf("recovery queue has %d bodies, want %d transient", len(got), len(want))
	}
	for b, k := range got {
		if !want[b] || k != 1 {
			t.Fatalf("recovery queue holds %d copies of a body that should %s: %.80q", k, map[bool]string{true: "be there once", false: "not be there"}[want[b]], b)
		}
	}
	// `runs` lists the run with the journal's counts.
	rr := clitest.Run(t, env, "", "runs", "-o", "json", "--state-dir", state)
	var runs []redrive.RunInfo
	if err := json.Unmarshal([]byte(rr.Stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %s", err, rr.Stdout)
	}
	if runs[0].Status != redrive.StatusCompleted || runs[0].Sent != len(want) || runs[0].Deleted != len(want) {
		t.Fatalf("runs shows %+v", runs[0])
	}
}

func TestRedriveCanaryFailsWhileTheBugIsLiveAndPassesAfterTheFix(t *testing.T) {
	env := testenv.Require(t)
	p := deadLettered(t, env, orderBodies(20, 2)) // 10 null amounts
	modeFile, _ := startWorker(t, env, p.srcURL, worker.ModeBug)
	state := t.TempDir()
	args := []string{"redrive", p.dlqName, "--canary", "3", "--verify-for", "10s", "--verify-poll", "500ms", "--yes", "-o", "json", "--state-dir", state}

	r := clitest.Run(t, env, "", append(args, "--filter", ".json.payload.amount == null")...)
	s := clitest.SummaryOf(t, r)
	if r.Code != 3 || s.Canary == nil || s.Canary.Pass || s.Canary.Returned == 0 || s.Status != redrive.StatusCanaryFail {
		t.Logf("source: %v\nDLQ: %v", bodiesIn(t, env.SQS(t), p.srcURL), bodiesIn(t, env.SQS(t), p.dlqURL))
		t.Fatalf("canary on null amounts with the bug live: exit %d, verdict %+v; want exit 3 and returns (stderr %s)", r.Code, s.Canary, r.Stderr)
	}

	if err := os.WriteFile(modeFile, []byte(worker.ModeOK), 0o600); err != nil { // ship the fix
		t.Fatal(err)
	}
	r = clitest.Run(t, env, "", append(args, "--filter", ".json.payload.amount == null", "--verify-for", "3s", "--verify-drain")...)
	s = clitest.SummaryOf(t, r)
	if r.Code != 0 || s.Canary == nil || !s.Canary.Pass || s.Moved != 3 || s.Canary.Drained == nil || !*s.Canary.Drained {
		t.Fatalf("canary after the fix: exit %d, moved %d, verdict %+v; want exit 0 and a drained pass (stderr %s)", r.Code, s.Moved, s.Canary, r.Stderr)
	}
}

func TestRedriveGuardsTripAndExitThree(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	t.Run("max-returns", func(t *testing.T) {
		p := deadLettered(t, env, orderBodies(40, 1)) // every amount null
		startWorker(t, env, p.srcURL, worker.ModeBug)
		r := clitest.Run(t, env, "", "redrive", p.dlqName, "--rate", "10", "--max-returns", "10%", "--guard-interval", "300ms", "--yes", "-o", "json", "--state-dir", t.TempDir())
		s := clitest.SummaryOf(t, r)
		if r.Code != 3 || s.Guard == nil || s.Guard.Name != "max-returns" || s.Status != redrive.StatusGuard {
			t.Fatalf("exit %d, guard %+v; want exit 3 from max-returns (stderr %s)", r.Code, s.Guard, r.Stderr)
		}
		if s.Moved >= 40 {
			t.Fatalf("the guard did not stop the run early: moved %d", s.Moved)
		}
	})
	t.Run("max-dest-backlog", func(t *testing.T) {
		p := deadLettered(t, env, orderBodies(60, 0))
		recName := testenv.UniqueName(t, "rec")
		recURL, _ := clitest.CreateQueue(t, c, recName, nil)
		r := clitest.Run(t, env, "", "redrive", p.dlqName, "--to", recName, "--rate", "20", "--max-dest-backlog", "10", "--guard-interval", "200ms", "--yes", "-o", "json", "--state-dir", t.TempDir())
		s := clitest.SummaryOf(t, r)
		if r.Code != 3 || s.Guard == nil || s.Guard.Name != "max-dest-backlog" {
			t.Fatalf("exit %d, guard %+v; want exit 3 from max-dest-backlog (stderr %s)", r.Code, s.Guard, r.Stderr)
		}
		dlqV, dlqIn := clitest.SettledDepth(t, c, p.dlqURL)
		recV, recIn := clitest.QueueDepth(t, c, recURL)
		if dlqIn != 0 || dlqV+recV+recIn != 60 || recV != s.Moved {
			t.Fatalf("after the trip: DLQ %d (+%d in flight), recovery %d; moved %d; want 60 in total, nothing held\nstderr: %s\nstdout: %s", dlqV, dlqIn, recV, s.Moved, r.Stderr, r.Stdout)
		}
	})
}

// TestRedriveRateIsAccurate moves 400 messages at --rate 20: a 20 s window.
func TestRedriveRateIsAccurate(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	name, url := clitest.FillQueue(t, env, "rate", 450)
	_ = url
	recName := testenv.UniqueName(t, "rec")
	clitest.CreateQueue(t, c, recName, nil)
	r := clitest.Run(t, env, "", "redrive", name, "--to", recName, "--rate", "20", "--max", "400", "--yes", "-o", "json", "--state-dir", t.TempDir())
	s := clitest.SummaryOf(t, r)
	if r.Code != 0 || s.Moved != 400 {
		t.Fatalf("exit %d, moved %d: %s", r.Code, s.Moved, r.Stderr)
	}
	if s.Rate < 18 || s.Rate > 22 {
		t.Fatalf("achieved %.2f msg/s over %.1fs, want 20 ±10%%", s.Rate, s.ElapsedSeconds)
	}
}

// ---- the binary: kill -9, Ctrl-C -------------------------------------

func TestRedriveSurvivesKill9AtRandomPointsWithZeroLoss(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 1500
	name, dlqURL := clitest.FillQueue(t, env, "kill", n)
	want := bodiesIn(t, c, dlqURL)
	if len(want) != n {
		t.Fatalf("filled %d distinct bodies, want %d", len(want), n)
	}
	recName := testenv.UniqueName(t, "rec")
	recURL, _ := clitest.CreateQueue(t, c, recName, nil)
	state := t.TempDir()
	const conc = 4
	args := []string{"redrive", name, "--to", recName, "--rate", "300", "--concurrency", fmt.Sprint(conc), "--visibility", "5s", "--yes", "--state-dir", state}
	kills := 0
	for round := 0; round < 3; round++ {
		cmd := clitest.BinCmd(t, env, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// resume rounds first wait ~6s for held messages to reappear
		wait := time.Duration(500+rand.IntN(1500)) * time.Millisecond
		if round > 0 {
			wait += 6 * time.Second
		}
		time.Sleep(wait)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		kills++
	}
	// Resume by id once, and let the re-run of the same command finish.
	rr := clitest.Run(t, env, "", "runs", "-o", "json", "--state-dir", state)
	var runs []redrive.RunInfo
	if err := json.Unmarshal([]byte(rr.Stdout), &runs); err != nil || len(runs) != 1 || runs[0].Status != redrive.StatusRunning {
		t.Fatalf("after kill -9 `runs` shows %s (%v); want one run left running", rr.Stdout, err)
	}
	r := clitest.Run(t, env, "", "redrive", "resume", runs[0].ID, "--yes", "-o", "json", "--state-dir", state)
	if r.Code != 0 {
		t.Fatalf("resume: exit %d: %s", r.Code, r.Stderr)
	}
	s := clitest.SummaryOf(t, r)
	if s.RunID != runs[0].ID {
		t.Fatalf("resume used run %s, want %s", s.RunID, runs[0].ID)
	}
	if v, inflight := clitest.SettledDepth(t, c, dlqURL); v+inflight != 0 {
		t.Fatalf("DLQ still holds %d (+%d in flight) after resume", v, inflight)
	}
	got := bodiesIn(t, c, recURL)
	dups := 0
	for b := range want {
		if got[b] == 0 {
			t.Fatalf("message lost after %d kills: %s", kills, b)
		}
		dups += got[b] - 1
	}
	if len(got) != n {
		t.Fatalf("destination holds %d distinct bodies, want %d", len(got), n)
	}
	// Documented bound: at most one in-flight batch per worker per kill.
	if bound := kills * conc * sqs.MaxBatchEntries; dups > bound {
		t.Fatalf("%d duplicates after %d kills, bound %d", dups, kills, bound)
	}
	t.Logf("%d kills, %d resumed deletes, %d duplicates (bound %d)", kills, s.Resumed, dups, kills*conc*sqs.MaxBatchEntries)
}

func TestRedriveCtrlCStopsCleanly(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 800
	name, dlqURL := clitest.FillQueue(t, env, "int", n)
	recName := testenv.UniqueName(t, "rec")
	recURL, _ := clitest.CreateQueue(t, c, recName, nil)
	state := t.TempDir()
	cmd := clitest.BinCmd(t, env, "redrive", name, "--to", recName, "--rate", "100", "--yes", "--state-dir", state, "-o", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != 130 {
		t.Fatalf("exit %d (%v), want 130; stderr %s", code, err, stderr.String())
	}
	s := clitest.SummaryOf(t, clitest.Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code})
	if !s.Interrupted || s.Status != redrive.StatusInterrupted || s.Moved == 0 || s.Moved >= n {
		t.Fatalf("summary %+v; want an interrupted run that moved some", s.Result)
	}
	dlqV, dlqIn := clitest.SettledDepth(t, c, dlqURL)
	recV, recIn := clitest.QueueDepth(t, c, recURL)
	if dlqIn != 0 {
		t.Fatalf("%d messages left invisible in the DLQ after Ctrl-C", dlqIn)
	}
	if dlqV+recV+recIn != n || recV != s.Moved {
		t.Fatalf("DLQ %d + destination %d != %d, or destination != moved %d", dlqV, recV, n, s.Moved)
	}
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "interrupted") {
			return
		}
	}
	t.Fatalf("stderr does not say the run was interrupted: %s", stderr.String())
}

func TestRedriveNativeEngineStartStatusCancel(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	// StartMessageMoveTask needs a queue that is some queue's DLQ.
	p := deadLettered(t, env, orderBodies(60, 0))
	name, dlqURL := p.dlqName, p.dlqURL
	recName := testenv.UniqueName(t, "rec")
	recURL, recARN := clitest.CreateQueue(t, c, recName, nil)

	r := clitest.Run(t, env, "", "redrive", name, "--engine", "native", "--to", recName, "--rate", "50", "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("native run: exit %d: %s", r.Code, r.Stderr)
	}
	if v, _ := clitest.QueueDepth(t, c, recURL); v != 60 {
		t.Fatalf("native move task moved %d of 60", v)
	}
	st := clitest.Run(t, env, "", "redrive", "status", name, "-o", "json")
	var tasks []sqs.Task
	if err := json.Unmarshal([]byte(st.Stdout), &tasks); err != nil || len(tasks) == 0 || tasks[0].Status != "COMPLETED" {
		t.Fatalf("status: %v %s", err, st.Stdout)
	}

	// A slow task to cancel: refill and start at 1 msg/s.
	if err := seed.FillDLQ(context.Background(), c, dlqURL, 30, func(i int) string { return fmt.Sprintf("again-%d", i) }); err != nil {
		t.Fatal(err)
	}
	qc := sqs.New(c, env.Region)
	dlq, err := qc.Resolve(context.Background(), dlqURL)
	if err != nil {
		t.Fatal(err)
	}
	// To the recovery queue, not to the source: the refill was sent to the
	// DLQ directly, so a move to the source would fail on its first message
	// (CouldNotDetermineMessageSource, as on AWS) if the cancel came after
	// it (a loaded machine), and the test would see FAILED, not CANCELLED.
	if _, err := sqs.StartNative(context.Background(), qc, dlq, recARN, 1); err != nil {
		t.Fatal(err)
	}
	st = clitest.Run(t, env, "", "redrive", "status", name, "-o", "json")
	if err := json.Unmarshal([]byte(st.Stdout), &tasks); err != nil || tasks[0].Status != "RUNNING" {
		t.Fatalf("status of the slow task: %v %s", err, st.Stdout)
	}
	cr := clitest.Run(t, env, "", "redrive", "cancel", name)
	if cr.Code != 0 || !strings.Contains(cr.Stderr, "cancelled") {
		t.Fatalf("cancel: exit %d: %s", cr.Code, cr.Stderr)
	}
	time.Sleep(1500 * time.Millisecond)
	st = clitest.Run(t, env, "", "redrive", "status", name, "-o", "json")
	if err := json.Unmarshal([]byte(st.Stdout), &tasks); err != nil || (tasks[0].Status != "CANCELLED" && tasks[0].Status != "CANCELLING") {
		t.Fatalf("status after cancel: %v %s", err, st.Stdout)
	}
	cr = clitest.Run(t, env, "", "redrive", "cancel", name)
	if cr.Code != 0 || !strings.Contains(cr.Stderr, "nothing to cancel") {
		t.Fatalf("second cancel: exit %d: %s", cr.Code, cr.Stderr)
	}
}

func TestRedriveAsksOnATerminal(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	p := deadLettered(t, env, orderBodies(4, 0))
	clitest.SetStackEnv(t, env)
	run := func(answer string) (int, string) {
		var out, errOut bytes.Buffer
		code := cmd.Run(context.Background(), output.Test(strings.NewReader(answer), &out, &errOut, true),
			[]string{"redrive", p.dlqName, "--state-dir", t.TempDir()})
		return code, errOut.String()
	}
	code, stderr := run("n\n")
	if code != 2 || !strings.Contains(stderr, "Move all messages from "+p.dlqName+" (4 visible) to source ("+p.srcName+")? [y/N]") {
		t.Fatalf("answer n: exit %d, stderr %q", code, stderr)
	}
	if v, _ := clitest.QueueDepth(t, c, p.dlqURL); v != 4 {
		t.Fatalf("declined, yet the DLQ holds %d of 4", v)
	}
	if code, stderr = run("y\n"); code != 0 {
		t.Fatalf("answer y: exit %d: %s", code, stderr)
	}
	if v, _ := clitest.QueueDepth(t, c, p.srcURL); v != 4 {
		t.Fatalf("confirmed, yet the source holds %d of 4", v)
	}
}

// TestRedriveNativeEngineRamp: --ramp with the native engine runs one move
// task per step, cancelling and restarting at the next rate; the last step
// runs to completion and every message arrives exactly once.
func TestRedriveNativeEngineRamp(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	p := deadLettered(t, env, orderBodies(30, 0))
	recName := testenv.UniqueName(t, "nrec")
	recURL, _ := clitest.CreateQueue(t, c, recName, nil)

	r := clitest.Run(t, env, "", "redrive", p.dlqName, "--engine", "native", "--to", recName, "--ramp", "1,100", "--ramp-every", "3s", "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("native ramp: exit %d: %s", r.Code, r.Stderr)
	}
	if v, in := clitest.SettledDepth(t, c, recURL); v != 30 || in != 0 {
		t.Fatalf("recovery queue holds %d (+%d in flight), want 30", v, in)
	}
	if v, in := clitest.SettledDepth(t, c, p.dlqURL); v != 0 || in != 0 {
		t.Fatalf("DLQ still holds %d (+%d in flight)", v, in)
	}
	st := clitest.Run(t, env, "", "redrive", "status", p.dlqName, "-o", "json")
	var tasks []sqs.Task
	if err := json.Unmarshal([]byte(st.Stdout), &tasks); err != nil {
		t.Fatalf("status: %v %s", err, st.Stdout)
	}
	statuses := map[string]int{}
	for _, tk := range tasks {
		statuses[tk.Status]++
	}
	if len(tasks) != 2 || statuses["CANCELLED"] != 1 || statuses["COMPLETED"] != 1 {
		t.Fatalf("want one cancelled step and one completed step, got %v", statuses)
	}
}
