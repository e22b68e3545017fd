package archive

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestAMQPRestoreCanary: restore --canary to RabbitMQ sends N archived
// messages and watches the queue the destination dead-letters to. A
// destination whose consumer rejects them: the copies come back to the
// DLQ, the canary fails (exit 3) naming them, and nothing beyond the N was
// sent. A destination that keeps them: the canary passes (exit 0). A
// destination whose failures would be dropped (no dead-letter exchange)
// or an exchange whose queues dead-letter to different queues: refused
// before anything is sent (exit 2, one sentence with the way out).
func TestAMQPRestoreCanary(t *testing.T) {
	const n = 40
	senv := testenv.Require(t)
	env, names, _ := clitest.BulkRabbit(t, n)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	t.Setenv(testenv.EnvAMQPManagementURL, env.ManagementURL)
	bucket := clitest.Bucket(t, senv, "rc")
	res := clitest.Run(t, senv, "", "archive", env.QueueRef(names.DLQ), "--to", "s3://"+bucket+"/dlq", "--delete", "--yes", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("archive: exit %d %s", res.Code, res.Stderr)
	}
	var arc cmd.ArchiveSummary
	if err := json.Unmarshal([]byte(res.Stdout), &arc); err != nil || arc.Manifest == "" {
		t.Fatalf("archive summary: %v %s", err, res.Stdout)
	}
	run := arc.Manifest

	// A consumer of the orders queue that rejects everything (requeue
	// false): the orders queue's dead-letter exchange takes the copies to
	// the DLQ.
	ch := clitest.OpenTestChannel(t, env)
	if err := ch.Qos(10, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(names.Orders, "rejecting-consumer", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rejected atomic.Int64
	go func() {
		for d := range ds {
			_ = d.Nack(false, false)
			rejected.Add(1)
		}
	}()
	res = clitest.Run(t, senv, "", "restore", run, "--to", env.QueueRef(names.Orders), "--canary", "3", "--verify-for", "20s", "--verify-poll", "500ms", "--yes", "-o", "json")
	var sum struct {
		Status string `json:"status"`
		Moved  int    `json:"moved"`
		Canary *struct {
			Pass     bool   `json:"pass"`
			Returned int    `json:"returned"`
			Detail   string `json:"detail"`
		} `json:"canary"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil {
		t.Fatalf("restore --canary: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 3 || sum.Canary == nil || sum.Canary.Pass || sum.Canary.Returned != 3 || sum.Moved != 3 {
		t.Fatalf("restore --canary 3 to a queue whose consumer rejects: exit %d, moved %d, canary %+v\n%s", res.Code, sum.Moved, sum.Canary, res.Stderr)
	}
	if !strings.Contains(sum.Canary.Detail, names.DLQ) || !strings.Contains(res.Stderr, "watching "+names.DLQ) {
		t.Errorf("the verdict does not name the watched DLQ %s: %q\n%s", names.DLQ, sum.Canary.Detail, res.Stderr)
	}
	if got := clitest.ReadyOf(t, env, names.DLQ); got != 3 {
		t.Errorf("%d messages in the DLQ after the failed canary, want the 3 canary copies", got)
	}
	if r := rejected.Load(); r != 3 {
		t.Errorf("the destination received %d copies, want only the canary's 3", r)
	}
	if err := ch.Cancel("rejecting-consumer", false); err != nil {
		t.Fatal(err)
	}

	// A recovery queue with its own dead-letter queue and no consumer: the
	// canary passes; the copies wait in the recovery queue.
	rec, recDLX, recDLQ := names.DLQ+".recovery", names.DLQ+".recovery.dlx", names.DLQ+".recovery.dlq"
	if err := ch.ExchangeDeclare(recDLX, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(recDLQ, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(recDLQ, "failed", recDLX, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(rec, false, true, false, false, amqp091.Table{"x-dead-letter-exchange": recDLX, "x-dead-letter-routing-key": "failed"}); err != nil {
		t.Fatal(err)
	}
	res = clitest.Run(t, senv, "", "restore", run, "--to", env.QueueRef(rec), "--canary", "2", "--verify-for", "3s", "--verify-poll", "500ms", "--yes", "-o", "json")
	sum.Canary = nil
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil {
		t.Fatalf("restore --canary: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 0 || sum.Canary == nil || !sum.Canary.Pass || sum.Moved != 2 || !strings.Contains(res.Stderr, "watching "+recDLQ) {
		t.Fatalf("restore --canary 2 to a recovery queue: exit %d, moved %d, canary %+v\n%s", res.Code, sum.Moved, sum.Canary, res.Stderr)
	}
	if got := clitest.ReadyOf(t, env, rec); got != 2 {
		t.Errorf("the recovery queue holds %d, want the 2 canary copies", got)
	}

	// Refused before anything is sent: a queue without a dead-letter
	// exchange, and an exchange whose queues dead-letter to different
	// queues.
	plain := names.DLQ + ".plain"
	if _, err := ch.QueueDeclare(plain, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	res = clitest.Run(t, senv, "", "restore", run, "--to", env.QueueRef(plain), "--canary", "2", "--yes")
	if res.Code != 2 || !strings.Contains(res.Stderr, "has no dead-letter exchange") || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
		t.Errorf("restore --canary to a queue without a DLX: exit %d, want 2 and one sentence\n%s", res.Code, res.Stderr)
	}
	if got := clitest.ReadyOf(t, env, plain); got != 0 {
		t.Errorf("the refused restore sent %d", got)
	}
	fan := names.DLQ + ".fan"
	if err := ch.ExchangeDeclare(fan, "fanout", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{rec, names.Orders} {
		if err := ch.QueueBind(q, "", fan, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	res = clitest.Run(t, senv, "", "restore", run, "--to", strings.TrimSuffix(env.URL, "/")+"/%2f/?exchange="+fan+"&routing_key=k", "--canary", "2", "--yes")
	if res.Code != 2 || !strings.Contains(res.Stderr, "dead-letter to different queues") {
		t.Errorf("restore --canary to an exchange with two dead-letter queues: exit %d\n%s", res.Code, res.Stderr)
	}
	if strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Errorf("the password appears in the output")
	}
}

// TestAMQPLogsRefused: --logs (CloudWatch Logs by SQS message id) on a
// command that moves messages out of a RabbitMQ DLQ is refused in one
// sentence naming why and the fix, exit 2, the DLQ unchanged; restore has
// no --logs on any broker (its records carry what was known when they were
// archived).
func TestAMQPLogsRefused(t *testing.T) {
	const n = 5
	senv := testenv.Require(t)
	env, names, _ := clitest.BulkRabbit(t, n)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	t.Setenv(testenv.EnvAMQPManagementURL, env.ManagementURL)
	bucket := clitest.Bucket(t, senv, "rl")
	for _, args := range [][]string{
		{"redrive", env.QueueRef(names.DLQ), "--to", "source", "--logs", "/aws/lambda/orders", "--yes"},
		{"archive", env.QueueRef(names.DLQ), "--to", "s3://" + bucket + "/dlq", "--delete", "--logs", "/aws/lambda/orders", "--yes"},
	} {
		res := clitest.Run(t, senv, "", args...)
		msg := strings.TrimSpace(res.Stderr)
		if res.Code != 2 || !strings.Contains(msg, "--logs needs a broker whose message ids and send times find the consumer's CloudWatch Logs lines (Amazon SQS); RabbitMQ records why a message died in x-death") ||
			!strings.Contains(msg, "drop --logs") || strings.Contains(msg, "\n") {
			t.Errorf("%s --logs: exit %d, want 2 and one sentence naming why and the fix:\n%s", args[0], res.Code, res.Stderr)
		}
		if got := clitest.ReadyOf(t, env, names.DLQ); got != n {
			t.Fatalf("%s --logs changed the DLQ: %d ready, want %d", args[0], got, n)
		}
	}
	res := clitest.Run(t, senv, "", "restore", "s3://"+bucket+"/dlq/", "--to", env.QueueRef(names.Orders), "--logs", "/aws/lambda/orders", "--yes")
	if res.Code != 2 || !strings.Contains(res.Stderr, "unknown flag: --logs") {
		t.Errorf("restore --logs: exit %d, want 2 (unknown flag)\n%s", res.Code, res.Stderr)
	}
}
