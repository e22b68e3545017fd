package inspect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

func TestAMQPSampleGroupClassify(t *testing.T) {
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, n := clitest.SeedRabbit(t, o)
	q := env.QueueRef(n.DLQ)
	res := clitest.Run(t, testenv.Env{}, "", "sample", q, "-n", "100", "-o", "ndjson")
	if res.Code != 0 {
		t.Fatalf("sample: %d %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != o.Total() {
		t.Fatalf("sample printed %d records, want %d", len(lines), o.Total())
	}
	reasons := map[string]int{}
	for _, l := range lines {
		var rec struct {
			Broker string `json:"broker"`
			Queue  string `json:"queue"`
			System struct {
				AMQP struct {
					Deaths []struct {
						Reason      string   `json:"reason"`
						RoutingKeys []string `json:"routing_keys"`
					} `json:"deaths"`
				} `json:"amqp"`
			} `json:"system"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Broker != "amqp" || !strings.HasSuffix(rec.Queue, "/"+n.DLQ) {
			t.Errorf("record broker %q queue %q", rec.Broker, rec.Queue)
		}
		if len(rec.System.AMQP.Deaths) > 0 {
			reasons[rec.System.AMQP.Deaths[0].Reason]++
		}
	}
	if reasons["rejected"] != o.Rejected || reasons["expired"] != o.Expired+o.PerMessageTTL || reasons["maxlen"] != o.MaxLen || reasons["delivery_limit"] != o.DeliveryLimit {
		t.Errorf("death reasons %v", reasons)
	}
	for _, out := range []string{res.Stdout, res.Stderr} {
		if strings.Contains(out, env.Password) {
			t.Fatal("password in sample output")
		}
	}
	res = clitest.Run(t, testenv.Env{}, "", "group", q, "--by", "reason", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("group: %d %s", res.Code, res.Stderr)
	}
	for _, want := range []string{`"rejected"`, `"expired"`, `"maxlen"`, `"delivery_limit"`, `"recoverer"`} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("group --by reason lacks %s: %s", want, res.Stdout)
		}
	}
	res = clitest.Run(t, testenv.Env{}, "", "classify", q, "-o", "ndjson")
	if res.Code != 0 {
		t.Fatalf("classify: %d %s", res.Code, res.Stderr)
	}
	if got := strings.Count(res.Stdout, `"rule":"broker-capacity"`); got != o.Expired+o.PerMessageTTL+o.MaxLen {
		t.Errorf("broker-capacity classified %d, want %d", got, o.Expired+o.PerMessageTTL+o.MaxLen)
	}
	// Three reads later the queue holds everything, in its order.
	ep := clitest.OpenTestEndpoint(t, env, n.DLQ)
	d, err := ep.Depth(context.Background())
	if err != nil || d.Ready != int64(o.Total()) {
		t.Fatalf("depth after reads %+v %v", d, err)
	}
}

func TestAMQPPeekRefusesQuorumDeliveryLimit(t *testing.T) {
	o := amqpseed.Options{Prefix: clitest.RabbitPrefix(t), Rejected: 2, QuorumDLQ: true, DLQDeliveryLimit: 4}
	env, n := clitest.SeedRabbit(t, o)
	res := clitest.Run(t, testenv.Env{}, "", "sample", env.QueueRef(n.DLQ))
	if res.Code != 2 || !strings.Contains(res.Stderr, "delivery limit 4") || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
		t.Fatalf("exit %d: %q", res.Code, res.Stderr)
	}
	// check does not peek it either: the age is unknown, with the reason;
	// the ready count still answers.
	res = clitest.Run(t, testenv.Env{}, "", "check", env.QueueRef(n.DLQ), "--max-age", "1h", "--max-visible", "10")
	if res.Code != 0 || !strings.Contains(res.Stdout, "unknown") || !strings.Contains(res.Stdout, "delivery limit 4") {
		t.Fatalf("check --max-age on a quorum queue with a delivery limit: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
}
