package health

import (
	"testing"
	"time"
)

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
