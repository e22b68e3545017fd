package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// TestCanaryWindowCoversAPoisonMessagesReturn: without --verify-for the
// canary watches as long as a message that always fails needs to be
// dead-lettered again (maxReceiveCount × the destination's visibility
// timeout, + a margin); a shorter --verify-for is kept but warned about;
// a destination that does not dead-letter into the watched DLQ keeps the
// flag's default.
func TestCanaryWindowCoversAPoisonMessagesReturn(t *testing.T) {
	dlq := &sqs.Queue{Name: "orders-dlq", ARN: "arn:aws:sqs:us-east-1:123456789012:orders-dlq"}
	src := &sqs.Queue{Name: "orders", Attrs: map[string]string{
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"5"}`,
		"VisibilityTimeout": "120",
	}}
	other := &sqs.Queue{Name: "billing", Attrs: map[string]string{
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:billing-dlq","maxReceiveCount":10}`,
		"VisibilityTimeout": "900",
	}}
	run := func(args []string, dests ...*sqs.Queue) (time.Duration, string) {
		var errOut bytes.Buffer
		f := &Factory{IO: output.Test(nil, &bytes.Buffer{}, &errOut, false)}
		var c CanaryFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		c.AddFlags(fs, "canary")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c.canaryWindow(f, dests, dlq), errOut.String()
	}

	if got, msg := run(nil, src, other); got != 5*120*time.Second+canaryMargin || !strings.Contains(msg, "maxReceiveCount 5") {
		t.Fatalf("default window %s (%q); want 5 × 2m + 30s, explained", got, msg)
	}
	if got, msg := run([]string{"--verify-for", "1m"}, src); got != time.Minute || !strings.Contains(msg, "a PASS proves less") {
		t.Fatalf("--verify-for 1m: window %s, stderr %q; want 1m and a warning", got, msg)
	}
	if got, msg := run([]string{"--verify-for", "20m"}, src); got != 20*time.Minute || msg != "" {
		t.Fatalf("--verify-for 20m: window %s, stderr %q; want 20m, no warning", got, msg)
	}
	if got, _ := run(nil, other); got != 2*time.Minute {
		t.Fatalf("a destination that dead-letters elsewhere: window %s; want the 2m default", got)
	}
	if got, _ := run(nil, &sqs.Queue{Name: "recovery"}); got != 2*time.Minute {
		t.Fatalf("a destination without a redrive policy: window %s; want the 2m default", got)
	}
}
