package ui

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/finding"
)

// namedEndpoint is an endpoint that is not itself an auditor (an SQS
// queue): only its name is read here.
type namedEndpoint struct {
	broker.Endpoint
	name string
}

func (e namedEndpoint) Name() string { return e.name }

type fixedAuditor struct {
	findings []finding.Finding
	err      error
}

func (a fixedAuditor) Audit(context.Context, broker.AuditOptions) (broker.AuditResult, error) {
	return broker.AuditResult{Findings: a.findings}, a.err
}

// TestLiveAuditShowsEveryAuditorsWarnings: an SQS queue has two auditors
// (its queue settings, and its Lambda/SNS/EventBridge origins). The DLQ
// screen shows the warnings of both that concern the queue, and says when
// one of them failed. (It showed none when there were two.)
func TestLiveAuditShowsEveryAuditorsWarnings(t *testing.T) {
	done := 0
	b := NewLive(Sources{Auditors: func(context.Context, string) ([]broker.Auditor, func(), error) {
		return []broker.Auditor{
			fixedAuditor{findings: []finding.Finding{{Severity: finding.SevWarn, Queue: "orders-dlq", Problem: "retention shorter than the source's"}}},
			fixedAuditor{findings: []finding.Finding{
				{Severity: finding.SevWarn, Queue: "orders-fn", Related: "orders-dlq", Problem: "the function retries nothing"},
				{Severity: finding.SevInfo, Queue: "orders-dlq", Problem: "no tags"},
			}},
			fixedAuditor{err: errors.New("access denied")},
		}, func() { done++ }, nil
	}}, LiveOptions{})
	got := b.audit(context.Background(), "https://sqs/orders-dlq", namedEndpoint{name: "orders-dlq"})
	want := []string{"audit: access denied", "retention shorter than the source's", "the function retries nothing"}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	if done != 1 {
		t.Fatalf("what the auditors opened was released %d times, want once", done)
	}
}
