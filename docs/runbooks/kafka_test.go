package runbooks

import (
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestKafkaRunbook runs kafka-dlt.md against the stack's Kafka server
// (kfake) on a freshly seeded incident and checks that exactly the
// VALIDATION dead letters were replayed, once each, and the rest is still
// pending for dlqctl's group.
func TestKafkaRunbook(t *testing.T) {
	const name = "kafka-dlt.md"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "docs/runbooks/"+name) {
		t.Fatalf("README.md does not link docs/runbooks/%s", name)
	}
	blocks := readRunbook(t, name)
	if len(blocks) == 0 || blocks[0].Kind != "env" {
		t.Fatal("the first sh block must be the env block")
	}
	if p := checkVariables(blocks); len(p) > 0 {
		t.Fatal(strings.Join(p, "\n"))
	}
	env := testenv.Require(t)
	brokers := testenv.RequireKafka(t)
	addr, _ := kafka.ParseAddress("kafka://" + brokers + "/x")
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prefix := strings.ToLower(testenv.UniqueName(t, "rb"))
	res, err := kafkaseed.Seed(t.Context(), cl, kafkaseed.Options{Prefix: prefix, Orders: 120})
	if err != nil {
		t.Fatal(err)
	}
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	adm := kadm.NewClient(cl)

	// What the runbook should replay: the VALIDATION dead letters.
	before, _ := kafka.MakePlan(t.Context(), adm, dlq, "")
	want := map[string]bool{}
	_, err = kafka.Peek(t.Context(), addr.WithTopic(dlq), kafka.Conn{}, before, kafka.PeekOptions{}, func(m *kafka.Message) error {
		if v, _ := m.Header("dlq_reason"); string(v) == "VALIDATION" {
			want[m.ID()] = true
		}
		return nil
	})
	if err != nil || len(want) == 0 {
		t.Fatalf("seeded %d VALIDATION dead letters: %v", len(want), err)
	}

	runRunbook(t, env, name, &incident{vars: map[string]string{
		"BROKERS": brokers, "DLT": dlq, "CONSUMER_GROUP": prefix + "-orders-service",
	}})

	// Exactly the VALIDATION records were replayed, once each.
	srcPlan, _ := kafka.MakePlan(t.Context(), adm, orders, "")
	got := map[string]int{}
	_, err = kafka.Peek(t.Context(), addr.WithTopic(orders), kafka.Conn{}, srcPlan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		if mk := kafka.ReplayMarker(m.Headers); mk != nil {
			got[mk.OriginalID]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records replayed, want the %d VALIDATION dead letters", len(got), len(want))
	}
	for id, n := range got {
		if !want[id] || n != 1 {
			t.Fatalf("%s replayed %d times (VALIDATION: %v)", id, n, want[id])
		}
	}
	after, err := kafka.MakePlan(t.Context(), adm, dlq, "dlqctl-"+dlq)
	if err != nil {
		t.Fatal(err)
	}
	if after.Pending() != int64(res.DeadLetters[dlq]-len(want)) {
		t.Fatalf("%d pending after the runbook, want %d", after.Pending(), res.DeadLetters[dlq]-len(want))
	}
}
