package health

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkEvaluate audits a region of 1000 source/DLQ pairs (2000 queues)
// with the configuration checks (no API calls).
func BenchmarkEvaluate(b *testing.B) {
	g := NewGraph()
	for i := range 1000 {
		g.Add(q(fmt.Sprintf("svc%04d-dlq", i), "MessageRetentionPeriod", "86400"), true)
		g.Add(q(fmt.Sprintf("svc%04d", i), "RedrivePolicy", policy(fmt.Sprintf("svc%04d-dlq", i), 1+i%20)), true)
	}
	g.Link()
	b.ReportAllocs()
	for b.Loop() {
		fs, _ := Evaluate(g, Config{InvestigationWindow: DefaultInvestigationWindow})
		if len(fs) == 0 {
			b.Fatal("no findings")
		}
	}
}

// BenchmarkGrowthRate picks the base reading from a full 500-entry history.
func BenchmarkGrowthRate(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hist := make([]Reading, historyMaxCount)
	for i := range hist {
		hist[i] = rd(t0.Add(time.Duration(i)*time.Minute), i)
	}
	now := rd(t0.Add(time.Duration(len(hist))*time.Minute), len(hist)+10)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := GrowthRate(hist, now, 5*time.Minute, 150*time.Second); !ok {
			b.Fatal("no rate")
		}
	}
}
