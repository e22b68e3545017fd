package sqs

import (
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// TestPoisonReturnIsMaxReceiveCountTimesVisibility: the window of a DLQ is
// as long as a message that always fails needs to be dead-lettered again by
// the destination whose redrive policy targets it (maxReceiveCount × its
// visibility timeout, + the margin); destinations that dead-letter
// elsewhere or not at all do not count, and when none counts the window
// says so.
func TestPoisonReturnIsMaxReceiveCountTimesVisibility(t *testing.T) {
	dlq := &Queue{Name: "orders-dlq", ARN: "arn:aws:sqs:us-east-1:123456789012:orders-dlq"}
	src := &Queue{Name: "orders", Attrs: map[string]string{
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"5"}`,
		"VisibilityTimeout": "120",
	}}
	other := &Queue{Name: "billing", Attrs: map[string]string{
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:billing-dlq","maxReceiveCount":10}`,
		"VisibilityTimeout": "900",
	}}
	w := PoisonReturn([]*Queue{src, other}, dlq)
	if !w.Known || !w.Returns || w.Need != 5*120*time.Second+broker.CanaryMargin || !strings.Contains(w.Reason, "maxReceiveCount 5 × visibility timeout 2m0s of orders") {
		t.Fatalf("window %+v; want 5 × 2m + 30s from orders, explained", w)
	}
	for _, dests := range [][]*Queue{{other}, {{Name: "recovery"}}, nil} {
		w := PoisonReturn(dests, dlq)
		if !w.Known || w.Returns || w.Need != 0 || !strings.Contains(w.Reason, "dead-letters into orders-dlq") {
			t.Fatalf("destinations %v: window %+v; want known, no return, and the reason", dests, w)
		}
	}
}
