package procbench_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/benchdata"
	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// BenchmarkProcessTriageFrom measures offline triage as a whole process:
// the built dlqctl reading an NDJSON file of DLQCTL_BENCH_TRIAGE_N
// (default 100,000) real-format records (internal/benchdata: the triage
// corpus's Lambda, EventBridge, SNS, CloudEvents, MassTransit,
// NServiceBus, Spring Kafka and Kafka Connect messages, enriched wrappers
// and generic failures, and the seeded incident's envelopes, attribute
// failures, malformed JSON and text), side by side with jq parsing the same
// file as a reference:
//
//	classify-summary   dlqctl classify --from FILE --summary -o json
//	group              dlqctl group --from FILE --by source,error -o json
//	jq-class           jq -c .class FILE     (skipped when jq is not installed)
//
// Each reports records/s (median wall time of its runs), CPU seconds and
// peak RSS (median and max of its runs); dlqctl's also report its
// records/s relative to jq's (x-jq, measured in the same benchmark run).
// The rss sub-benchmark runs classify --summary at DLQCTL_BENCH_TRIAGE_SMALL
// (20,000) and DLQCTL_BENCH_TRIAGE_BIG (200,000) records and reports the
// peak RSS of each and their ratio (flat memory: near 1). No stack is
// needed. -benchtime Nx runs each command N times (the machines are shared:
// use 3x or more and compare CPU seconds too).
//
//	go test -run '^$' -bench ProcessTriageFrom -benchtime 3x ./internal/procbench/
func BenchmarkProcessTriageFrom(b *testing.B) {
	dlqctl := dlqctlBinary(b)
	_, launch := benchTools(b)
	n := envInt("DLQCTL_BENCH_TRIAGE_N", 100_000)
	file := triageFile(b, n)
	jq, jqErr := exec.LookPath("jq")
	var jqRate float64
	run := func(b *testing.B, name string, argv ...string) float64 {
		var walls, cpus, rss []float64
		for range b.N {
			r := runProc(b, launch, os.Environ(), argv...)
			r.mustSucceed(b, strings.Join(argv, " "))
			walls, cpus, rss = append(walls, r.Wall), append(cpus, r.CPU), append(rss, r.PeakRSSMB)
		}
		rate := float64(n) / median(walls)
		b.ReportMetric(rate, "records/s")
		b.ReportMetric(median(cpus), "CPU-s")
		b.ReportMetric(median(rss), "peakRSS-MB")
		if jqRate > 0 && name != "jq-class" {
			b.ReportMetric(rate/jqRate, "x-jq")
		}
		b.Logf("%s over %d records: %.0f records/s (median of %s s wall), CPU %s s, peak RSS %s MB",
			name, n, rate, fmtAll("%.2f", walls), fmtAll("%.2f", cpus), fmtAll("%.0f", rss))
		return rate
	}
	b.Run("jq-class", func(b *testing.B) {
		if jqErr != nil {
			b.Skip("jq is not installed: no reference")
		}
		jqRate = run(b, "jq-class", jq, "-c", ".class", file)
	})
	b.Run("classify-summary", func(b *testing.B) {
		run(b, "classify-summary", dlqctl, "classify", "--from", file, "--summary", "-o", "json")
	})
	b.Run("group", func(b *testing.B) {
		run(b, "group", dlqctl, "group", "--from", file, "--by", "source,error", "-o", "json")
	})
	b.Run("rss", func(b *testing.B) {
		sizes := []int{envInt("DLQCTL_BENCH_TRIAGE_SMALL", 20_000), envInt("DLQCTL_BENCH_TRIAGE_BIG", 200_000)}
		var peaks []float64
		for _, size := range sizes {
			f := triageFile(b, size)
			var peak float64
			for range b.N {
				r := runProc(b, launch, os.Environ(), dlqctl, "classify", "--from", f, "--summary", "-o", "json")
				r.mustSucceed(b, "classify --summary")
				peak = max(peak, r.PeakRSSMB)
			}
			peaks = append(peaks, peak)
			b.ReportMetric(peak, "peakRSS-MB-"+sizeLabel(size))
		}
		b.ReportMetric(peaks[1]/peaks[0], "RSS-big/small")
		b.Logf("classify --summary peak RSS: %.0f MB at %s records, %.0f MB at %s (×%.2f)",
			peaks[0], sizeLabel(sizes[0]), peaks[1], sizeLabel(sizes[1]), peaks[1]/peaks[0])
	})
}

// triageFile writes n real-format records (internal/benchdata) to a
// temporary NDJSON file, once per size and test process.
func triageFile(b *testing.B, n int) string {
	b.Helper()
	if p, ok := triageFiles[n]; ok {
		return p
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	tpl, err := benchdata.Templates(corpus.Dir(root), now)
	if err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dlqctl-triage-bench")
	if err != nil {
		b.Fatal(err)
	}
	// Kept for the other sub-benchmarks of this process; removed at its end.
	triageCleanup = append(triageCleanup, func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, fmt.Sprintf("records-%d.ndjson", n))
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := benchdata.Write(w, tpl, n, now); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	triageFiles[n] = p
	return p
}

var (
	triageFiles   = map[int]string{}
	triageCleanup []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range triageCleanup {
		c()
	}
	os.Exit(code)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
