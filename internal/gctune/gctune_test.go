package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		target, live uint64
		base, want   int
	}{
		{32 << 20, 8 << 20, 100, 300},   // the next collection at 32 MB
		{64 << 20, 8 << 20, 100, 400},   // capped
		{64 << 20, 0, 100, 400},         // before the first collection: capped
		{64 << 20, 32 << 20, 100, 100},  // half the target: as without the tuner
		{64 << 20, 900 << 20, 100, 100}, // a big live heap: never more often than before
		{64 << 20, 16 << 20, 500, 500},  // never below the GOGC in effect
		{64 << 20, 2 << 20, 2000, 2000},
	} {
		if got := Percent(c.target, c.live, c.base); got != c.want {
			t.Errorf("Percent(%d MB, %d MB, %d) = %d, want %d", c.target>>20, c.live>>20, c.base, got, c.want)
		}
	}
}

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestStartRaisesGOGCAndStopRestoresIt: with a small live heap the tuner
// raises GOGC after a collection; stop puts back the value before; a
// second Start while one runs changes nothing.
func TestStartRaisesGOGCAndStopRestoresIt(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop := Start(256 << 20)
	if noop := Start(1 << 20); gcPercent() <= 100 {
		t.Fatalf("GOGC %d after Start with a small live heap, want more than 100", gcPercent())
	} else {
		noop()
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() <= 100 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p := gcPercent(); p <= 100 || p > maxPercent {
		t.Fatalf("GOGC %d after collections with a small live heap, want 101..%d", p, maxPercent)
	}
	stop()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GOGC %d after stop, want 100 (the value before Start)", p)
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if p := gcPercent(); p != 100 {
		t.Fatalf("GOGC %d after a collection past stop, want 100", p)
	}
}

// TestUserSettingWins: GOGC or GOMEMLIMIT in the environment turn the
// tuner off.
func TestUserSettingWins(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			before := debug.SetGCPercent(100)
			defer debug.SetGCPercent(before)
			stop := Start(256 << 20)
			defer stop()
			runtime.GC()
			if p := gcPercent(); p != 100 {
				t.Fatalf("GOGC %d with %s set, want it left alone (100)", p, env)
			}
		})
	}
}
