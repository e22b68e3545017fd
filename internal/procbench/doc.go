// Package procbench holds the whole-process benchmarks: they run the built
// dlqctl binary as a subprocess against the local stack (scripts/stack.sh)
// and compare it with a bare receive→send→delete loop (./bareloop), and
// measure the peak RSS of redrive, archive and restore at two queue sizes.
// Everything is in the _test.go files; run
//
//	go test -run '^$' -bench Process -benchtime 1x -timeout 60m ./internal/procbench/
//
// Knobs (environment):
//
//	DLQCTL_BENCH_N            messages per redrive-vs-loop phase (default 20000)
//	DLQCTL_BENCH_LATENCIES    added per-call latencies, e.g. "0,20ms" (default)
//	DLQCTL_BENCH_WORKERS      worker counts, e.g. "8,32" (default)
//	DLQCTL_BENCH_RSS_SMALL    small size of BenchmarkProcessRSS (default 10000)
//	DLQCTL_BENCH_RSS_BIG      big size of BenchmarkProcessRSS (default 80000)
//	DLQCTL_BENCH_BIN          benchmark this dlqctl binary instead of building
//	                          the working tree (e.g. a build of another commit)
package procbench
