package inspect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// complete runs cobra's hidden __complete command (what the shell scripts
// of `dlqctl completion` call) and returns the offered words, without
// their descriptions, and stderr.
func complete(t *testing.T, env testenv.Env, args ...string) ([]string, string) {
	t.Helper()
	r := clitest.Run(t, env, "", append([]string{"__complete"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, r.Code, r.Stderr)
	}
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, r.Stderr
}

func has(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// TestCompletionOffersFlagValues: the flags that take one of a few words
// complete them: --class (the built-in rules' classes, or those of
// --rules FILE), -o, --by (a comma list), --kafka-sasl, --role, --on-guard.
func TestCompletionOffersFlagValues(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("version: 1\nrules:\n  - name: paid\n    when: '.envelope.event_type == \"OrderPaid\"'\n    class: payments-replay\n    action: redrive\ndefault:\n  class: leftover\n  action: investigate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args     []string
		want     []string
		unwanted []string
	}{
		{args: []string{"classify", "orders-dlq", "--class", ""}, want: []string{"transient", "permanent", "unknown"}},
		{args: []string{"redrive", "orders-dlq", "--class", "tr"}, want: []string{"transient"}, unwanted: []string{"permanent"}},
		{args: []string{"redrive", "orders-dlq", "--rules", rules, "--class", ""}, want: []string{"payments-replay", "leftover"}, unwanted: []string{"transient"}},
		{args: []string{"sample", "orders-dlq", "-o", ""}, want: []string{"table", "json", "ndjson"}},
		{args: []string{"group", "orders-dlq", "--by", "source,ev"}, want: []string{"source,event_type"}, unwanted: []string{"source,source"}},
		{args: []string{"doctor", "kafka://k:9092/t", "--kafka-sasl", ""}, want: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM"}},
		{args: []string{"doctor", "orders-dlq", "--role", ""}, want: []string{"read-only", "operator", "archivist", "all"}},
		{args: []string{"redrive", "orders-dlq", "--on-guard", ""}, want: []string{"abort", "pause"}},
		{args: []string{"redrive", "orders-dlq", "--to", "sou"}, want: []string{"source"}},
		{args: []string{"restore", "s3://b/p/run=x/", "--to", "sou"}, want: []string{"source"}},
	}
	for _, c := range cases {
		words, _ := complete(t, testenv.Env{}, c.args...)
		for _, w := range c.want {
			if !has(words, w) {
				t.Errorf("__complete %v offers %q, not %q", c.args, words, w)
			}
		}
		for _, w := range c.unwanted {
			if has(words, w) {
				t.Errorf("__complete %v offers %q", c.args, w)
			}
		}
	}
}

// TestCompletionOffersQueueNamesFromTheBrokers: with a connection
// configured, a queue argument and --to complete from the brokers — SQS
// ListQueues, RabbitMQ's management API, Kafka's metadata — and a broker
// that does not answer offers nothing and prints nothing but cobra's own
// directive line.
func TestCompletionOffersQueueNamesFromTheBrokers(t *testing.T) {
	env := testenv.Require(t)
	rabbit := testenv.RequireRabbitMQ(t)
	brokers := testenv.RequireKafka(t)

	sqsName, _ := clitest.FillQueue(t, env, "complete", 1)
	words, _ := complete(t, env, "sample", sqsName[:len(sqsName)-3])
	if !has(words, sqsName) {
		t.Errorf("sample %s<TAB> offers %q, not the queue %s", sqsName[:len(sqsName)-3], words, sqsName)
	}
	if words, _ := complete(t, env, "redrive", "orders-dlq", "--to", sqsName[:len(sqsName)-3]); !has(words, sqsName) {
		t.Errorf("redrive --to %s<TAB> offers %q, not the queue %s", sqsName[:len(sqsName)-3], words, sqsName)
	}

	ch := clitest.OpenTestChannel(t, rabbit)
	rq := testenv.UniqueName(t, "complete-rq")
	if _, err := ch.QueueDeclare(rq, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(rq, false, false, false) })
	words, _ = complete(t, env, "check", rabbit.URL+"%2f/"+rq[:len(rq)-3])
	if !has(words, rabbit.QueueRef(rq)) {
		t.Errorf("check %s<TAB> offers %d words, not %s", rabbit.URL+"%2f/"+rq[:len(rq)-3], len(words), rabbit.QueueRef(rq))
	}

	topic := testenv.UniqueName(t, "complete-dlt")
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, r.Err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(t.Context(), topic) })
	words, _ = complete(t, env, "watch", "kafka://"+brokers+"/"+topic[:len(topic)-3])
	if !has(words, "kafka://"+brokers+"/"+topic) {
		t.Errorf("watch kafka://%s/%s<TAB> offers %q, not the topic %s", brokers, topic[:len(topic)-3], words, topic)
	}

	// Brokers that do not answer: nothing offered, nothing said.
	for _, args := range [][]string{
		{"sample", "--sqs-endpoint-url", "http://127.0.0.1:1", "orders"},
		{"sample", "--amqp-management-url", "http://127.0.0.1:1", "amqp://127.0.0.1:1/%2f/orders"},
		{"sample", "kafka://127.0.0.1:1/orders"},
	} {
		words, stderr := complete(t, env, args...)
		if len(words) > 0 {
			t.Errorf("__complete %v offers %q from a broker that does not answer", args, words)
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "Completion ended with directive") {
			t.Errorf("__complete %v said more than cobra's directive on stderr: %q", args, stderr)
		}
	}
}
