package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// TestAMQPRedriveKill9AndResume kills a redrive with SIGKILL while it
// moves a RabbitMQ DLQ, runs it again, and checks every message reached
// its source queue: none lost, duplicates bounded and reported.
func TestAMQPRedriveKill9AndResume(t *testing.T) {
	const n = 3000
	o := amqpseed.Options{Prefix: clitest.RabbitPrefix(t)}
	env, names := clitest.SeedRabbit(t, o)
	{
		ref, _ := amqp.ParseVHostRef(env.URL, nil)
		conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := amqpseed.Bulk(context.Background(), conn, o.Prefix, n); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	state := t.TempDir()
	args := []string{"redrive", env.QueueRef(names.DLQ), "--to", "source", "--rate", "600", "--yes", "--state-dir", state, "-o", "json"}
	run := func() *exec.Cmd {
		cmd := exec.Command(testenv.BuildBinary(t), args...)
		cmd.Env = append(os.Environ(), testenv.EnvAMQPManagementURL+"="+env.ManagementURL)
		return cmd
	}
	victim := run()
	var vout, verr bytes.Buffer
	victim.Stdout, victim.Stderr = &vout, &verr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for clitest.ReadyOf(t, env, names.Orders) < n/3 {
		if time.Now().After(deadline) {
			t.Fatalf("the redrive made no progress: %s", verr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	// The broker returns what the killed process held as it notices the
	// connection is gone: wait until nothing is unacknowledged.
	clitest.WaitNoUnacked(t, env, names.DLQ)
	second := run()
	out, err := second.Output()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	var sum struct {
		Status  string `json:"status"`
		Moved   int    `json:"moved"`
		Resumed int    `json:"resumed"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if sum.Status != "completed" {
		t.Fatalf("resumed run status %q: %s", sum.Status, out)
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("%d messages left in the DLQ", left)
	}
	got := clitest.DrainIDs(t, env, names.Orders)
	dups := 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-bulk-%d", o.Prefix, i)
		switch c := got[id]; {
		case c == 0:
			t.Errorf("%s lost", id)
		case c > 1:
			dups += c - 1
		}
	}
	// Copies confirmed but not yet journaled when the process died are
	// published again: at most what one process has in flight (its
	// concurrency times a batch).
	t.Logf("kill -9 mid-redrive of %d: resumed run moved %d, acknowledged %d already sent; %d duplicate(s) at the source", n, sum.Moved, sum.Resumed, dups)
	if dups > 8*amqp.MaxBatchEntries {
		t.Errorf("%d duplicates, more than one process's in-flight copies", dups)
	}
}

func TestAMQPRedriveDryRunCanaryAndTo(t *testing.T) {
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, n := clitest.SeedRabbit(t, o)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	q := env.QueueRef(n.DLQ)
	res := clitest.Run(t, testenv.Env{}, "", "redrive", q, "--to", "source", "--dry-run", "-o", "json")
	if res.Code != 0 || !strings.Contains(res.Stdout, `"would_move": 12`) || strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Fatalf("dry run: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	if got := clitest.ReadyOf(t, env, n.DLQ); got != o.Total() {
		t.Fatalf("dry run changed the DLQ: %d", got)
	}
	// Capacity dead letters go back to the TTL queue and expire again: the
	// canary sees them come back.
	res = clitest.Run(t, testenv.Env{}, "", "redrive", q, "--to", "source", "--filter", `.system.amqp.last_death.reason == "expired"`, "--canary", "1", "--verify-for", "3s", "--yes")
	if res.Code != 3 || !strings.Contains(res.Stdout+res.Stderr, "FAIL") {
		t.Fatalf("canary of a capacity dead letter: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	// --to a recovery queue.
	rec := n.DLQ + ".recovery"
	ch := clitest.OpenTestChannel(t, env)
	if _, err := ch.QueueDeclare(rec, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(rec, false, false, false) })
	res = clitest.Run(t, testenv.Env{}, "", "redrive", q, "--to", env.QueueRef(rec), "--filter", `.system.amqp.last_death.reason == "rejected"`, "--yes", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("--to: exit %d %s", res.Code, res.Stderr)
	}
	if got := clitest.DrainIDs(t, env, rec); len(got) != o.Rejected {
		t.Fatalf("recovery queue got %v, want the %d rejected", got, o.Rejected)
	}
	// Flags RabbitMQ cannot honour: one sentence naming it, exit 2.
	res = clitest.Run(t, testenv.Env{}, "", "redrive", q, "--to", "source", "--engine", "native", "--yes")
	if res.Code != 2 || !strings.Contains(res.Stderr, "RabbitMQ") {
		t.Fatalf("--engine native: exit %d %s", res.Code, res.Stderr)
	}
	res = clitest.Run(t, testenv.Env{}, "", "redrive", q, "--to", "source", "--visibility", "60s", "--yes")
	if res.Code != 2 || !strings.Contains(res.Stderr, "RabbitMQ") {
		t.Fatalf("--visibility: exit %d %s", res.Code, res.Stderr)
	}
}
