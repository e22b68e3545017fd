package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// BenchmarkArchiveBinary archives a queue of n ~1 KiB messages with the
// built dlqctl binary (archive --delete --yes) against the local stack and
// reports messages/s, MiB/s (NDJSON bytes archived) and the peak RSS of the
// dlqctl process. Comparing n=10k with n=50k shows memory does not grow
// with the queue.
//
//	go test -run '^$' -bench ArchiveBinary -benchtime 1x ./pkg/archive/
func BenchmarkArchiveBinary(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchArchive(b, n) })
	}
}

func benchArchive(b *testing.B, n int) {
	env := testenv.Require(b)
	bin := testenv.BuildBinary(b)
	api := env.SQS(b)
	s3c := env.S3(b)
	bucket := newBucket(b, s3c)
	pad := strings.Repeat("p", 700)
	var msgs, mib, rss, secs float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := testenv.UniqueName(b, "bench")
		out, err := api.CreateQueue(b.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			b.Fatal(err)
		}
		if err := seed.FillDLQ(b.Context(), api, aws.ToString(out.QueueUrl), n, func(i int) string {
			return fmt.Sprintf(`{"eventId":"evt-%07d","eventType":"OrderCreated","eventVersion":2,"producer":"orders","payload":{"orderId":"o-%d","note":%q}}`, i, i, pad)
		}); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "archive", name, "--to", "s3://"+bucket+"/bench", "--delete", "--yes", "-o", "json", "--concurrency", "8")
		cmd.Env = env.Environ()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		b.StartTimer()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		hwm := watchHWM(cmd.Process.Pid)
		err = cmd.Wait()
		el := time.Since(start)
		peak := <-hwm
		b.StopTimer()
		if err != nil {
			b.Fatalf("dlqctl archive: %v\n%s", err, stderr.String())
		}
		var sum struct {
			Run struct {
				Totals Totals `json:"totals"`
			} `json:"run"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			b.Fatal(err)
		}
		if sum.Run.Totals.Records != n || sum.Run.Totals.Deleted != n {
			b.Fatalf("archived %d, deleted %d; want %d", sum.Run.Totals.Records, sum.Run.Totals.Deleted, n)
		}
		if peak == 0 {
			b.Fatal("could not read the peak RSS of dlqctl from /proc")
		}
		msgs += float64(n)
		mib += float64(sum.Run.Totals.UncompressedBytes) / (1 << 20)
		secs += el.Seconds()
		rss = max(rss, float64(peak)/1024)
		_, _ = api.DeleteQueue(b.Context(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	}
	b.ReportMetric(msgs/secs, "msgs/s")
	b.ReportMetric(mib/secs, "MiB/s")
	b.ReportMetric(rss, "peak-RSS-MiB")
}

// watchHWM polls the VmHWM (peak RSS, KiB) of pid from /proc until the
// process is gone and sends the highest value seen. The child's own
// ru_maxrss is not usable: Go starts children with a vfork-style clone, and
// Linux carries the parent's high-water mark across exec, so it reports the
// test process's RSS.
func watchHWM(pid int) <-chan int64 {
	ch := make(chan int64, 1)
	go func() {
		var peak int64
		path := fmt.Sprintf("/proc/%d/status", pid)
		for {
			b, err := os.ReadFile(path)
			if err != nil {
				break
			}
			kb := int64(-1)
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "VmHWM:") {
					kb, _ = strconv.ParseInt(strings.Fields(line)[1], 10, 64)
				}
				if strings.HasPrefix(line, "State:") && strings.Contains(line, "zombie") {
					kb = -2
				}
			}
			if kb == -2 {
				break
			}
			peak = max(peak, kb)
			time.Sleep(20 * time.Millisecond)
		}
		ch <- peak
	}()
	return ch
}
