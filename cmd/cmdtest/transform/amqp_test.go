package transform

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// rabbitIncident declares amqpseed's topology and dead-letters the orders
// (rejected from PREFIX.orders into PREFIX.dlq), each with headers and
// properties a copy must keep.
func rabbitIncident(t *testing.T, fixable, unfixable int) (testenv.RabbitMQ, amqpseed.Names, []string, []string) {
	t.Helper()
	env := testenv.RequireRabbitMQ(t)
	t.Setenv(testenv.EnvAMQPManagementURL, env.ManagementURL)
	prefix := clitest.RabbitPrefix(t)
	ch := clitest.OpenTestChannel(t, env)
	n, err := amqpseed.Topology(ch, amqpseed.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c := clitest.OpenTestChannel(t, env); c != nil {
			amqpseed.Delete(c, prefix)
		}
	})
	var fix, unfix []string
	for i := range fixable {
		fix = append(fix, orderBody(i, true))
	}
	for i := range unfixable {
		unfix = append(unfix, orderBody(1000+i, false))
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, 64))
	all := append(append([]string{}, fix...), unfix...)
	for i, b := range all {
		err := ch.PublishWithContext(t.Context(), n.Exchange, n.OrdersKey, true, false, amqp091.Publishing{
			ContentType: "application/json", MessageId: fmt.Sprintf("%s-m%d", prefix, i), DeliveryMode: amqp091.Persistent,
			Headers: amqp091.Table{"tenant": "acme"}, Body: []byte(b)})
		if err != nil {
			t.Fatal(err)
		}
		if c := <-confirms; !c.Ack {
			t.Fatal("publish not confirmed")
		}
	}
	deadline := time.Now().Add(time.Minute)
	for rejected := 0; rejected < len(all); {
		d, ok, err := ch.Get(n.Orders, false)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if time.Now().After(deadline) {
				t.Fatalf("rejected %d of %d", rejected, len(all))
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err := d.Nack(false, false); err != nil {
			t.Fatal(err)
		}
		rejected++
	}
	for clitest.ReadyOf(t, env, n.DLQ) < len(all) {
		if time.Now().After(deadline) {
			t.Fatalf("the DLQ holds %d of %d", clitest.ReadyOf(t, env, n.DLQ), len(all))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return env, n, fix, unfix
}

// TestTransformRedriveRabbitMQ is the "done means" on RabbitMQ: repaired
// orders back in their queue with their headers, properties and the
// provenance marker; the unfixable left in the DLQ; the originals in the
// archive byte for byte.
func TestTransformRedriveRabbitMQ(t *testing.T) {
	env, n, fix, unfix := rabbitIncident(t, 6, 2)
	senv := testenv.Require(t)
	clitest.SetStackEnv(t, senv)
	bucket := clitest.Bucket(t, senv, "xfrmq")
	// The dry run: the diff, nothing changed (the messages go back).
	d := clitest.Run(t, testenv.Env{}, "", "redrive", env.QueueRef(n.DLQ), "--transform", fixExpr, "--dry-run")
	if d.Code != 0 || !strings.Contains(d.Stdout, `  + .json.amount: 10.5`) || !strings.Contains(d.Stdout, "transform: 6 changed, 0 unchanged, 2 failed") {
		t.Fatalf("dry run: exit %d\n%s\n%s", d.Code, d.Stdout, d.Stderr)
	}
	clitest.WaitNoUnacked(t, env, n.DLQ)
	r := clitest.Run(t, testenv.Env{}, "", "--state-dir", t.TempDir(), "redrive", env.QueueRef(n.DLQ), "--transform", fixExpr,
		"--archive-originals", "s3://"+bucket+"/originals", "--yes", "-o", "json")
	if r.Code != 4 {
		t.Fatalf("exit %d (want 4)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var sum cmd.RedriveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Moved != 6 || sum.Transform == nil || sum.Transform.Changed != 6 || sum.Transform.Failed != 2 || sum.Transform.Originals == nil ||
		sum.Transform.Originals.Records != 6 || sum.Transform.Originals.Manifest == "" {
		t.Fatalf("summary %+v %+v", sum.Result, sum.Transform)
	}
	type copyOf struct{ body, tenant, ctype, marker string }
	var copies []copyOf
	clitest.DrainBy(t, env, n.Orders, func(d amqp091.Delivery) string {
		s, _ := d.Headers["tenant"].(string)
		m, _ := d.Headers[transform.Attribute].(string)
		copies = append(copies, copyOf{body: string(d.Body), tenant: s, ctype: d.ContentType, marker: m})
		return ""
	})
	want := map[string]bool{}
	for i := range fix {
		want[repaired(i)] = true
	}
	if len(copies) != len(fix) {
		t.Fatalf("%d copies in %s, want %d: %+v", len(copies), n.Orders, len(fix), copies)
	}
	for _, c := range copies {
		var mk transform.Marker
		if !want[c.body] || c.tenant != "acme" || c.ctype != "application/json" ||
			json.Unmarshal([]byte(c.marker), &mk) != nil || mk.RunID != sum.RunID || mk.ExprSHA256 != sum.Transform.SHA256 || !strings.Contains(mk.OriginalID, "-m") {
			t.Errorf("copy %+v", c)
		}
		delete(want, c.body)
	}
	left := clitest.DrainBy(t, env, n.DLQ, func(d amqp091.Delivery) string { return string(d.Body) })
	if len(left) != len(unfix) || left[unfix[0]] != 1 || left[unfix[1]] != 1 {
		t.Fatalf("DLQ holds %v, want the unfixable %v", left, unfix)
	}
	arch := map[string]int{}
	for _, rec := range clitest.SampleArchive(t, senv, sum.Transform.Originals.Manifest) {
		arch[rec.Body]++
		if rec.Attributes["tenant"].Value != "acme" {
			t.Errorf("archived original lost its header: %+v", rec.Attributes)
		}
	}
	for _, b := range fix {
		if arch[b] != 1 {
			t.Errorf("original %s archived %d time(s)", b, arch[b])
		}
	}
	if v := clitest.Run(t, senv, "", "archive", "verify", sum.Transform.Originals.Manifest); v.Code != 0 {
		t.Fatalf("archive verify: exit %d %s", v.Code, v.Stderr)
	}
}
