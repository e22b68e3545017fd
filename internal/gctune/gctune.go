// Package gctune lets the garbage collector run less often while the live
// heap is small: offline triage (classify/group --from) keeps a few
// batches of records in flight and allocates its whole input's worth of
// short-lived values, so with the default GOGC=100 it collects a ~10 MB
// heap every few MB of input and marking is a sixth of its CPU.
//
// While a tuner runs, after each collection GOGC is set so the next one
// starts when the heap reaches the target size: GOGC = 100*(target-live)/live,
// never below the GOGC in effect before (the heap never grows beyond what
// it would have without the tuner, or beyond the target) and at most
// maxPercent. A run that keeps much (a listing of every record) therefore
// collects as it would without it. GOGC or GOMEMLIMIT in the environment
// turn it off: the user's setting wins.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds GOGC: beyond it the collections saved no longer pay
// for the memory, and the heap goal a collection sets before the tuner
// has seen its live heap (the finalizer runs after it, later on a busy
// machine) stays within 5× the live heap.
const maxPercent = 400

var (
	mu      sync.Mutex
	active  *tuner
	liveKey = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
)

type tuner struct {
	target uint64
	base   int // GOGC before Start
	cur    int
}

// Start tunes GOGC for a heap of up to target bytes until the returned
// function is called (it restores the GOGC in effect before). Only one
// tuner runs at a time: Start while one runs changes nothing.
func Start(target uint64) (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	if active != nil {
		return func() {}
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 {
		return func() {} // collection is off: nothing to tune
	}
	t := &tuner{target: target, base: base, cur: base}
	active = t
	t.tuneLocked()
	arm(t)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if active == t {
			active = nil
			debug.SetGCPercent(t.base)
		}
	}
}

// sentinel is garbage whose finalizer runs after each collection (big
// enough not to share a tiny-allocator block, whose finalizers may never
// run).
type sentinel struct{ _ [64]byte }

func arm(t *tuner) {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		mu.Lock()
		defer mu.Unlock()
		if active != t {
			return // stopped: let the chain end
		}
		t.tuneLocked()
		arm(t)
	})
}

// tuneLocked sets GOGC from the live heap of the last collection.
func (t *tuner) tuneLocked() {
	metrics.Read(liveKey)
	live := uint64(0)
	if liveKey[0].Value.Kind() == metrics.KindUint64 {
		live = liveKey[0].Value.Uint64()
	}
	p := Percent(t.target, live, t.base)
	if p != t.cur {
		debug.SetGCPercent(p)
		t.cur = p
	}
}

// Percent is the GOGC that starts the next collection at a heap of target
// bytes after one that left live bytes: at least base, at most maxPercent
// (unless base is more), and base when the live heap is half the target or
// more.
func Percent(target, live uint64, base int) int {
	live = max(live, 1<<20) // before the first collection: unknown
	if live >= target {
		return base
	}
	p := 100 * (target - live) / live
	return int(max(min(p, maxPercent), uint64(base)))
}
