package health

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// DefaultInvestigationWindow is how long a dead-lettered message should
// survive in the DLQ after its source would have expired it.
const DefaultInvestigationWindow = 7 * 24 * time.Hour

// AuditReport is the result of an audit (audit -o json).
type AuditReport struct {
	Queues   []string  `json:"queues"`
	Findings []Finding `json:"findings"`
	Notes    []string  `json:"notes"`
	Tally    Tally     `json:"tally"`
}

// AuditAll runs every auditor (one per vhost, topic or SQS selection) and
// reports their findings as one, most severe first: the same report for
// every broker.
func AuditAll(ctx context.Context, auditors []broker.Auditor, opt broker.AuditOptions) (*AuditReport, error) {
	rep := &AuditReport{Queues: []string{}, Findings: []Finding{}, Notes: []string{}}
	for _, a := range auditors {
		res, err := a.Audit(ctx, opt)
		if err != nil {
			return nil, err
		}
		rep.Queues = append(rep.Queues, res.Audited...)
		rep.Findings = append(rep.Findings, res.Findings...)
		rep.Notes = append(rep.Notes, res.Notes...)
	}
	Sort(rep.Findings)
	rep.Tally = Count(rep.Findings)
	return rep, nil
}

// Sample peeks up to max messages of ep without consuming them (the same
// lease-and-release or peek as `sample`, each held at most hold between
// heartbeats) and returns them: what a broker's audit reads to find
// messages about to expire, handed to the broker package so it needs no
// domain import.
func Sample(ctx context.Context, ep broker.Endpoint, max int, hold time.Duration) ([]record.Record, error) {
	var recs []record.Record
	_, err := inspect.Scan(ctx, ep, inspect.ScanOptions{Max: max, Visibility: hold}, func(m *record.Record, _ any) error {
		recs = append(recs, *m)
		return nil
	})
	return recs, err
}
