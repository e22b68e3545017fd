package health

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// exitCase is one way a broker cannot be opened.
type exitCase struct {
	broker, failure string
	// ref is the queue or topic; flags go before the command's own.
	ref   string
	flags []string
	env   map[string]string
	// secrets must appear nowhere in the output.
	secrets []string
}

// runExit runs dlqctl in this process and returns its exit code, stdout
// and stderr.
func runExit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := cmd.Run(ctx, output.Test(strings.NewReader(""), &out, &errOut, false), args)
	return code, out.String(), errOut.String()
}

// TestOneExitCodeTableForEveryBroker: the same failure to open a queue —
// an endpoint nobody listens on, credentials the broker refuses, a queue
// or topic that does not exist — ends every command the same way on SQS,
// RabbitMQ and Kafka: exit 2 (nothing changed), one sentence on stderr
// naming the problem and what to check, nothing on stdout, no password or
// secret key in the output. A cron monitor reads one table.
func TestOneExitCodeTableForEveryBroker(t *testing.T) {
	senv := testenv.Require(t)
	renv := testenv.RequireRabbitMQ(t)
	kafkaBrokers := testenv.RequireKafka(t)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	for _, kv := range senv.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v)
		}
	}
	t.Setenv(testenv.EnvAMQPManagementURL, renv.ManagementURL)
	t.Setenv("DLQCTL_AMQP_USERNAME", "")
	t.Setenv("DLQCTL_AMQP_PASSWORD", "")

	// SQS: AWS refuses credentials it does not know; the emulators accept
	// any, so a fault proxy in front of the emulator answers as AWS does.
	badCreds, err := faultproxy.New(senv.SQSEndpoint, faultproxy.Fault{Kind: faultproxy.BadCredentials})
	if err != nil {
		t.Fatal(err)
	}
	defer badCreds.Close()
	const awsSecret = "wrong-aws-secret-key-5501"
	// Kafka: a private kfake that wants a SASL login.
	const kafkaRight, kafkaWrong = "right-kafka-pw-5502", "wrong-kafka-pw-5503"
	saslBrokers := testenv.StartKfake(t, "--sasl", "PLAIN:bob:"+kafkaRight)
	const rabbitWrong = "wrong-rabbit-pw-5504"
	missing := testenv.UniqueName(t, "missing")

	cases := []exitCase{
		{broker: "SQS", failure: "unreachable", ref: "orders-dlq", flags: []string{"--sqs-endpoint-url", "http://127.0.0.1:1"}},
		{broker: "SQS", failure: "credentials", ref: "orders-dlq", flags: []string{"--sqs-endpoint-url", badCreds.URL},
			env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEWRONG", "AWS_SECRET_ACCESS_KEY": awsSecret}, secrets: []string{awsSecret}},
		{broker: "SQS", failure: "missing", ref: missing},
		{broker: "RabbitMQ", failure: "unreachable", ref: "amqp://127.0.0.1:1/%2f/orders.dlq"},
		{broker: "RabbitMQ", failure: "credentials", ref: "amqp://" + renv.Username + ":" + rabbitWrong + "@" + renv.HostPort + "/%2f/orders.dlq", secrets: []string{rabbitWrong}},
		{broker: "RabbitMQ", failure: "missing", ref: renv.QueueRef(missing), secrets: []string{renv.Password}},
		{broker: "Kafka", failure: "unreachable", ref: "kafka://127.0.0.1:1/orders-dlt"},
		{broker: "Kafka", failure: "credentials", ref: "kafka://" + saslBrokers + "/orders-dlt", flags: []string{"--kafka-sasl", "PLAIN", "--kafka-user", "bob"},
			env: map[string]string{"DLQCTL_KAFKA_PASSWORD": kafkaWrong}, secrets: []string{kafkaWrong, kafkaRight}},
		{broker: "Kafka", failure: "missing", ref: "kafka://" + kafkaBrokers + "/" + missing},
	}
	// What the sentence says, per failure.
	says := map[string][]string{
		"unreachable": {"cannot connect to"},
		"credentials": {"refused", "rejected", "closed the connection during"},
		"missing":     {"does not exist"},
	}
	commands := [][]string{{"sample"}, {"check"}, {"redrive", "--yes"}}
	codes := map[string]map[string]int{} // failure -> broker -> code
	for _, c := range cases {
		t.Run(c.broker+"/"+c.failure, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			for _, command := range commands {
				args := append(append(append([]string{}, c.flags...), command[0], c.ref), command[1:]...)
				code, stdout, stderr := runExit(t, args...)
				msg := strings.TrimSpace(stderr)
				if codes[c.failure] == nil {
					codes[c.failure] = map[string]int{}
				}
				if prev, ok := codes[c.failure][c.broker]; ok && prev != code {
					t.Errorf("%s: exit %d, another command exited %d for the same failure", command[0], code, prev)
				}
				codes[c.failure][c.broker] = code
				if code != errs.ExitUsage {
					t.Errorf("%s %s: exit %d, want 2; stderr: %s", command[0], c.failure, code, msg)
				}
				if stdout != "" {
					t.Errorf("%s: printed on stdout: %q", command[0], stdout)
				}
				if strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "dlqctl: ") || !strings.Contains(msg, "; check") {
					t.Errorf("%s: want one line naming the problem and what to check, got:\n%s", command[0], stderr)
				}
				found := false
				for _, w := range says[c.failure] {
					found = found || strings.Contains(msg, w)
				}
				if !found {
					t.Errorf("%s: %q says none of %q", command[0], msg, says[c.failure])
				}
				for _, s := range c.secrets {
					if strings.Contains(stdout+stderr, s) {
						t.Errorf("%s: the output shows a secret: %s", command[0], msg)
					}
				}
			}
		})
	}
	for failure, byBroker := range codes {
		if len(byBroker) != 3 || byBroker["SQS"] != byBroker["RabbitMQ"] || byBroker["SQS"] != byBroker["Kafka"] {
			t.Errorf("%s: exit codes differ between brokers: %v", failure, byBroker)
		}
	}
}
