package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// seedRabbit dead-letters o's messages on the stack's RabbitMQ and points
// dlqctl at its management API.
func seedRabbit(t *testing.T, o amqpseed.Options) (testenv.RabbitMQ, amqpseed.Names) {
	t.Helper()
	env := testenv.RequireRabbitMQ(t)
	t.Setenv(envAMQPManagementURL, env.ManagementURL)
	ref, err := amqp.ParseVHostRef(env.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := amqp.Dial(ctx, ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			amqpseed.Delete(ch, o.Prefix)
		}
		conn.Close()
	})
	n, err := amqpseed.Seed(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	return env, n
}

func rabbitPrefix(t *testing.T) string {
	return "c" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
}

func TestAMQPQueuesAndAudit(t *testing.T) {
	env, n := seedRabbit(t, amqpseed.Default(rabbitPrefix(t)))
	p := strings.TrimSuffix(n.DLQ, ".dlq")
	res := runCLI(t, testenv.Env{}, "", "queues", env.URL, "--prefix", p, "-o", "json")
	if res.Code != 0 {
		t.Fatalf("queues: %d %s", res.Code, res.Stderr)
	}
	var qs []AMQPDLQInfo
	if err := json.Unmarshal([]byte(res.Stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Name != n.DLQ || len(qs[0].Sources) != 4 || strings.Contains(qs[0].Ref, env.Password) {
		t.Fatalf("queues %+v", qs)
	}
	if strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Fatal("password in output")
	}
	res = runCLI(t, testenv.Env{}, "", "audit", env.URL, "--prefix", p, "--fail-on", "warn")
	if res.Code != 3 || !strings.Contains(res.Stdout, amqp.CheckDLQUnbounded) || !strings.Contains(res.Stdout, n.DLQ) {
		t.Fatalf("audit: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = runCLI(t, testenv.Env{}, "", "audit", env.URL, "--prefix", p, "--sample", "5")
	if res.Code != 2 || !strings.Contains(res.Stderr, "RabbitMQ") {
		t.Fatalf("audit --sample: exit %d %s", res.Code, res.Stderr)
	}
	// Unreachable management API: one sentence naming the flag.
	res = runCLI(t, testenv.Env{}, "", "audit", env.URL, "--amqp-management-url", "http://127.0.0.1:1")
	if res.Code != 1 || !strings.Contains(res.Stderr, "--amqp-management-url") || strings.Contains(res.Stderr, env.Password) {
		t.Fatalf("unreachable: exit %d %s", res.Code, res.Stderr)
	}
}
