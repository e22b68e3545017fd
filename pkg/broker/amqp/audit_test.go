package amqp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/finding"
)

func TestAuditFindsRabbitMQTraps(t *testing.T) {
	r := newRig(t)
	p := prefix(t)
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	declare := func(name string, args amqp091.Table) {
		t.Helper()
		_, err := ch.QueueDeclare(p+name, true, false, false, false, args)
		must(err)
		t.Cleanup(func() { _, _ = ch.QueueDelete(p+name, false, false, false) })
	}
	exchange := func(name, kind string) {
		t.Helper()
		must(ch.ExchangeDeclare(p+name, kind, true, false, false, false, nil))
		t.Cleanup(func() { _ = ch.ExchangeDelete(p+name, false, false) })
	}
	// A healthy pair: source -> dlx (fanout) -> bounded dlq.
	exchange(".dlx", "fanout")
	declare(".ok", amqp091.Table{"x-dead-letter-exchange": p + ".dlx"})
	declare(".ok.dlq", amqp091.Table{"x-max-length": int64(100000)})
	must(ch.QueueBind(p+".ok.dlq", "", p+".dlx", false, nil))
	// Traps.
	declare(".missing", amqp091.Table{"x-dead-letter-exchange": p + ".nope"})
	exchange(".empty-dlx", "direct")
	declare(".nowhere", amqp091.Table{"x-dead-letter-exchange": p + ".empty-dlx"})
	declare(".q-limit", amqp091.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(5)})
	declare(".ttl", amqp091.Table{"x-message-ttl": int64(60000)})
	declare(".plain", nil)
	declare(".q-alo", amqp091.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": p + ".dlx", "x-dead-letter-strategy": "at-least-once"})
	// A retry cycle without a TTL: work -> retry-x -> retry -> work-x -> work.
	exchange(".work-x", "fanout")
	exchange(".retry-x", "fanout")
	declare(".work", amqp091.Table{"x-dead-letter-exchange": p + ".retry-x"})
	declare(".retry", amqp091.Table{"x-dead-letter-exchange": p + ".work-x"})
	must(ch.QueueBind(p+".retry", "", p+".retry-x", false, nil))
	must(ch.QueueBind(p+".work", "", p+".work-x", false, nil))
	// The same cycle with a TTL on the retry queue is the classic delayed
	// retry: no finding.
	exchange(".work2-x", "fanout")
	exchange(".retry2-x", "fanout")
	declare(".work2", amqp091.Table{"x-dead-letter-exchange": p + ".retry2-x"})
	declare(".retry2", amqp091.Table{"x-dead-letter-exchange": p + ".work2-x", "x-message-ttl": int64(5000)})
	must(ch.QueueBind(p+".retry2", "", p+".retry2-x", false, nil))
	must(ch.QueueBind(p+".work2", "", p+".work2-x", false, nil))
	// An unbounded DLQ with a TTL and no DLX of its own.
	exchange(".dlx3", "fanout")
	declare(".src3", amqp091.Table{"x-dead-letter-exchange": p + ".dlx3"})
	declare(".dlq3", amqp091.Table{"x-message-ttl": int64(3600000)})
	must(ch.QueueBind(p+".dlq3", "", p+".dlx3", false, nil))

	topo, err := amqp.LoadTopology(context.Background(), r.mgmt, "/")
	if err != nil {
		t.Fatal(err)
	}
	fs := amqp.Audit(topo, amqp.AuditOptions{Prefix: p}, nil)
	got := map[string]string{}
	for _, f := range fs {
		got[strings.TrimPrefix(f.Queue, p)+" "+f.Check] = string(f.Severity)
		if f.Problem == "" || f.Why == "" || (f.Fix.Text == "" && f.Fix.Command == "") {
			t.Errorf("finding without problem/why/fix: %+v", f)
		}
	}
	want := map[string]string{
		".missing " + amqp.CheckDLXMissing:                    "error",
		".nowhere " + amqp.CheckDLXUnrouted:                   "error",
		".q-limit " + amqp.CheckQuorumLimitNoDLX:              "error",
		".ttl " + amqp.CheckDropWithoutDLX:                    "error",
		".plain " + amqp.CheckNoDLX:                           "warn",
		".q-alo " + amqp.CheckAtLeastOnceIneffect:             "warn",
		".retry " + amqp.CheckCycleWithoutTTL:                 "warn",
		".dlq3 " + amqp.CheckDLQUnbounded:                     "warn",
		".dlq3 " + amqp.CheckDLQDrops:                         "warn",
		".ok.dlq " + amqp.CheckDLQDrops + "-never":            "",
		".retry2 " + amqp.CheckCycleWithoutTTL + "-never":     "",
		".ok " + amqp.CheckNoDLX + "-never":                   "",
		".ok.dlq " + amqp.CheckDLQUnbounded + "-never":        "",
		".work2 " + amqp.CheckCycleWithoutTTL + "-never":      "",
		".q-limit " + amqp.CheckQuorumDefaultLimit + "-never": "",
	}
	for k, sev := range want {
		if strings.HasSuffix(k, "-never") {
			if g, ok := got[strings.TrimSuffix(k, "-never")]; ok {
				t.Errorf("unexpected finding %s (%s)", strings.TrimSuffix(k, "-never"), g)
			}
			continue
		}
		if got[k] != sev {
			t.Errorf("finding %s: severity %q, want %q", k, got[k], sev)
		}
	}
	if t.Failed() {
		for _, f := range fs {
			t.Log(fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, f.Queue, f.Problem))
		}
	}
	if finding.Count(fs).Errors != 4 {
		t.Errorf("errors = %d, want 4", finding.Count(fs).Errors)
	}
}
