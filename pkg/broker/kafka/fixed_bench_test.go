package kafka_test

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkRedriveFixedCost measures what a run costs apart from its
// records: each side redrives its own fresh 10-record DLT (the same
// setup as BenchmarkRedrive), and reports CPU ms and wall ms per run.
// The difference between cli and bare is the command's fixed work (flags,
// plan, destination check, run journal, the group's join and the pending
// count read back).
//
//	go test -run '^$' -bench 'BenchmarkRedriveFixedCost' -benchtime 20x ./pkg/broker/kafka
func BenchmarkRedriveFixedCost(b *testing.B) {
	const n = 10
	c := newCluster(b)
	sides := []string{"cli", "bare"}
	cpus, walls := map[string][]float64{}, map[string][]float64{}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for k := range sides {
			s := sides[(i+k)%len(sides)]
			dlt, dest := fillDLT(b, c, n)
			runtime.GC()
			t0, c0 := time.Now(), processCPU()
			b.StartTimer()
			switch s {
			case "cli":
				cliRedrive(b, c, dlt)
			default:
				bareLoop(b, c, dlt, dest, n)
			}
			b.StopTimer()
			walls[s] = append(walls[s], time.Since(t0).Seconds()*1e3)
			cpus[s] = append(cpus[s], (processCPU()-c0).Seconds()*1e3)
			dropTopics(c, dlt, dest)
		}
	}
	for _, s := range sides {
		b.ReportMetric(median(cpus[s]), s+"-cpu-ms/run")
		b.ReportMetric(median(walls[s]), s+"-wall-ms/run")
	}
}
