// Package procbench holds the whole-process benchmarks: they run the built
// dlqctl binary as a subprocess against the local stack (scripts/stack.sh)
// and compare it with a bare receive→send→delete loop (./bareloop), measure
// the peak RSS of archive, restore and redrive at two queue sizes, and the
// throughput of 1, 2 and 4 processes sharing one DLQ (--rate-share,
// docs/scale.md).
// BenchmarkProcessTriageFrom needs no stack: it times classify --from and
// group --from over a file of real-format records next to jq parsing the
// same file, and their peak RSS at two file sizes.
// Programs run under ./launch, which reports their own ru_maxrss and CPU
// time. Everything else is in the _test.go files.
//
//	go test -run '^$' -bench ProcessRedriveVsBareLoop -benchtime 1x -timeout 60m ./internal/procbench/   (~6 min)
//	go test -run '^$' -bench ProcessRSS -benchtime 1x -timeout 60m ./internal/procbench/                 (~8 min)
//	go test -run '^$' -bench ProcessSharedRedrive -benchtime 1x -timeout 60m ./internal/procbench/       (~4 min)
//	go test -run '^$' -bench ProcessTriageFrom -benchtime 3x ./internal/procbench/                       (~2 min, no stack)
//	make bench BENCH=Process                                                                              (all four)
//
// The machines are small and shared, so wall-clock rates are noisy: the
// order bare, dlqctl, dlqctl, bare (ABBA) cancels drift, not noise; use
// -benchtime 2x or more to compare two builds, and look at CPU seconds,
// which noise barely moves. To benchmark another commit's binary, build it
// elsewhere and point DLQCTL_BENCH_BIN at it:
//
//	git archive COMMIT | tar -x -C /tmp/before && (cd /tmp/before && go build -o dlqctl .)
//	DLQCTL_BENCH_BIN=/tmp/before/dlqctl go test -run '^$' -bench Process …
//
// Knobs (environment):
//
//	DLQCTL_BENCH_N            messages per redrive-vs-loop phase (default 20000)
//	DLQCTL_BENCH_LATENCIES    added per-call latencies, e.g. "0,20ms" (default)
//	DLQCTL_BENCH_WORKERS      worker counts, e.g. "8,32" (default)
//	DLQCTL_BENCH_RSS_SMALL    small size of BenchmarkProcessRSS (default 10000)
//	DLQCTL_BENCH_RSS_BIG      big size of BenchmarkProcessRSS (default 80000)
//	DLQCTL_BENCH_BIN          benchmark this dlqctl binary instead of building
//	                          the working tree
//	DLQCTL_BENCH_PEERS        process counts of BenchmarkProcessSharedRedrive
//	                          (default 1,2,4; it uses DLQCTL_BENCH_N and the
//	                          first of DLQCTL_BENCH_WORKERS, default 8)
//	DLQCTL_BENCH_PEER_LATENCY per-call latency added to its processes' SQS
//	                          calls (default none; docs/scale.md uses 20ms)
//	DLQCTL_BENCH_TRIAGE_N     records of BenchmarkProcessTriageFrom (default 100000)
//	DLQCTL_BENCH_TRIAGE_SMALL, DLQCTL_BENCH_TRIAGE_BIG
//	                          its peak-RSS sizes (default 20000, 200000)
package procbench
