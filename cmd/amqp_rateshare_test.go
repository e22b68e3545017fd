package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestAMQPRateShareTwoProcesses: two processes share one RabbitMQ DLQ's
// redrive (--rate-share 1/2 and 2/2) as competing consumers: each message
// reaches its source exactly once, both runs say completed, and the work
// was split between them.
func TestAMQPRateShareTwoProcesses(t *testing.T) {
	const n = 1200
	env, names, prefix := bulkRabbit(t, n)
	bin := testenv.BuildBinary(t)
	type run struct {
		cmd      *exec.Cmd
		out, err bytes.Buffer
	}
	runs := make([]*run, 2)
	for i := range runs {
		r := &run{}
		// A small prefetch: a process takes no more than it works on, so
		// the peers share the queue instead of one holding it all.
		r.cmd = exec.Command(bin, "redrive", env.QueueRef(names.DLQ), "--to", "source", "--rate", "800",
			"--rate-share", fmt.Sprintf("%d/2", i+1), "--amqp-prefetch", "50", "--yes", "-o", "json",
			"--state-dir", t.TempDir())
		r.cmd.Env = append(os.Environ(), envAMQPManagementURL+"="+env.ManagementURL)
		r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	total := 0
	for i, r := range runs {
		err := r.cmd.Wait()
		var sum amqpRunSummary
		if jerr := json.Unmarshal(r.out.Bytes(), &sum); jerr != nil || err != nil {
			t.Fatalf("process %d/2: %v %v\n%s\n%s", i+1, err, jerr, r.out.String(), r.err.String())
		}
		if sum.Status != "completed" {
			t.Errorf("process %d/2 status %q: %s", i+1, sum.Status, r.out.String())
		}
		if sum.Moved == 0 {
			t.Errorf("process %d/2 moved nothing: the peers did not share the queue", i+1)
		}
		t.Logf("process %d/2 moved %d", i+1, sum.Moved)
		total += sum.Moved
	}
	if total != n {
		t.Errorf("the two processes moved %d, want %d", total, n)
	}
	if left := readyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("%d messages left in the DLQ", left)
	}
	got := drainIDs(t, env, names.Orders)
	for i := 0; i < n; i++ {
		if id := fmt.Sprintf("%s-bulk-%d", prefix, i); got[id] != 1 {
			t.Errorf("%s reached the source %d times", id, got[id])
		}
	}
}
