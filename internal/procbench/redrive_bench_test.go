package procbench_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// BenchmarkProcessRedriveVsBareLoop runs the built dlqctl binary
// (`redrive DLQ --to DEST --yes --concurrency W -o json`) and the bare
// receive→send→delete loop (./bareloop, W workers, 1 s long polls, each
// worker ends at its first empty receive) as subprocesses, side by side, on
// DLQCTL_BENCH_N messages (default 20,000; ~200-byte bodies, three message
// attributes). Each combination of added latency (DLQCTL_BENCH_LATENCIES,
// default 0,20ms: faultproxy delays every SQS call of both programs) and
// workers (DLQCTL_BENCH_WORKERS, default 8,32) runs in the order bare,
// dlqctl, dlqctl, bare (ABBA), each phase on fresh queues seeded straight
// to the emulator (not through the proxy) and dropped afterwards, because
// local-aws-sqs slows down with every message it holds. After each phase
// the DLQ must be empty and DEST must hold N.
//
// Reported per combination: msgs/s of each (mean of its two runs, wall
// time of the process including start-up and shutdown), the ratio
// dlqctl/bare (issue 11 asks ≥ 0.9), peak RSS (ru_maxrss) of each, wall
// seconds, and tail seconds (last DeleteMessageBatch answered → process
// exit), the cost of deciding that the queue is drained.
//
//	DLQCTL_BENCH_N=2000 go test -run '^$' -bench ProcessRedriveVsBareLoop -benchtime 1x -timeout 60m ./internal/procbench/
func BenchmarkProcessRedriveVsBareLoop(b *testing.B) {
	env := testenv.Require(b)
	dlqctl := dlqctlBinary(b)
	bare, launch := benchTools(b)
	n := envInt("DLQCTL_BENCH_N", 20_000)
	var lats []time.Duration
	for _, s := range envList("DLQCTL_BENCH_LATENCIES", "0,20ms") {
		if s == "0" {
			s = "0s"
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("DLQCTL_BENCH_LATENCIES: %v", err)
		}
		lats = append(lats, d)
	}
	var workers []int
	for _, s := range envList("DLQCTL_BENCH_WORKERS", "8,32") {
		w, err := strconv.Atoi(s)
		if err != nil || w < 1 {
			b.Fatalf("DLQCTL_BENCH_WORKERS: bad %q", s)
		}
		workers = append(workers, w)
	}
	for _, lat := range lats {
		for _, w := range workers {
			b.Run(fmt.Sprintf("latency=%dms/workers=%d", lat.Milliseconds(), w), func(b *testing.B) {
				benchRedrivePair(b, env, dlqctl, bare, launch, n, lat, w)
			})
		}
	}
}

// side is one of the two programs compared.
type side struct {
	name string
	// per run: msgs/s over the process's wall time; msgs/s from its first
	// SQS call to its last delete; wall, CPU (user+system), start-up
	// (process start → first SQS call) and tail (last delete answered →
	// process exit) seconds
	rates, steady, walls, cpus, ups, tails []float64
	rss                                    float64
	calls                                  map[string]int // summed over its runs
	runs                                   int
}

func benchRedrivePair(b *testing.B, env testenv.Env, dlqctl, bare, launch string, n int, lat time.Duration, workers int) {
	api := env.SQS(b)
	rec, err := newRecorder(env.SQSEndpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	var faults []faultproxy.Fault
	if lat > 0 {
		// Action "" matches every call: network latency on every SQS
		// request (half before the server acts, half before the answer).
		faults = append(faults, faultproxy.Fault{Kind: faultproxy.Latency, Delay: lat})
	}
	px, err := faultproxy.New(rec.URL, faults...)
	if err != nil {
		b.Fatal(err)
	}
	defer px.Close()
	child := env
	child.SQSEndpoint = px.URL // SQS through the proxy; S3 stays direct
	environ := child.Environ()
	stateDir := b.TempDir()

	sides := map[string]*side{
		"dlqctl": {name: "dlqctl", calls: map[string]int{}},
		"bare":   {name: "bare", calls: map[string]int{}},
	}
	phase := func(which string) {
		b.StopTimer()
		s := sides[which]
		dlqName, dlqURL, dropDLQ := newQueue(b, api, "pbdlq")
		destName, destURL, dropDest := newQueue(b, api, "pbdst")
		seedQueue(b, api, dlqURL, n)
		rec.reset()
		b.StartTimer()
		var r procResult
		switch which {
		case "bare":
			r = runProc(b, launch, environ, bare, "loop", "-from", dlqURL, "-to", destURL, "-workers", strconv.Itoa(workers), "-wait", "1s")
		default:
			r = runProc(b, launch, environ, dlqctl, "redrive", dlqName, "--to", destName, "--yes",
				"--concurrency", strconv.Itoa(workers), "-o", "json", "--state-dir", stateDir)
		}
		b.StopTimer()
		seen := rec.reset()
		r.mustSucceed(b, which)
		expectCounts(b, api, which, dlqURL, destURL, n)
		if seen.Calls["ReceiveMessage"] == 0 || seen.Calls["DeleteMessageBatch"] == 0 {
			b.Fatalf("%s: its SQS calls did not go through the proxy (saw %v)", which, seen.Calls)
		}
		s.runs++
		s.rates = append(s.rates, float64(n)/r.Wall)
		s.walls = append(s.walls, r.Wall)
		s.rss = max(s.rss, r.PeakRSSMB)
		s.cpus = append(s.cpus, r.CPU)
		s.steady = append(s.steady, float64(n)/seen.LastDelete.Sub(seen.First).Seconds())
		s.tails = append(s.tails, r.End.Sub(seen.LastDelete).Seconds())
		s.ups = append(s.ups, seen.First.Sub(r.Start).Seconds())
		for k, v := range seen.Calls {
			s.calls[k] += v
		}
		dropDLQ()
		dropDest()
	}
	for i := 0; i < b.N; i++ {
		for _, which := range []string{"bare", "dlqctl", "dlqctl", "bare"} {
			phase(which)
		}
	}
	d, l := sides["dlqctl"], sides["bare"]
	ratio := mean(d.rates) / mean(l.rates)
	b.ReportMetric(mean(d.rates), "dlqctl-msgs/s")
	b.ReportMetric(mean(l.rates), "bare-msgs/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(d.rss, "dlqctl-RSS-MB")
	b.ReportMetric(l.rss, "bare-RSS-MB")
	b.ReportMetric(mean(d.walls), "dlqctl-wall-s")
	b.ReportMetric(mean(l.walls), "bare-wall-s")
	b.ReportMetric(mean(d.tails), "dlqctl-tail-s")
	b.ReportMetric(mean(l.tails), "bare-tail-s")
	b.ReportMetric(mean(d.cpus), "dlqctl-cpu-s")
	b.ReportMetric(mean(l.cpus), "bare-cpu-s")
	steadyRatio := mean(d.steady) / mean(l.steady)
	b.ReportMetric(steadyRatio, "steady-ratio")
	b.Logf("%d msgs, +%v/call, %d workers, ABBA: ratio %.2f (first call → last delete: %.2f)", n, lat, workers, ratio, steadyRatio)
	for _, s := range []*side{d, l} {
		b.Logf("  %-6s %5.0f msgs/s %s, wall %s s = start-up %s + work + tail %s; steady %s msgs/s; CPU %s s; peak RSS %.0f MB",
			s.name, mean(s.rates), fmtAll("%.0f", s.rates), fmtAll("%.1f", s.walls), fmtAll("%.2f", s.ups), fmtAll("%.2f", s.tails),
			fmtAll("%.0f", s.steady), fmtAll("%.1f", s.cpus), s.rss)
	}
	b.Logf("SQS calls per run: dlqctl %s | bare %s", perRun(d), perRun(l))
}

// perRun formats a side's call counts divided by its number of runs.
func perRun(s *side) string {
	keys := make([]string, 0, len(s.calls))
	for k := range s.calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, s.calls[k]/max(s.runs, 1))
	}
	return strings.Join(parts, " ")
}
