package redrive

import (
	"reflect"
	"testing"
)

func TestNativeStepsAndRates(t *testing.T) {
	if got := NativeSteps(0, nil); !reflect.DeepEqual(got, []int{0}) {
		t.Fatalf("no pace: %v, want [0] (the broker's own)", got)
	}
	if got := NativeSteps(50, []float64{5, 20, 100}); !reflect.DeepEqual(got, []int{5, 20, 100}) {
		t.Fatalf("ramp: %v, want the ramp's steps", got)
	}
	if err := NativeRates(500, 100, []float64{5, 500}); err != nil {
		t.Fatalf("whole rates within the limit refused: %v", err)
	}
	for _, c := range []struct {
		rate float64
		ramp []float64
	}{{501, nil}, {2.5, nil}, {0, []float64{5, 600}}, {0, []float64{1.5}}} {
		if err := NativeRates(500, c.rate, c.ramp); err == nil {
			t.Errorf("rate %g ramp %v accepted; the native move takes whole steps up to 500", c.rate, c.ramp)
		}
	}
}

func TestParseShare(t *testing.T) {
	for in, want := range map[string]float64{"": 0, "5%": 0.05, "0.05": 0.05, "5": 0.05, " 100% ": 1} {
		if got, err := ParseShare(in); err != nil || got != want {
			t.Errorf("ParseShare(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "0", "-1%", "150%"} {
		if _, err := ParseShare(in); err == nil {
			t.Errorf("ParseShare(%q) accepted", in)
		}
	}
}
