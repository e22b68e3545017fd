package health

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

func TestAMQPQueuesAndAudit(t *testing.T) {
	env, n := clitest.SeedRabbit(t, amqpseed.Default(clitest.RabbitPrefix(t)))
	p := strings.TrimSuffix(n.DLQ, ".dlq")
	res := clitest.Run(t, testenv.Env{}, "", "queues", env.URL, "--prefix", p, "-o", "json")
	if res.Code != 0 {
		t.Fatalf("queues: %d %s", res.Code, res.Stderr)
	}
	var qs []amqp.DLQInfo
	if err := json.Unmarshal([]byte(res.Stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Name != n.DLQ || len(qs[0].Sources) != 4 || strings.Contains(qs[0].Ref, env.Password) {
		t.Fatalf("queues %+v", qs)
	}
	if strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Fatal("password in output")
	}
	res = clitest.Run(t, testenv.Env{}, "", "audit", env.URL, "--prefix", p, "--fail-on", "warn")
	if res.Code != 3 || !strings.Contains(res.Stdout, amqp.CheckDLQUnbounded) || !strings.Contains(res.Stdout, n.DLQ) {
		t.Fatalf("audit: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = clitest.Run(t, testenv.Env{}, "", "audit", env.URL, "--prefix", p, "--sample", "5")
	if res.Code != 2 || !strings.Contains(res.Stderr, "RabbitMQ") {
		t.Fatalf("audit --sample: exit %d %s", res.Code, res.Stderr)
	}
	// Unreachable management API: one sentence naming the flag, exit 2
	// as any endpoint that cannot be reached before anything started.
	res = clitest.Run(t, testenv.Env{}, "", "audit", env.URL, "--amqp-management-url", "http://127.0.0.1:1")
	if res.Code != 2 || !strings.Contains(res.Stderr, "--amqp-management-url") || strings.Contains(res.Stderr, env.Password) {
		t.Fatalf("unreachable: exit %d %s", res.Code, res.Stderr)
	}
}
