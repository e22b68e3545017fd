package kafka

import (
	"math/rand/v2"
	"testing"
)

// offsetSet must answer as a plain map would, whatever the order of adds
// and removes (a consumer re-reading a partition after a rebalance, a
// selection leaving records out, acks out of order); if it did not, the
// end-of-run account would count a record the caller still holds as lost,
// or miss one.
func TestOffsetSetAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var x offsetSet
		want := map[int64]bool{}
		span := int64(5 + rng.IntN(200))
		for op := 0; op < 2000; op++ {
			o := rng.Int64N(span)
			if round%2 == 0 && op < 1000 {
				o = int64(op) // in order, as a poll hands them out
			}
			if rng.IntN(3) == 0 {
				x.remove(o)
				delete(want, o)
			} else {
				x.add(o)
				want[o] = true
			}
			if op%97 == 0 || op == 1999 {
				for k := int64(-1); k <= max(span, 1000)+1; k++ {
					if x.has(k) != want[k] {
						t.Fatalf("round %d op %d: has(%d) = %v, want %v (ranges %v)", round, op, k, x.has(k), want[k], x.s)
					}
				}
				for i, s := range x.s {
					if s.from >= s.to || i > 0 && x.s[i-1].to >= s.from {
						t.Fatalf("round %d op %d: ranges not sorted, disjoint and apart: %v", round, op, x.s)
					}
				}
			}
		}
	}
	var none *offsetSet
	if none.has(0) {
		t.Fatal("a nil set has nothing")
	}
}
