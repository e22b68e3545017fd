package kafka

import (
	"reflect"
	"testing"
	"time"
)

// TestSpringRetryDelaysReadsDelaysNotIndexes: delay-named retry topics
// (MAIN-retry-1000, MAIN-retry-2000, MAIN-retry-4000-0/-1 when the last
// delay repeats) give their delays; index- or attempt-numbered ones
// (MAIN-retry-0…, MAIN-retry-1…) and a single MAIN-retry give none, and are
// named as retry topics whose delays are unknown; other topics' retry
// topics are ignored.
func TestSpringRetryDelaysReadsDelaysNotIndexes(t *testing.T) {
	names := []string{"pay", "pay-retry-2000", "pay-retry-1000", "pay-retry-4000-0", "pay-retry-4000-1", "pay-dlt", "payroll-retry-9000"}
	delays, unnamed := springRetryDelays(names, "pay")
	want := []retryDelay{{"pay-retry-1000", time.Second}, {"pay-retry-2000", 2 * time.Second}, {"pay-retry-4000-0", 4 * time.Second}, {"pay-retry-4000-1", 4 * time.Second}}
	if !reflect.DeepEqual(delays, want) || len(unnamed) != 0 {
		t.Fatalf("delay-named: %v, unnamed %v; want %v", delays, unnamed, want)
	}
	for _, names := range [][]string{
		{"o-retry-0", "o-retry-1", "o-retry-2"},
		{"o-retry-1", "o-retry-2", "o-retry-3"},
		{"o-retry"},
	} {
		delays, unnamed := springRetryDelays(names, "o")
		if len(delays) != 0 || len(unnamed) != len(names) {
			t.Fatalf("%v: delays %v, unnamed %v; want no delay and every topic named as unknown", names, delays, unnamed)
		}
	}
}
