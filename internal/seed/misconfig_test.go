package seed_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

func TestMisconfiguredQueuesCarryTheirMistakes(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	prefix := testenv.UniqueName(t, "mis")
	m, err := seed.Misconfigured(t.Context(), c, seed.MisconfigOptions{Prefix: prefix, Expiring: 4})
	if m != nil {
		t.Cleanup(func() { _ = m.DeleteQueues(context.Background(), c) })
	}
	if err != nil {
		t.Fatal(err)
	}
	attrs := func(name string) map[string]string {
		t.Helper()
		u, err := c.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("queue %s: %v", name, err)
		}
		out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}

	// The deleted DLQ is really gone while its source still points at it.
	var rp struct{ DeadLetterTargetArn string }
	if err := json.Unmarshal([]byte(attrs(prefix + "-missing-src")["RedrivePolicy"]), &rp); err != nil || rp.DeadLetterTargetArn == "" {
		t.Fatalf("missing-src has no RedrivePolicy: %v", err)
	}
	if _, err := c.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(prefix + "-gone-dlq")}); err == nil {
		t.Fatalf("%s-gone-dlq still exists", prefix)
	}
	if a := attrs(prefix + "-deny-dlq"); a["RedriveAllowPolicy"] == "" {
		t.Errorf("deny-dlq has no RedriveAllowPolicy: %v", a)
	}
	if a := attrs(prefix + "-self"); !json.Valid([]byte(a["RedrivePolicy"])) || a["QueueArn"] == "" {
		t.Errorf("self has no RedrivePolicy: %v", a)
	}
	exp := attrs(prefix + "-expiring-dlq")
	if exp["MessageRetentionPeriod"] != "3600" || exp["ApproximateNumberOfMessages"] != "4" {
		t.Errorf("expiring DLQ: retention %s, %s messages; want 3600 and 4", exp["MessageRetentionPeriod"], exp["ApproximateNumberOfMessages"])
	}
	if plain := attrs(prefix + "-plaintext"); plain["SqsManagedSseEnabled"] != "false" {
		t.Errorf("plaintext queue is encrypted: %v", plain)
	}
	if len(m.Clean) != 4 || m.Clean[1].RetentionSeconds != 14*24*3600 || m.Clean[0].MaxReceiveCount != 5 {
		t.Errorf("clean pairs: %+v", m.Clean)
	}
	// Every expected finding names a queue that exists.
	names := map[string]bool{}
	for _, q := range m.Queues {
		names[q.Name] = true
	}
	for _, e := range m.Expected() {
		if !names[e.Queue] {
			t.Errorf("expected finding %s on %s, which was not created", e.Check, e.Queue)
		}
	}
}
