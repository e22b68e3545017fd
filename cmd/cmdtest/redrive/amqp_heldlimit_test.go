package redrive

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestAMQPHeldLimitNote: a filtered redrive of a RabbitMQ DLQ holds the
// messages it did not select until the end (returned then, so they are not
// handed to it again); when they fill the prefetch, RabbitMQ delivers no
// more and the run stops partial (exit 4). The note says so in RabbitMQ's
// terms — the prefetch, --amqp-prefetch and the unselected messages — not
// SQS's in-flight limit, and nothing unselected left the DLQ.
func TestAMQPHeldLimitNote(t *testing.T) {
	const n = 60
	env, names, prefix := clitest.BulkRabbit(t, n)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	t.Setenv(testenv.EnvAMQPManagementURL, env.ManagementURL)
	// Select only the last message: the first 20 delivered fill the prefetch.
	res := clitest.Run(t, testenv.Env{}, "", "redrive", env.QueueRef(names.DLQ), "--to", "source",
		"--filter", `.message_id == "`+prefix+`-bulk-59"`, "--amqp-prefetch", "20", "--yes", "-o", "json")
	var sum clitest.AMQPRunSummary
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil {
		t.Fatalf("redrive: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	all := res.Stdout + res.Stderr
	if res.Code != 4 || sum.Status == "completed" {
		t.Fatalf("a filtered redrive whose unselected messages fill the prefetch: exit %d, status %q\n%s", res.Code, sum.Status, all)
	}
	for _, want := range []string{"--amqp-prefetch", "prefetch"} {
		if !strings.Contains(sum.Note, want) {
			t.Errorf("the note does not mention %q: %q", want, sum.Note)
		}
	}
	for _, bad := range []string{"SQS", "visibility", "in flight"} {
		if strings.Contains(sum.Note, bad) {
			t.Errorf("the note of a RabbitMQ run speaks of %q: %q", bad, sum.Note)
		}
	}
	if got := clitest.ReadyOf(t, env, names.DLQ); got != n-sum.Moved {
		t.Errorf("%d ready in the DLQ after moving %d of %d", got, sum.Moved, n)
	}
}
