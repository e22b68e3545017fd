// Package ui runs `dlqctl ui` end to end: the real binary in a
// pseudo-terminal, driven by keys, against the local stack.
package ui

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// term is dlqctl ui running in a pseudo-terminal, its output rendered by
// a terminal emulator.
type term struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptm  *os.File
	emu  *vt.Emulator // guarded by mu (vt's SafeEmulator does not lock String)
	done chan struct{}
	mu   sync.Mutex
	all  strings.Builder // everything the process wrote
	err  error
}

func startUI(t *testing.T, environ []string, args ...string) *term {
	t.Helper()
	c := exec.Command(testenv.BuildBinary(t), append([]string{"ui"}, args...)...)
	c.Env = append(environ, "TERM=xterm-256color", "NO_COLOR=1")
	ptm, err := pty.StartWithSize(c, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, cmd: c, ptm: ptm, emu: vt.NewEmulator(80, 24), done: make(chan struct{})}
	// The emulator answers the program's terminal queries.
	go func() { _, _ = io.Copy(ptm, tm.emu) }()
	go func() {
		buf := make([]byte, 32*1024)
		for {
			n, err := ptm.Read(buf)
			if n > 0 {
				tm.mu.Lock()
				tm.all.Write(buf[:n])
				_, _ = tm.emu.Write(buf[:n])
				tm.mu.Unlock()
			}
			if err != nil {
				close(tm.done)
				return
			}
		}
	}()
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		ptm.Close()
	})
	return tm
}

func (tm *term) screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.emu.String()
}

// waitFor waits until the screen shows every one of subs.
func (tm *term) waitFor(timeout time.Duration, subs ...string) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.screen()
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(s, sub)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen never showed %q; it shows:\n%s", subs, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (tm *term) keys(ks ...string) {
	tm.t.Helper()
	for _, k := range ks {
		if _, err := tm.ptm.Write([]byte(k)); err != nil {
			tm.t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// exit waits for the process to end and returns its exit code and what it
// printed after leaving the full screen.
func (tm *term) exit(timeout time.Duration) (int, string) {
	tm.t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- tm.cmd.Wait() }()
	select {
	case err := <-ch:
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		select {
		case <-tm.done:
		case <-time.After(2 * time.Second):
		}
		tm.mu.Lock()
		defer tm.mu.Unlock()
		return code, tm.all.String()
	case <-time.After(timeout):
		tm.t.Fatalf("dlqctl ui did not exit; the screen:\n%s", tm.screen())
	}
	return 0, ""
}

const enter, esc = "\r", "\x1b"

// selectGroup moves the cursor down until the selection line names want.
func (tm *term) selectGroup(want string) {
	tm.t.Helper()
	for range 40 {
		if strings.Contains(tm.screen(), "selection: group "+want) {
			return
		}
		tm.keys("j")
	}
	tm.t.Fatalf("no group %q; the screen:\n%s", want, tm.screen())
}

// runAction presses key, checks the command line shown, confirms and waits
// for the run's result.
func (tm *term) runAction(key string, shows []string, result ...string) string {
	tm.t.Helper()
	tm.keys(key)
	tm.waitFor(10*time.Second, append([]string{"This runs, as a child process of this binary:"}, shows...)...)
	tm.keys("y")
	s := tm.waitFor(3*time.Minute, append([]string{"enter back"}, result...)...)
	tm.keys(enter)
	return s
}

// TestUIGroupByErrorCanaryThenRedriveSQS: open the DLQ, group by error,
// select the database-timeout group, run a canary and then the redrive to
// a recovery queue: every message of the group is there once, the rest of
// the DLQ untouched, and both runs are in the journal.
func TestUIGroupByErrorCanaryThenRedriveSQS(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	truth, err := seed.Incident(context.Background(), c, seed.Options{Prefix: testenv.UniqueName(t, "ui")})
	if err != nil {
		t.Fatal(err)
	}
	recName := testenv.UniqueName(t, "uirec")
	recURL, _ := clitest.CreateQueue(t, c, recName, nil)
	state := t.TempDir()
	want, rest := map[string]int{}, map[string]int{}
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		if m.FailureType == "DatabaseTimeout" {
			want[m.Body]++
		} else {
			rest[m.Body]++
		}
	}
	if len(want) < 3 {
		t.Fatalf("the incident has %d database timeouts; the test needs at least 3", len(want))
	}

	tm := startUI(t, env.Environ(), truth.DLQ.Name, "--to", recName, "--canary", "2", "--verify-for", "3s", "--state-dir", state)
	tm.waitFor(30*time.Second, "dead-letter queues", truth.DLQ.Name[:16])
	tm.keys(enter)
	tm.waitFor(time.Minute, "by error", "read all")
	tm.selectGroup("error = DatabaseTimeout")
	tm.runAction("c", []string{"dlqctl redrive " + truth.DLQ.Name + " --filter", "--canary 2"}, "exit 0: ok", "canary PASS")
	tm.runAction("R", []string{"dlqctl redrive " + truth.DLQ.Name + " --filter"}, "exit 0: ok", "status completed")
	tm.keys("q")
	code, out := tm.exit(time.Minute)
	if code != 0 {
		t.Fatalf("dlqctl ui exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "commands run from the UI:") || !strings.Contains(out, "--canary 2") {
		t.Fatalf("the session log of commands is missing after exit:\n%s", out)
	}

	got := clitest.DrainBodies(t, c, recURL)
	for b, n := range got {
		if want[b] != 1 || n != 1 {
			t.Fatalf("the recovery queue holds %d copies of a body that should %s: %.100q", n,
				map[bool]string{true: "be there once", false: "not be there"}[want[b] == 1], b)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the recovery queue holds %d of the %d database timeouts", len(got), len(want))
	}
	left := clitest.DrainBodies(t, c, truth.DLQ.URL)
	if len(left) != len(rest) {
		t.Fatalf("the DLQ holds %d distinct bodies after the redrive, want the %d others untouched", len(left), len(rest))
	}
	for b, n := range left {
		if rest[b] != n {
			t.Fatalf("the DLQ holds %d copies of a body (want %d): %.100q", n, rest[b], b)
		}
	}
	// Both runs left their journal: `dlqctl runs` lists them.
	r := clitest.Run(t, env, "", "runs", "-o", "json", "--state-dir", state)
	var runs []redrive.RunInfo
	if err := json.Unmarshal([]byte(r.Stdout), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("runs: %v %s", err, r.Stdout)
	}
}

// TestUIReadOnlyOffersNoActionsAndReleasesOnCtrlC: with --read-only the
// action keys do nothing; Ctrl-C in the middle leaves every message
// visible again and the terminal restored (the alternate screen left).
func TestUIReadOnlyOffersNoActionsAndReleasesOnCtrlC(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	name, url := clitest.FillQueue(t, env, testenv.UniqueName(t, "uiro"), 30)
	tm := startUI(t, env.Environ(), name, "--read-only")
	tm.waitFor(30*time.Second, "dead-letter queues", name[:16])
	tm.keys(enter)
	s := tm.waitFor(time.Minute, "read all 30")
	if strings.Contains(s, "R redrive") {
		t.Fatalf("read-only screen offers actions:\n%s", s)
	}
	tm.keys("R", "c", "d")
	if s := tm.screen(); strings.Contains(s, "This runs") {
		t.Fatalf("an action key did something in read-only mode:\n%s", s)
	}
	tm.keys("\x03") // Ctrl-C
	code, out := tm.exit(time.Minute)
	if code != 0 {
		t.Fatalf("ctrl-c: exit %d", code)
	}
	if !strings.Contains(out, "\x1b[?1049l") {
		t.Fatalf("the alternate screen was not left on ctrl-c")
	}
	if v, inflight := clitest.SettledDepth(t, c, url); v != 30 || inflight != 0 {
		t.Fatalf("after the UI exited the queue has %d visible, %d in flight; want all 30 released", v, inflight)
	}
}

// canaryThenRedriveTopGroup opens ref in the UI, groups by error, runs a
// canary of 1 and the redrive of the largest group to toRef, quits, and
// returns how many messages the group held.
func canaryThenRedriveTopGroup(t *testing.T, environ []string, ref, toRef, state string) int {
	t.Helper()
	tm := startUI(t, environ, ref, "--to", toRef, "--canary", "1", "--verify-for", "3s", "--state-dir", state)
	tm.waitFor(30*time.Second, "dead-letter queues", "\n> ")
	tm.keys(enter)
	tm.waitFor(time.Minute, "by error", "read all")
	tm.keys("c")
	s := tm.waitFor(10*time.Second, "This runs", "selected: ")
	var n int
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "selected: "); ok {
			n, _ = strconv.Atoi(strings.Fields(rest)[0])
		}
	}
	if strings.Contains(s, "dlqctl-rabbit-secret") {
		t.Fatalf("the command line shows the RabbitMQ password:\n%s", s)
	}
	if n == 0 {
		t.Fatalf("no group size on the confirmation:\n%s", s)
	}
	tm.keys("y")
	tm.waitFor(3*time.Minute, "enter back", "exit 0: ok", "canary PASS")
	tm.keys(enter)
	tm.runAction("R", []string{"dlqctl redrive"}, "exit 0: ok")
	tm.keys("q")
	if code, out := tm.exit(time.Minute); code != 0 {
		t.Fatalf("dlqctl ui exited %d:\n%s", code, out)
	}
	return n
}

// TestUICanaryThenRedriveRabbitMQ is the same path on RabbitMQ: the
// largest error group to a recovery queue, each message once, the rest
// of the DLQ untouched.
func TestUICanaryThenRedriveRabbitMQ(t *testing.T) {
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, names := clitest.SeedRabbit(t, o)
	rec := names.DLQ + ".recovery"
	ch := clitest.OpenTestChannel(t, env)
	if _, err := ch.QueueDeclare(rec, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(rec, false, false, false) })
	n := canaryThenRedriveTopGroup(t, os.Environ(), env.QueueRef(names.DLQ), env.QueueRef(rec), t.TempDir())
	got := clitest.DrainIDs(t, env, rec)
	if len(got) != n {
		t.Fatalf("the recovery queue holds %d distinct messages, want the group's %d", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Fatalf("message %s is in the recovery queue %d times", id, k)
		}
	}
	clitest.WaitNoUnacked(t, env, names.DLQ)
	if left := clitest.ReadyOf(t, env, names.DLQ); left != o.Total()-n {
		t.Fatalf("the DLQ holds %d, want the %d not in the group", left, o.Total()-n)
	}
}

// TestUICanaryThenRedriveKafka is the same path on a Kafka dead-letter
// topic: the largest error group back to its source topic, each record
// once; what is left pending in the DLT is exactly the rest.
func TestUICanaryThenRedriveKafka(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ref := "kafka://" + brokers + "/" + dlq
	total := res.DeadLetters[dlq]
	n := canaryThenRedriveTopGroup(t, os.Environ(), ref, "source", t.TempDir())
	clitest.EachCopiedOnce(t, brokers, orders, n) // the group's n
	r := clitest.Run(t, testenv.Env{}, "", "redrive", ref, "--dry-run", "-o", "json")
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil || r.Code != 0 {
		t.Fatalf("dry run after: exit %d: %v: %s", r.Code, err, r.Stderr)
	}
	if plan.Scanned != total-n {
		t.Fatalf("%d records pending in %s after the redrive, want the %d not in the group", plan.Scanned, dlq, total-n)
	}
}

// TestUIRefusesWithoutATerminalAndBadFlags: exit 2 with one sentence,
// nothing read.
func TestUIRefusesWithoutATerminalAndBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ui"}, "needs a terminal"},
		{[]string{"ui", "--canary", "0"}, "--canary must be at least 1"},
		{[]string{"ui", "--archive-to", "bucket/x"}, "s3://BUCKET/PREFIX"},
		{[]string{"ui", "--sample", "5", "--all"}, "sample"},
	} {
		r := clitest.Run(t, testenv.Env{}, "", tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// TestUIArchivesAClassGroupSQS: a archives the class group at the cursor
// to S3 with --delete: the archive holds the group's messages, each once,
// and the DLQ holds the rest.
func TestUIArchivesAClassGroupSQS(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	truth, err := seed.Incident(context.Background(), c, seed.Options{Prefix: testenv.UniqueName(t, "uia")})
	if err != nil {
		t.Fatal(err)
	}
	total := len(truth.InQueue(truth.DLQ.Name))
	bucket := clitest.Bucket(t, env, "uiarch")
	tm := startUI(t, env.Environ(), truth.DLQ.Name, "--archive-to", "s3://"+bucket+"/dlq", "--state-dir", t.TempDir())
	tm.waitFor(30*time.Second, "dead-letter queues", "\n> ")
	tm.keys(enter)
	tm.waitFor(time.Minute, "by error", "read all")
	tm.keys("2")
	tm.selectGroup("class = permanent")
	tm.keys("a")
	s := tm.waitFor(10*time.Second, "This runs", "archive of "+truth.DLQ.Name[:12], "selected: ")
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "selected: "); ok {
			n, _ = strconv.Atoi(strings.Fields(rest)[0])
		}
	}
	tm.keys("y")
	tm.waitFor(3*time.Minute, "enter back", "exit 0: ok")
	tm.keys(enter, "q")
	code, out := tm.exit(time.Minute)
	if code != 0 {
		t.Fatalf("dlqctl ui exited %d:\n%s", code, out)
	}
	if want := "dlqctl archive " + truth.DLQ.Name + " --to s3://" + bucket + "/dlq --class permanent --delete"; !strings.Contains(out, want) {
		t.Fatalf("the session log does not show %q:\n%s", want, out)
	}
	recs := clitest.SampleArchive(t, env, "s3://"+bucket+"/dlq/")
	ids := map[string]int{}
	for _, r := range recs {
		ids[r.MessageID]++
		if r.Class != "permanent" {
			t.Fatalf("archived message %s is %q, not permanent", r.MessageID, r.Class)
		}
	}
	if n == 0 || len(recs) != n || len(ids) != n {
		t.Fatalf("the archive holds %d records (%d distinct), want the group's %d", len(recs), len(ids), n)
	}
	if v, inflight := clitest.SettledDepth(t, c, truth.DLQ.URL); v+inflight != total-n {
		t.Fatalf("the DLQ holds %d+%d, want the %d not archived", v, inflight, total-n)
	}
}
