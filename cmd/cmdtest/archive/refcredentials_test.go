package archive

import (
	"os"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestReferencePasswordsAreNeverPrinted: a queue reference carrying a
// password, given to every command in every place a queue goes (the queue
// argument, --to, audit's list), is answered with one sentence on stderr
// and exit 2 (exit 1 where the broker is supported and its server cannot be
// reached: RabbitMQ references carry their credentials) — and neither stderr nor stdout (table, json, ndjson) nor the
// state dir ever contains the password.
func TestReferencePasswordsAreNeverPrinted(t *testing.T) {
	env := testenv.Require(t)
	const pw = "Pa55w0rd-do-not-print"
	refs := map[string]string{
		"amqp://guest:" + pw + "@127.0.0.1:5672/%2f/orders-dlq":   "RabbitMQ",
		"amqps://ops:" + pw + "@rabbit.internal/prod/orders-dlq":  "RabbitMQ",
		"kafka://alice:" + pw + "@127.0.0.1:9092/orders-dlt":      "Kafka",
		"kafka://127.0.0.1:9092/orders-dlt?sasl_password=" + pw:   "Kafka",
		"redis://u:" + pw + "@127.0.0.1:6379/0":                   "unknown scheme",
		"http://u:" + pw + "@127.0.0.1:1/000000000000/orders-dlq": "carries credentials",
		"u:" + pw + "@127.0.0.1/orders-dlq":                       "not a queue reference",
		"sqs://u:" + pw + "@orders-dlq":                           "sqs://QUEUE-NAME",
	}
	manifest := oldArchive + "/queue=fx-orders-dlq/dt=2026-12-02/run=20261202T010243Z-89abb2e2/_manifest.json"
	for ref, says := range refs {
		for _, args := range [][]string{
			{"sample", ref},
			{"group", ref, "--by", "source"},
			{"classify", ref},
			{"redrive", ref, "--to", "source", "--yes"},
			{"redrive", ref, "--to", "source", "--dry-run"},
			{"redrive", "orders-dlq", "--to", ref, "--yes"},
			{"archive", ref, "--to", "s3://bucket/x", "--delete", "--yes"},
			{"restore", manifest, "--to", ref, "--yes"},
			{"check", ref, "--max-visible", "0"},
			{"watch", ref, "--count", "1"},
			{"audit", ref},
			{"doctor", ref},
			{"doctor", "orders-dlq", "--to", ref},
		} {
			for _, format := range []string{"table", "json", "ndjson"} {
				state := t.TempDir()
				all := append([]string{"--state-dir", state, "-o", format}, args...)
				r := clitest.Run(t, env, "", all...)
				name := strings.Join(args[:1], " ") + " " + ref[:strings.Index(ref, ":")] + " -o " + format
				if strings.Contains(r.Stdout+r.Stderr, pw) {
					t.Errorf("%s printed the password:\nstdout %s\nstderr %s", name, r.Stdout, r.Stderr)
				}
				// doctor checks a RabbitMQ reference: an unreachable node is
				// a failed check (exit 3) in its report.
				doctorRabbit := says == "RabbitMQ" && args[0] == "doctor" && args[1] == ref
				if doctorRabbit {
					if r.Code != 3 || !strings.Contains(r.Stdout, "rabbitmq connection") {
						t.Errorf("%s: exit %d, want 3 with a failed rabbitmq connection check:\n%s", name, r.Code, r.Stdout)
					}
				} else if r.Code != 2 && !(says == "RabbitMQ" && r.Code == 1) {
					t.Errorf("%s: exit %d, want 2 (stderr %q)", name, r.Code, r.Stderr)
				}
				// A RabbitMQ destination is reached only after the SQS DLQ
				// (which does not exist here) is resolved: that error names the DLQ.
				if !strings.Contains(r.Stderr, says) && !(says == "RabbitMQ" && args[1] == "orders-dlq") && !doctorRabbit {
					t.Errorf("%s: stderr %q does not say %q", name, r.Stderr, says)
				}
				if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n > 0 {
					t.Errorf("%s: %d lines on stderr, want one sentence: %q", name, n+1, r.Stderr)
				}
				if entries, _ := os.ReadDir(state); len(entries) > 0 {
					t.Errorf("%s wrote to the state dir: %v", name, entries)
				}
			}
		}
	}
}
