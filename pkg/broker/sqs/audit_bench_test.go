package sqs

import (
	"fmt"
	"testing"
)

// BenchmarkEvaluate audits a region of 1000 source/DLQ pairs (2000 queues)
// with the configuration checks (no API calls).
func BenchmarkEvaluate(b *testing.B) {
	g := NewAuditGraph()
	for i := range 1000 {
		g.Add(q(fmt.Sprintf("svc%04d-dlq", i), "MessageRetentionPeriod", "86400"), true)
		g.Add(q(fmt.Sprintf("svc%04d", i), "RedrivePolicy", policy(fmt.Sprintf("svc%04d-dlq", i), 1+i%20)), true)
	}
	g.Link()
	b.ReportAllocs()
	for b.Loop() {
		fs, _ := EvaluateAudit(g, AuditConfig{InvestigationWindow: defaultInvestigationWindow})
		if len(fs) == 0 {
			b.Fatal("no findings")
		}
	}
}
