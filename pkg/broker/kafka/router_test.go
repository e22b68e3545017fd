package kafka_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

func TestRouterRefusesMissingDestinations(t *testing.T) {
	c := newCluster(t)
	r := kafka.NewRouter(c.adm, "")
	m := &kafka.Message{Topic: "dlt", Origin: kafka.Origin{Partition: -1, Offset: -1}}
	if _, err := r.Route(context.Background(), m); err == nil || !strings.Contains(err.Error(), "--to") {
		t.Fatalf("no origin: %v", err)
	}
	m.Origin.Topic = "no-such-topic-" + strings.ToLower(t.Name())
	if _, err := r.Route(context.Background(), m); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing topic: %v", err)
	}
}
