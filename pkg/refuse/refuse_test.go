package refuse_test

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/refuse"
)

// every is what cmd's factory passes: each broker as known before
// anything connects.
var every = refuse.Checker{Brokers: []broker.Capabilities{sqs.Capabilities(false), amqp.Capabilities(""), kafka.Capabilities()}}

func flagFn(m map[string]string) func(string) string { return func(n string) string { return m[n] } }

// wantRefusal fails unless err is the one exit-2 sentence want ("" for
// accepted).
func wantRefusal(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: refused: %v", what, err)
	case want != "" && (err == nil || err.Error() != want || errs.Code(err) != errs.ExitUsage || strings.Contains(err.Error(), "\n")):
		t.Errorf("%s:\n got %v\nwant exit 2 %q", what, err, want)
	}
}

// TestRefusalsNameTheBrokerAndTheWayOut: a flag the queue's broker cannot
// honour is exit 2 with one sentence naming the broker and what to do
// instead, decided from the capabilities alone; SQS honours them all.
func TestRefusalsNameTheBrokerAndTheWayOut(t *testing.T) {
	rabbit := broker.Capabilities{Label: "RabbitMQ", Hold: broker.HoldDelivery, Removal: broker.RemovePerMessage}
	kafkaCaps := broker.Capabilities{Label: "Kafka", Hold: broker.HoldNone, Removal: broker.RemoveCommitOffset}
	vis := refuse.Given{Name: "visibility", Value: "2m0s"}
	wait := refuse.Given{Name: "wait-inflight", Value: "false"}
	for _, c := range []struct {
		caps   broker.Capabilities
		set    []refuse.Given
		native bool
		want   string
	}{
		{rabbit, nil, true, "--engine native needs a broker that moves a whole queue itself (Amazon SQS); RabbitMQ has no server-side move: use --engine dlqctl (the default)"},
		{rabbit, []refuse.Given{vis}, false, "--visibility needs a broker that holds messages with a visibility timeout (Amazon SQS); RabbitMQ holds a message as an unacknowledged delivery for as long as the connection lives: drop --visibility"},
		{kafkaCaps, []refuse.Given{wait}, false, "--wait-inflight needs a broker that holds messages with a visibility timeout (Amazon SQS); Kafka holds nothing, it reads by offset: drop --wait-inflight"},
		{kafkaCaps, nil, false, ""},
		// A flag limited to some commands is not checked against the
		// resolved queue: the command's own check covers it.
		{kafkaCaps, []refuse.Given{{Name: "max-growth", Value: "5"}}, false, ""},
		{sqs.Capabilities(true), []refuse.Given{vis, wait}, true, ""},
	} {
		wantRefusal(t, c.caps.Label, every.Resolved(c.caps, c.set, c.native), c.want)
	}
}

// TestResolvedDestination: what only the resolved destination tells. A
// restore to an SQS FIFO queue sends with one sender (each message
// group's order), so --concurrency given to it is refused once the queue
// is known; a standard queue and RabbitMQ take it; a redrive's
// --concurrency (about its source) is not checked here.
func TestResolvedDestination(t *testing.T) {
	conc := []refuse.Given{{Name: "concurrency", Value: "4"}}
	wantRefusal(t, "restore to FIFO", every.ResolvedDest("restore", sqs.Capabilities(true), conc),
		"--concurrency needs a destination several senders can send to at once (Amazon SQS and RabbitMQ); an Amazon SQS FIFO queue keeps a message group's order only from one sender, so a restore sends with one: drop --concurrency")
	wantRefusal(t, "restore to Kafka", every.ResolvedDest("restore", kafka.Capabilities(), conc),
		"--concurrency needs a destination several senders can send to at once (Amazon SQS and RabbitMQ); Kafka keeps a key's records in order only from one sender, so a restore sends with one: drop --concurrency")
	wantRefusal(t, "restore to a standard queue", every.ResolvedDest("restore", sqs.Capabilities(false), conc), "")
	wantRefusal(t, "restore to RabbitMQ", every.ResolvedDest("restore", amqp.Capabilities(""), conc), "")
	wantRefusal(t, "restore to FIFO without the flag", every.ResolvedDest("restore", sqs.Capabilities(true), nil), "")
	wantRefusal(t, "redrive to FIFO", every.ResolvedDest("redrive", sqs.Capabilities(true), conc), "")
}

// TestCommandRefusals: the sentence for a command's flags on the brokers
// of its references, and the redrive across brokers, as docs/brokers.md
// shows them.
func TestCommandRefusals(t *testing.T) {
	amqpRef := "amqp://ops:pw-secret@127.0.0.1:1/%2f/orders.dlq"
	kafkaRef := "kafka://127.0.0.1:1/orders-dlt"
	for _, c := range []struct {
		cmd   string
		args  []string
		flags map[string]string
		want  string
	}{
		{"archive", []string{"orders-dlq"}, map[string]string{"delete-records": "true"},
			"--delete-records needs a broker that deletes records by offset (Kafka); Amazon SQS removes messages one by one: drop --delete-records (--delete removes what was archived)"},
		{"redrive", []string{kafkaRef}, map[string]string{"max-dest-backlog": "5"},
			"--max-dest-backlog needs a destination that counts the messages waiting in it (Amazon SQS and RabbitMQ); Kafka keeps every record in the topic: what waits is its consumer groups' lag: use --max-dest-lag GROUP:N"},
		{"restore", nil, map[string]string{"to": kafkaRef, "max-dest-backlog": "5"},
			"--max-dest-backlog needs a destination that counts the messages waiting in it (Amazon SQS and RabbitMQ); Kafka keeps every record in the topic: what waits is its consumer groups' lag: drop --max-dest-backlog and pace the restore with --rate or --ramp"},
		{"redrive", []string{amqpRef}, map[string]string{"engine": "native"},
			"--engine native needs a broker that moves a whole queue itself (Amazon SQS); RabbitMQ has no server-side move: use --engine dlqctl (the default)"},
		{"redrive", []string{amqpRef}, map[string]string{"engine": "dlqctl"}, ""},
		{"queues", nil, map[string]string{"kafka-tls": "true"},
			"--kafka-tls needs a Kafka reference (kafka://); Amazon SQS is reached without it: drop --kafka-tls"},
		// The first flag by name is the one refused.
		{"redrive", []string{kafkaRef}, map[string]string{"kafka-tls": "true", "amqp-ca": "ca.pem", "visibility": "1m"},
			"--amqp-ca needs a RabbitMQ reference (amqp://, amqps://); Kafka is reached without it: drop --amqp-ca"},
		{"redrive", []string{amqpRef}, map[string]string{"to": kafkaRef},
			"redrive moves messages within one broker: the DLQ amqp://***@127.0.0.1:1/%2f/orders.dlq is on RabbitMQ and --to kafka://127.0.0.1:1/orders-dlt on Kafka; redrive --to source or to a destination on RabbitMQ, or move them across with 'dlqctl archive' and 'dlqctl restore --to kafka://127.0.0.1:1/orders-dlt'"},
		{"redrive", []string{amqpRef}, map[string]string{"to": "source"}, ""},
		{"redrive", []string{kafkaRef}, map[string]string{"exactly-once": "true", "max-dest-lag": "billing:100", "kafka-group": "g", "region": "eu-west-1"}, ""},
		// A command without references checks nothing.
		{"runs", nil, map[string]string{"kafka-tls": "true"}, ""},
	} {
		var given []refuse.Given
		for n, v := range c.flags {
			if n != "to" {
				given = append(given, refuse.Given{Name: n, Value: v})
			}
		}
		refs := refuse.CommandRefs[c.cmd](c.args, flagFn(c.flags))
		err := every.Command(c.cmd, refs, given)
		wantRefusal(t, c.cmd+" "+strings.Join(c.args, " "), err, c.want)
		if err != nil && strings.Contains(err.Error(), "pw-secret") {
			t.Errorf("%s: the refusal shows the password: %v", c.cmd, err)
		}
	}
}

// TestCommandRefs: where each command's references are, and which role
// each plays.
func TestCommandRefs(t *testing.T) {
	roles := func(refs []refuse.Ref) string {
		var s []string
		for _, r := range refs {
			s = append(s, map[refuse.Role]string{refuse.Source: "src", refuse.Dest: "dst"}[r.Role]+":"+r.Broker+":"+r.Display)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		cmd   string
		args  []string
		flags map[string]string
		want  string
	}{
		{"redrive", []string{"orders-dlq"}, nil, "src:sqs:orders-dlq dst:sqs:orders-dlq"},
		{"redrive", []string{"orders-dlq"}, map[string]string{"to": "kafka://h:9092/t"}, "src:sqs:orders-dlq dst:kafka:kafka://h:9092/t"},
		{"redrive resume", nil, map[string]string{"dlq": "orders-dlq"}, "src:sqs:orders-dlq"},
		{"restore", []string{"s3://b/p/"}, map[string]string{"to": "orders"}, "dst:sqs:orders"},
		{"audit", nil, nil, "src:sqs:the account's SQS queues"},
		{"doctor", []string{"orders-dlq"}, map[string]string{"to": "orders"}, "src:sqs:orders-dlq dst:sqs:orders"},
		{"sample", []string{"", "  "}, nil, ""},
		{"archive verify", []string{"s3://b/p/"}, nil, ""},
	} {
		if got := roles(refuse.CommandRefs[c.cmd](c.args, flagFn(c.flags))); got != c.want {
			t.Errorf("%s %v %v: %q, want %q", c.cmd, c.args, c.flags, got, c.want)
		}
	}
}

// TestOnlyAnnotation: the help's "(… only)" comes from the same rows.
func TestOnlyAnnotation(t *testing.T) {
	for _, c := range []struct{ cmd, flag, usage, want string }{
		{"redrive", "exactly-once", "publish in transactions", " (Kafka only)"},
		{"redrive", "max-dest-backlog", "stop above N", " (Amazon SQS and RabbitMQ only)"},
		{"redrive", "engine", "dlqctl or native", " (--engine native: Amazon SQS only)"},
		{"sample", "visibility", "how long", " (Amazon SQS only)"},
		// The help already names the one broker.
		{"sample", "amqp-prefetch", "RabbitMQ: deliveries in flight", ""},
		{"sample", "filter", "jq expression", ""},
		{"audit", "sample", "N messages", " (Amazon SQS and Kafka only)"},
		{"sample", "sample", "", ""},
	} {
		if got := every.Only(c.cmd, c.flag, c.usage); got != c.want {
			t.Errorf("%s --%s: %q, want %q", c.cmd, c.flag, got, c.want)
		}
	}
}

func TestHaveLabels(t *testing.T) {
	for need, want := range map[*broker.Need]string{
		&broker.NeedLease:          "Amazon SQS",
		&broker.NeedBacklog:        "Amazon SQS and RabbitMQ",
		&broker.NeedDeleteByOffset: "Kafka",
	} {
		if got := every.HaveLabels(*need); got != want {
			t.Errorf("%s: %q, want %q", need.What, got, want)
		}
	}
	three := refuse.Checker{Brokers: append(every.Brokers, broker.Capabilities{Broker: "x", Label: "X", Hold: broker.HoldLease})}
	if got := three.HaveLabels(broker.NeedLease); got != "Amazon SQS and X" {
		t.Errorf("two: %q", got)
	}
	all := broker.Need{Has: func(broker.Capabilities) bool { return true }}
	if got := three.HaveLabels(all); got != "Amazon SQS, RabbitMQ, Kafka and X" {
		t.Errorf("four: %q", got)
	}
	if got := three.HaveLabels(broker.Need{Has: func(broker.Capabilities) bool { return false }}); got != "" {
		t.Errorf("none: %q", got)
	}
}

// restore --to source names no broker before the manifest is read: the
// flags are checked against the archived DLQ's broker then, a canary's as
// redrive --to source's (it watches that DLQ itself: Kafka takes it), the
// rest as a restore's.
func TestRestoreToSource(t *testing.T) {
	if refs := refuse.CommandRefs["restore"]([]string{"s3://b/p/run=x/"}, flagFn(map[string]string{"to": "source"})); len(refs) != 0 {
		t.Fatalf("restore --to source names %v before the manifest is read, want nothing", refs)
	}
	kc := kafka.Capabilities()
	canary := []refuse.Given{{Name: "canary", Value: "2"}, {Name: "verify-for", Value: "2s"}}
	wantRefusal(t, "Kafka canary", every.RestoreToSource(kc, "kafka://k:9092/orders-dlt", canary), "")
	wantRefusal(t, "Kafka --concurrency", every.RestoreToSource(kc, "kafka://k:9092/orders-dlt", []refuse.Given{{Name: "concurrency", Value: "4"}}),
		"--concurrency needs a destination several senders can send to at once (Amazon SQS and RabbitMQ); Kafka keeps a key's records in order only from one sender, so a restore sends with one: drop --concurrency")
	if err := every.RestoreToSource(sqs.Capabilities(false), "orders-dlq", []refuse.Given{{Name: "kafka-tls", Value: "true"}}); err == nil || !strings.Contains(err.Error(), "--kafka-tls needs a Kafka reference") {
		t.Errorf("--kafka-tls on an SQS archive's --to source: %v, want the refusal", err)
	}
	wantRefusal(t, "SQS canary", every.RestoreToSource(sqs.Capabilities(false), "orders-dlq", canary), "")
}
