package inspect

import "math"

// Z95 is the normal quantile for a two-sided 95% interval.
const Z95 = 1.959963984540054

// Estimate is a group's estimated total in a queue of which only a sample
// was read: the point estimate and a 95% Wilson score interval, scaled to
// the queue depth.
type Estimate struct {
	Total int `json:"total"`
	Low   int `json:"low"`
	High  int `json:"high"`
	// Of is the queue depth the estimate is scaled to.
	Of int `json:"of"`
	// Confidence is the interval's confidence level (0.95).
	Confidence float64 `json:"confidence"`
}

// Wilson returns the Wilson score interval for k successes in n trials at
// normal quantile z. It behaves well for small n and for k near 0 or n,
// unlike the normal approximation.
func Wilson(k, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	p := float64(k) / float64(n)
	nf := float64(n)
	z2 := z * z
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	return max(0, centre-half), min(1, centre+half)
}

// EstimateTotal scales a group of k messages in a sample of n to a queue of
// depth messages. The interval never goes below what was seen (k) nor above
// what the rest of the queue could hold (depth-(n-k)). It returns nil when
// the estimate would say nothing new: no depth, or the sample is the whole
// queue.
func EstimateTotal(k, n, depth int) *Estimate {
	if n <= 0 || depth <= n || k > n {
		return nil
	}
	lo, hi := Wilson(k, n, Z95)
	e := &Estimate{
		Total:      int(math.Round(float64(k) / float64(n) * float64(depth))),
		Low:        int(math.Floor(lo * float64(depth))),
		High:       int(math.Ceil(hi * float64(depth))),
		Of:         depth,
		Confidence: 0.95,
	}
	ceiling := depth - (n - k)
	e.Low = min(max(e.Low, k), ceiling)
	e.High = max(min(e.High, ceiling), e.Low)
	e.Total = min(max(e.Total, e.Low), e.High)
	return e
}

// AddEstimates sets each group's Estimate when the groups came from a
// sample of n messages of a queue holding depth messages.
func AddEstimates(groups []*Group, n, depth int) {
	for _, g := range groups {
		g.Estimate = EstimateTotal(g.Count, n, depth)
	}
}
