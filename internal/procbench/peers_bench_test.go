package procbench_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// BenchmarkProcessSharedRedrive measures what several dlqctl processes on
// one DLQ move together (docs/scale.md): for each process count P in
// DLQCTL_BENCH_PEERS (default 1,2,4) it seeds DLQCTL_BENCH_N messages
// (default 20,000) straight to the emulator, starts P `dlqctl redrive DLQ
// --to DEST --rate-share i/P --concurrency W --yes -o json` processes at
// once (W from DLQCTL_BENCH_WORKERS' first value, default 8), each with
// its own --state-dir, and waits for all of them. DLQCTL_BENCH_PEER_LATENCY
// (e.g. 20ms; default none) adds that latency to every SQS call of the
// processes (internal/faultproxy), as AWS's round trips do: one process is
// then bound by round trips, and several add up until the emulator's CPU
// is the limit. Every process must exit
// 0, their summaries must add up to N moved, the DLQ must be empty and DEST
// hold exactly N.
//
// Reported per P: msgs/s of the group (N over the wall time from the first
// start to the last exit), the CPU seconds of all processes together, and
// the largest peak RSS. On the 2-core machines of this project the
// emulator (one Node process) shares the cores with the dlqctl processes,
// so the curve says more about the emulator than about SQS: see the
// caveats in docs/scale.md.
//
//	go test -run '^$' -bench ProcessSharedRedrive -benchtime 1x -timeout 60m ./internal/procbench/
func BenchmarkProcessSharedRedrive(b *testing.B) {
	env := testenv.Require(b)
	dlqctl := dlqctlBinary(b)
	_, launch := benchTools(b)
	n := envInt("DLQCTL_BENCH_N", 20_000)
	workers, err := strconv.Atoi(envList("DLQCTL_BENCH_WORKERS", "8")[0])
	if err != nil || workers < 1 {
		b.Fatalf("DLQCTL_BENCH_WORKERS: %v", envList("DLQCTL_BENCH_WORKERS", "8"))
	}
	var lat time.Duration
	if v := envList("DLQCTL_BENCH_PEER_LATENCY", "0s")[0]; v != "0" {
		if lat, err = time.ParseDuration(v); err != nil {
			b.Fatalf("DLQCTL_BENCH_PEER_LATENCY: %v", err)
		}
	}
	for _, s := range envList("DLQCTL_BENCH_PEERS", "1,2,4") {
		p, err := strconv.Atoi(s)
		if err != nil || p < 1 {
			b.Fatalf("DLQCTL_BENCH_PEERS: bad %q", s)
		}
		b.Run(fmt.Sprintf("latency=%dms/workers=%d/processes=%d", lat.Milliseconds(), workers, p), func(b *testing.B) {
			benchPeers(b, env, dlqctl, launch, n, p, workers, lat)
		})
	}
}

func benchPeers(b *testing.B, env testenv.Env, dlqctl, launch string, n, peers, workers int, lat time.Duration) {
	api := env.SQS(b)
	child := env
	if lat > 0 {
		px, err := faultproxy.New(env.SQSEndpoint, faultproxy.Fault{Kind: faultproxy.Latency, Delay: lat})
		if err != nil {
			b.Fatal(err)
		}
		defer px.Close()
		child.SQSEndpoint = px.URL // the processes' SQS calls; seeding and checks go direct
	}
	environ := child.Environ()
	var rates, cpus, rss []float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dlqName, dlqURL, dropDLQ := newQueue(b, api, "ppdlq")
		destName, destURL, dropDest := newQueue(b, api, "ppdst")
		seedQueue(b, api, dlqURL, n)
		states := make([]string, peers)
		for k := range states {
			states[k] = b.TempDir()
		}
		b.StartTimer()
		start := time.Now()
		results := make([]procResult, peers)
		var wg sync.WaitGroup
		for k := range peers {
			args := []string{"redrive", dlqName, "--to", destName, "--yes", "--concurrency", strconv.Itoa(workers), "-o", "json", "--state-dir", states[k]}
			if peers > 1 { // a process alone runs as before --rate-share existed (DLQCTL_BENCH_BIN may be older)
				args = append(args, "--rate-share", fmt.Sprintf("%d/%d", k+1, peers))
			}
			wg.Go(func() { results[k] = runProc(b, launch, environ, append([]string{dlqctl}, args...)...) })
		}
		wg.Wait()
		wall := time.Since(start).Seconds()
		b.StopTimer()
		moved, cpu, peak := 0, 0.0, 0.0
		for k, r := range results {
			r.mustSucceed(b, fmt.Sprintf("process %d/%d", k+1, peers))
			var s struct {
				Moved int `json:"moved"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
				b.Fatalf("process %d/%d: summary: %v", k+1, peers, err)
			}
			moved += s.Moved
			cpu += r.CPU
			peak = max(peak, r.PeakRSSMB)
		}
		if moved != n {
			b.Fatalf("%d processes moved %d in all, want %d", peers, moved, n)
		}
		expectCounts(b, api, fmt.Sprintf("%d processes", peers), dlqURL, destURL, n)
		rates = append(rates, float64(n)/wall)
		cpus = append(cpus, cpu)
		rss = append(rss, peak)
		dropDLQ()
		dropDest()
	}
	b.ReportMetric(mean(rates), "msgs/s")
	b.ReportMetric(mean(cpus), "cpu-s")
	b.ReportMetric(maxOf(rss), "peak-RSS-MB")
	b.Logf("%d msgs, +%v/call, %d process(es) × %d workers: %s msgs/s (group, wall), CPU %s s (all processes), peak RSS %.0f MB per process",
		n, lat, peers, workers, fmtAll("%.0f", rates), fmtAll("%.1f", cpus), maxOf(rss))
}
