package ui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/finding"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// TestUIMessageScreenIsClassifyExplain: the message screen shows the body
// indented, the explanation `classify --explain` prints (secrets masked)
// and the queue `redrive --to source` sends the message to.
func TestUIMessageScreenIsClassifyExplain(t *testing.T) {
	rec := record.Record{MessageID: "m-1", Body: `{"original_payload":{"eventType":"OrderCreated","payload":{"order":"o-1","password":"hunter2"}},"failure_reason":"timeout after 3000ms calling inventory-db","failure_type":"DatabaseTimeout"}`,
		System: record.System{SourceQueueARN: "arn:aws:sqs:us-east-1:000000000000:orders"}}
	d := Describe(&rec, classify.Builtin(), inspect.NewRedactor(nil))
	if !strings.Contains(d.Body, "\n  \"original_payload\": {\n") {
		t.Fatalf("body not pretty-printed:\n%s", d.Body)
	}
	if !strings.Contains(d.Explain, "message m-1") || !strings.Contains(d.Explain, "=> class transient") || !strings.Contains(d.Explain, "confidence:") {
		t.Fatalf("explanation is not classify --explain's:\n%s", d.Explain)
	}
	if strings.Contains(d.Body+d.Explain, "hunter2") {
		t.Fatalf("the message screen shows a secret:\n%s\n%s", d.Body, d.Explain)
	}
	if d.Origin != "orders" {
		t.Fatalf("origin %q, want orders", d.Origin)
	}
}

func TestIsScopeAndBrokerName(t *testing.T) {
	for ref, want := range map[string]bool{
		"amqp://u@h:5672/%2f/":           true,
		"amqp://u@h:5672/%2f/orders.dlq": false,
		"kafka://k1:9092":                true,
		"kafka://k1:9092/":               true,
		"kafka://k1:9092/orders.DLT":     false,
		"orders-dlq":                     false,
	} {
		if got := IsScope(ref); got != want {
			t.Errorf("IsScope(%q) = %v, want %v", ref, got, want)
		}
	}
	for ref, want := range map[string]string{"amqp://h/%2f/q": "rabbitmq", "kafka://k:9092/t": "kafka", "orders-dlq": "sqs"} {
		if got := BrokerName(ref); got != want {
			t.Errorf("BrokerName(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestListedDLQs(t *testing.T) {
	type row struct {
		Name     string   `json:"name"`
		Ref      string   `json:"ref,omitempty"`
		URL      string   `json:"url,omitempty"`
		Warnings []string `json:"warnings,omitempty"`
	}
	got := ListedDLQs("", []any{row{Name: "orders-dlq", URL: "http://sqs/1/orders-dlq", Warnings: []string{"no alarm"}}},
		[]string{"orders-dlq: retention 4d", "orders-dlq: no alarm", "payments-dlq: retention 1d"})
	if len(got) != 1 || got[0].Ref != "http://sqs/1/orders-dlq" || got[0].Broker != "sqs" || !slices.Equal(got[0].Warnings, []string{"no alarm", "retention 4d"}) {
		t.Errorf("SQS listing: %+v", got)
	}
	got = ListedDLQs("kafka://k1:9092,k2:9092/", []any{row{Name: "orders.DLT"}}, nil)
	if len(got) != 1 || got[0].Ref != "kafka://k1:9092,k2:9092/orders.DLT" || got[0].Broker != "kafka" {
		t.Errorf("Kafka listing: %+v", got)
	}
	got = ListedDLQs("amqp://h/%2f/", []any{row{Name: "orders.dlq", Ref: "amqp://h/%2f/orders.dlq"}}, nil)
	if len(got) != 1 || got[0].Ref != "amqp://h/%2f/orders.dlq" || got[0].Broker != "rabbitmq" {
		t.Errorf("RabbitMQ listing: %+v", got)
	}
}

// TestRunChild: the events of the child's NDJSON reach the UI in order,
// the summary and the exit code come back, and so does its stderr.
func TestRunChild(t *testing.T) {
	var types []string
	res := RunChild(context.Background(), "/bin/sh", []string{"-c",
		`echo '{"type":"progress","done":1}'; echo 'not json'; echo '{"type":"summary","moved":3}'; echo 'it broke' >&2; exit 4`},
		func(ev RunEvent) { types = append(types, ev.Type) })
	if res.Code != 4 || res.Err != nil {
		t.Fatalf("code %d, err %v; want 4, nil", res.Code, res.Err)
	}
	if !slices.Equal(types, []string{"progress", "summary"}) {
		t.Errorf("events %q", types)
	}
	if res.Summary["moved"] != float64(3) {
		t.Errorf("summary %v", res.Summary)
	}
	if strings.TrimSpace(res.Stderr) != "it broke" {
		t.Errorf("stderr %q", res.Stderr)
	}
}

func TestAuditWarnings(t *testing.T) {
	fs := []finding.Finding{
		{Severity: finding.SevError, Queue: "orders-dlq", Problem: "retention shorter than the source's"},
		{Severity: finding.SevInfo, Queue: "orders-dlq", Problem: "no tags"},
		{Severity: finding.SevWarn, Queue: "orders", Related: "orders-dlq", Problem: "maxReceiveCount 1"},
		{Severity: finding.SevWarn, Queue: "payments-dlq", Problem: "another queue's"},
	}
	got := AuditWarnings(fs, "orders-dlq")
	if want := []string{"retention shorter than the source's", "maxReceiveCount 1"}; !slices.Equal(got, want) {
		t.Fatalf("AuditWarnings = %q, want %q", got, want)
	}
}
