package health

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/health"
)

// TestAMQPCheck: check on a RabbitMQ DLQ reads the exact ready count, ages
// the head of the queue from each message's timestamp or first death,
// measures growth from two readings, returns everything it peeked, and
// refuses --visibility in one sentence.
func TestAMQPCheck(t *testing.T) {
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, n := clitest.SeedRabbit(t, o)
	seeded := time.Now()
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	q := env.QueueRef(n.DLQ)
	res := clitest.Run(t, testenv.Env{}, "", "check", q)
	if res.Code != 3 || !strings.Contains(res.Stdout, "breach") || !strings.Contains(res.Stderr, "visible") {
		t.Fatalf("check with no threshold on %d messages: exit %d\n%s\n%s", o.Total(), res.Code, res.Stdout, res.Stderr)
	}
	res = clitest.Run(t, testenv.Env{}, "", "check", q, "--max-visible", "100", "--max-age", "1h", "--max-growth", "5/5m", "--growth-sample", "1s", "-o", "json")
	var rep health.CheckReport
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 0 || !rep.OK || len(rep.Results) != 3 || rep.Counts.Visible != o.Total() {
		t.Fatalf("check within limits: exit %d %+v\n%s", res.Code, rep, res.Stderr)
	}
	for _, r := range rep.Results {
		if r.Status != health.StatusOK {
			t.Errorf("%s: %s (%s)", r.Name, r.Status, r.Detail)
		}
		if r.Name == "oldest_age" && !strings.Contains(r.Detail, "all 12 ready") {
			t.Errorf("oldest_age detail %q", r.Detail)
		}
	}
	if strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Fatal("password in output")
	}
	// Ages are whole seconds: once a second has passed since the seed, a
	// 1-millisecond age limit is breached; the peek gave everything back.
	time.Sleep(time.Until(seeded.Add(1100 * time.Millisecond)))
	res = clitest.Run(t, testenv.Env{}, "", "check", q, "--max-age", "1ms")
	if res.Code != 3 || !strings.Contains(res.Stderr, "oldest_age") {
		t.Fatalf("--max-age 1ms: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	clitest.WaitNoUnacked(t, env, n.DLQ)
	if got := clitest.ReadyOf(t, env, n.DLQ); got != o.Total() {
		t.Fatalf("check changed the DLQ: %d ready, want %d", got, o.Total())
	}
	res = clitest.Run(t, testenv.Env{}, "", "check", q, "--visibility", "10s")
	if res.Code != 2 || !strings.Contains(res.Stderr, "RabbitMQ") {
		t.Fatalf("--visibility: exit %d %s", res.Code, res.Stderr)
	}
}
