package health

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestHealthCommandsOnAMissingQueueExit2OnEveryBroker: check and watch go
// one path for every broker, so a queue or topic that does not exist is
// the same failure everywhere: exit 2 (check could not look, nothing
// changed), one line naming it, no credentials. A Kafka topic's audit too;
// and a flag the broker cannot honour is refused naming the broker.
func TestHealthCommandsOnAMissingQueueExit2OnEveryBroker(t *testing.T) {
	env := testenv.Require(t)
	rabbit := testenv.RequireRabbitMQ(t)
	t.Setenv(testenv.EnvAMQPManagementURL, rabbit.ManagementURL)
	kafkaBrokers := testenv.RequireKafka(t)
	missing := strings.ToLower(testenv.UniqueName(t, "gone"))

	for _, c := range []struct {
		broker string
		env    testenv.Env
		ref    string
		extra  [][]string
	}{
		{"SQS", env, missing, nil},
		{"RabbitMQ", testenv.Env{}, rabbit.QueueRef(missing), nil},
		{"Kafka", testenv.Env{}, "kafka://" + kafkaBrokers + "/" + missing, [][]string{{"audit"}}},
	} {
		runs := append([][]string{{"check"}, {"watch", "--count", "1"}}, c.extra...)
		for _, r := range runs {
			args := append([]string{r[0], c.ref}, r[1:]...)
			res := clitest.Run(t, c.env, "", args...)
			if res.Code != 2 || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 || !strings.Contains(res.Stderr, missing) {
				t.Errorf("%s: %s of a missing queue: exit %d, stderr %q; want exit 2 and one line naming it", c.broker, r[0], res.Code, res.Stderr)
			}
			if res.Stdout != "" {
				t.Errorf("%s: %s of a missing queue printed %q", c.broker, r[0], res.Stdout)
			}
			if strings.Contains(res.Stderr, rabbit.Password) {
				t.Errorf("%s: %s printed the RabbitMQ password", c.broker, r[0])
			}
		}
	}

	// --visibility is a lease's; brokers that hold no lease refuse it by
	// name (on a RabbitMQ queue that exists: its type decides how it holds).
	ch := clitest.OpenTestChannel(t, rabbit)
	present := missing + "-here"
	if _, err := ch.QueueDeclare(present, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(present, false, false, false) })
	for broker, ref := range map[string]string{"RabbitMQ": rabbit.QueueRef(present), "Kafka": "kafka://" + kafkaBrokers + "/" + missing} {
		res := clitest.Run(t, testenv.Env{}, "", "check", ref, "--max-age", "1h", "--visibility", "10s")
		if res.Code != 2 || !strings.Contains(res.Stderr, "--visibility needs a broker that holds messages with a visibility timeout") || !strings.Contains(res.Stderr, "; "+broker+" holds") {
			t.Errorf("%s: check --visibility: exit %d, stderr %q; want exit 2 naming %s", broker, res.Code, res.Stderr, broker)
		}
	}
}
