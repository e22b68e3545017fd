package triage

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// Messages grouped as (no failure context) get a line saying where their
// broker keeps their failure: an SQS consumer's logs (--logs), RabbitMQ's
// dead-lettering reason (--by reason); nothing when the command already
// asked for it, on Kafka, or when every message has a failure.
func TestNoFailureHintSaysWhereTheFailureIs(t *testing.T) {
	sqs := broker.Capabilities{Label: "Amazon SQS", Broker: broker.SQS, LogLookup: true}
	amqp := broker.Capabilities{Label: "RabbitMQ", Broker: broker.AMQP, DeathReasons: "rejected, expired, maxlen, delivery_limit"}
	kafka := broker.Capabilities{Broker: broker.Kafka}
	groups := []*inspect.Group{{Values: []string{"orders", inspect.NoFailure}, Count: 7}, {Values: []string{"orders", "timeout"}, Count: 2}, {Values: []string{"payments", inspect.NoFailure}, Count: 3}}
	by := []string{"source", "error"}
	for _, c := range []struct {
		name     string
		caps     broker.Capabilities
		by       []string
		groups   []*inspect.Group
		withLogs bool
		want     string
	}{
		{"sqs", sqs, by, groups, false, "10 message(s) carry no failure context (Amazon SQS records no reason): --logs LOG_GROUP"},
		{"sqs with --logs", sqs, by, groups, true, ""},
		{"rabbitmq", amqp, by, groups, false, "10 message(s) carry no failure context from their consumer: --by reason groups them by why RabbitMQ dead-lettered them (rejected, expired, maxlen, delivery_limit)"},
		{"rabbitmq with --by reason", amqp, []string{"reason", "error"}, []*inspect.Group{{Values: []string{"expired", inspect.NoFailure}, Count: 1}}, false, ""},
		{"kafka", kafka, by, groups, false, ""},
		{"no error key", sqs, []string{"source", "class"}, groups, false, ""},
		{"every message has a failure", sqs, by, groups[1:2], false, ""},
	} {
		got := noFailureHint(c.caps, c.by, c.groups, c.withLogs)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to start with %q", c.name, got, c.want)
		}
	}
}
