package inspect

import (
	"math"
	"testing"
)

func TestWilsonKnownValues(t *testing.T) {
	// Reference values (e.g. statsmodels proportion_confint(method="wilson")).
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{50, 100, 0.403832, 0.596168},
		{0, 10, 0, 0.277533},
		{10, 10, 0.722467, 1},
		{1, 1000, 0.000177, 0.005638},
	}
	for _, c := range cases {
		lo, hi := Wilson(c.k, c.n, Z95)
		if math.Abs(lo-c.lo) > 1e-5 || math.Abs(hi-c.hi) > 1e-5 {
			t.Errorf("Wilson(%d,%d) = %.6f..%.6f, want %.6f..%.6f", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestEstimateTotal(t *testing.T) {
	e := EstimateTotal(250, 1000, 40000)
	if e == nil || e.Total != 10000 || e.Of != 40000 || e.Confidence != 0.95 {
		t.Fatalf("estimate %+v", e)
	}
	if e.Low >= 10000 || e.High <= 10000 || e.Low < 8900 || e.High > 11200 {
		t.Errorf("interval %d..%d around 10000 is implausible", e.Low, e.High)
	}
	// Never below what was seen, never above what the rest could hold.
	e = EstimateTotal(3, 10, 12)
	if e.Low < 3 || e.High > 5 {
		t.Errorf("small queue: %+v; want within 3..5", e)
	}
	if EstimateTotal(5, 100, 100) != nil || EstimateTotal(5, 100, 0) != nil {
		t.Error("an estimate for a complete read or an unknown depth")
	}
}
