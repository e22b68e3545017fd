package health

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/health"
)

// TestAMQPWatch: watch on a RabbitMQ DLQ prints the ready count and its
// growth per minute as messages arrive, consuming nothing.
func TestAMQPWatch(t *testing.T) {
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, n := clitest.SeedRabbit(t, o)
	ch := clitest.OpenTestChannel(t, env)
	const more = 5
	go func() {
		time.Sleep(300 * time.Millisecond)
		for i := 0; i < more; i++ {
			_ = ch.Publish("", n.DLQ, false, false, amqp091.Publishing{Body: []byte(`{"late":true}`)})
		}
	}()
	res := clitest.Run(t, testenv.Env{}, "", "watch", env.QueueRef(n.DLQ), "--count", "3", "--interval", "1s", "-o", "ndjson")
	if res.Code != 0 {
		t.Fatalf("watch: exit %d %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("watch printed %d ticks, want 3:\n%s", len(lines), res.Stdout)
	}
	var ticks []health.Tick
	for _, l := range lines {
		var tk health.Tick
		if err := json.Unmarshal([]byte(l), &tk); err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, tk)
	}
	first, last := ticks[0], ticks[2]
	if first.GrowthPerMinute != nil || last.GrowthPerMinute == nil {
		t.Fatalf("growth: first %v, last %v", first.GrowthPerMinute, last.GrowthPerMinute)
	}
	if last.Counts.Visible != o.Total()+more {
		t.Fatalf("last tick: %d ready, want %d", last.Counts.Visible, o.Total()+more)
	}
	if first.Counts.Visible == o.Total() && *last.GrowthPerMinute <= 0 {
		t.Fatalf("%d messages arrived but growth is %v", more, *last.GrowthPerMinute)
	}
	if strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Fatal("password in output")
	}
	// Piped table: one tab-separated line per tick.
	res = clitest.Run(t, testenv.Env{}, "", "watch", env.QueueRef(n.DLQ), "--count", "1")
	if f := strings.Split(strings.TrimSpace(res.Stdout), "\t"); res.Code != 0 || len(f) != 6 || f[1] != "17" {
		t.Fatalf("watch piped: exit %d %q %s", res.Code, res.Stdout, res.Stderr)
	}
	if got := clitest.ReadyOf(t, env, n.DLQ); got != o.Total()+more {
		t.Fatalf("watch consumed: %d ready", got)
	}
}
