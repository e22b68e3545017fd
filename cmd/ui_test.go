package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// TestUIMessageScreenIsClassifyExplain: the message screen shows the body
// indented, the explanation `classify --explain` prints (secrets masked)
// and the queue `redrive --to source` sends the message to.
func TestUIMessageScreenIsClassifyExplain(t *testing.T) {
	be := &uiBackend{rules: classify.Builtin(), redactor: inspect.NewRedactor(nil)}
	rec := record.Record{MessageID: "m-1", Body: `{"original_payload":{"eventType":"OrderCreated","payload":{"order":"o-1","password":"hunter2"}},"failure_reason":"timeout after 3000ms calling inventory-db","failure_type":"DatabaseTimeout"}`,
		System: record.System{SourceQueueARN: "arn:aws:sqs:us-east-1:000000000000:orders"}}
	d := be.Describe(&rec)
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

// TestUIPassesGlobalFlagsToChildRuns: the global flags given reach the
// child command lines; -o, --yes, --no-color and -v are the UI's own.
func TestUIPassesGlobalFlagsToChildRuns(t *testing.T) {
	global := pflag.NewFlagSet("g", pflag.ContinueOnError)
	global.String("state-dir", "", "")
	global.String("endpoint-url", "", "")
	global.StringP("output", "o", "table", "")
	global.Bool("yes", false, "")
	given := pflag.NewFlagSet("ui", pflag.ContinueOnError)
	given.AddFlagSet(global)
	given.Bool("read-only", false, "")
	if err := given.Parse([]string{"--state-dir", "/s", "--endpoint-url=http://127.0.0.1:1", "-o", "json", "--yes", "--read-only"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(passedGlobalFlags(given, global), " ")
	if got != "--endpoint-url=http://127.0.0.1:1 --state-dir=/s" {
		t.Fatalf("passed %q", got)
	}
}
