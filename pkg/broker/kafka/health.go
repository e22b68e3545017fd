package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// ReadDepth is Depth for check and watch: the records pending for dlqctl's
// group (end − committed, summed over partitions; transaction markers take
// offsets too, so it is an upper bound). With oldest it also reads the
// first pending record of each partition: the oldest pending age, exact,
// without a sample.
func (e *Endpoint) ReadDepth(ctx context.Context, oldest bool) (broker.DepthReading, error) {
	r := broker.DepthReading{Terms: broker.DepthTerms{Ready: "pending"}}
	var parts int
	if oldest {
		ti, err := e.Info(ctx)
		if err != nil {
			return broker.DepthReading{}, err
		}
		r.Depth = broker.Depth{Ready: ti.Pending, Exact: true}
		r.Oldest, r.OldestKnown = time.Duration(ti.OldestPendingAge)*time.Second, true
		r.OldestDetail = "the first pending record of each partition (exact)"
		parts = len(ti.Partitions)
	} else {
		p, err := e.Plan(ctx)
		if err != nil {
			return broker.DepthReading{}, err
		}
		r.Depth = broker.Depth{Ready: p.Pending(), Exact: true}
		parts = len(p.Partitions)
	}
	r.Note = fmt.Sprintf("for group %s over %d partition(s) (end − committed; transaction markers make it an upper bound)", e.group, parts)
	return r, nil
}

var (
	_ broker.DepthReader = (*Endpoint)(nil)
	_ broker.Auditor     = (*Endpoint)(nil)
)

// Audit checks the topic (a dead-letter topic, or a retry topic of a
// chain) against the rules in docs/kafka.md (package func Audit).
func (e *Endpoint) Audit(ctx context.Context, opt broker.AuditOptions) (broker.AuditResult, error) {
	fs, notes, err := Audit(ctx, e, AuditOptions{InvestigationWindow: opt.InvestigationWindow, Sample: opt.Sample})
	if err != nil {
		return broker.AuditResult{}, err // Audit's errors are wrapped already
	}
	return broker.AuditResult{Audited: []string{e.String()}, Findings: fs, Notes: notes}, nil
}
