package health

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/health"
)

func TestWatchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"watch", "q", "--interval", "10ms"},
		{"watch", "q", "--count", "-1"},
		{"watch"},
	} {
		res := clitest.Run(t, testenv.Env{}, "", args...)
		if res.Code != 2 || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, res.Code, res.Stderr)
		}
	}
}

// watchPair creates a source and a DLQ holding n messages.
func watchPair(t *testing.T, n int) (env testenv.Env, c *sqs.Client, dlqName, dlqURL, dlqARN, srcARN string) {
	t.Helper()
	env = testenv.Require(t)
	c = env.SQS(t)
	p := testenv.UniqueName(t, "w")
	dlqURL, dlqARN = clitest.CreateQueue(t, c, p+"-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	srcURL, srcARN := clitest.CreateQueue(t, c, p+"-src", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, dlqARN)})
	t.Cleanup(func() {
		for _, u := range []string{srcURL, dlqURL} {
			_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	if n > 0 {
		if err := seed.FillDLQ(t.Context(), c, dlqURL, n, func(i int) string { return fmt.Sprintf(`{"i":%d}`, i) }); err != nil {
			t.Fatal(err)
		}
	}
	return env, c, p + "-dlq", dlqURL, dlqARN, srcARN
}

// frameStart is what watch writes before each frame on a terminal:
// cursor home, clear the screen.
const frameStart = "\x1b[H\x1b[2J"

func TestWatchPipedTicksAndTerminalView(t *testing.T) {
	env, _, name, _, _, _ := watchPair(t, 4)

	res := clitest.Run(t, env, "", "watch", name, "--interval", "200ms", "--count", "3")
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.Code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, %d lines, want 0 and 3:\n%s%s", res.Code, len(lines), res.Stdout, res.Stderr)
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 6 || f[1] != "4" || f[2] != "0" || f[3] != "0" || f[5] != "-" {
			t.Errorf("line %d = %q; want time, 4 visible, 0 in flight, 0 delayed, growth, no move task", i, l)
		}
		if _, err := time.Parse(time.RFC3339, f[0]); err != nil {
			t.Errorf("line %d time %q: %v", i, f[0], err)
		}
		if wantGrowth := map[bool]string{true: "-", false: "+0.0"}[i == 0]; f[4] != wantGrowth {
			t.Errorf("line %d growth %q, want %q", i, f[4], wantGrowth)
		}
	}

	tty := runCLITTY(t, env, "watch", name, "--interval", "200ms", "--count", "2")
	if tty.Code != 0 || strings.Count(tty.Stdout, frameStart) != 2 || !strings.Contains(tty.Stdout, "  visible     4\n") || !strings.Contains(tty.Stdout, "  move task   none\n") {
		t.Fatalf("terminal view: exit %d\n%q", tty.Code, tty.Stdout)
	}
}

func TestWatchShowsRunningMoveTask(t *testing.T) {
	env, c, name, _, dlqARN, srcARN := watchPair(t, 20)
	if _, err := c.StartMessageMoveTask(t.Context(), &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlqARN), DestinationArn: aws.String(srcARN), MaxNumberOfMessagesPerSecond: aws.Int32(1),
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, err := c.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
		if err == nil {
			for _, r := range out.Results {
				if r.TaskHandle != nil {
					_, _ = c.CancelMessageMoveTask(context.Background(), &sqs.CancelMessageMoveTaskInput{TaskHandle: r.TaskHandle})
				}
			}
		}
	})
	res := clitest.Run(t, env, "", "watch", name, "--interval", "300ms", "--count", "2", "-o", "ndjson")
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.Code != 0 || len(lines) != 2 {
		t.Fatalf("exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	var last health.Tick
	if err := json.Unmarshal([]byte(lines[1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Seq != 2 || len(last.MoveTasks) != 1 || last.MoveTasks[0].Status != "RUNNING" || last.MoveTasks[0].DestinationARN != srcARN ||
		last.MoveTasks[0].MaxPerSecond == nil || *last.MoveTasks[0].MaxPerSecond != 1 || last.GrowthPerMinute == nil {
		t.Fatalf("tick = %+v", last)
	}
	// Piped, the last column says the same in words.
	piped := clitest.Run(t, env, "", "watch", name, "--count", "1")
	f := strings.Split(strings.TrimSpace(piped.Stdout), "\t")
	if piped.Code != 0 || len(f) != 6 {
		t.Fatalf("piped watch: exit %d, %q (stderr %q)", piped.Code, piped.Stdout, piped.Stderr)
	}
	if got := f[5]; !strings.HasPrefix(got, "RUNNING ") || !strings.HasSuffix(got, "-> "+strings.TrimSuffix(name, "-dlq")+"-src at 1/s") {
		t.Errorf("move task text %q", got)
	}
}

func TestWatchInterruptExits130AndShowsGrowth(t *testing.T) {
	env, c, name, dlqURL, _, _ := watchPair(t, 0)
	cmd := exec.Command(testenv.BuildBinary(t), "watch", name, "--interval", "250ms")
	cmd.Env = env.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("watch stopped early; stderr %q", stderr.String())
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("no tick within 20s; stderr %q", stderr.String())
		}
		return ""
	}
	if first := next(); !strings.Contains(first, "\t0\t0\t0\t-\t-") {
		t.Fatalf("first tick %q", first)
	}
	if err := seed.FillDLQ(t.Context(), c, dlqURL, 12, func(i int) string { return fmt.Sprintf(`{"late":%d}`, i) }); err != nil {
		t.Fatal(err)
	}
	// Ticks keep coming; one of them sees the 12 new messages as growth.
	for {
		f := strings.Split(next(), "\t")
		if len(f) == 6 && f[1] == "12" {
			if !strings.HasPrefix(f[4], "+") || f[4] == "+0.0" {
				t.Fatalf("12 new messages but growth %q", f[4])
			}
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v (stderr %q), want exit 130", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr %q does not say interrupted", stderr.String())
	}
}
