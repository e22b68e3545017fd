package redrive_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// benchN is the number of messages moved per run (DLQCTL_BENCH_N, default
// 50000; the emulator slows as queues grow, keep it ≤ 100k).
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("DLQCTL_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 50_000
}

const benchConcurrency = 8

// resetPeakRSS clears the process's RSS high-water mark (Linux); peakRSSMB
// reads it.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// benchQueues creates a DLQ holding n messages and an empty destination;
// drop deletes both (the emulator slows down with every message it holds,
// so each phase starts from the same state).
func benchQueues(b *testing.B, api *awssqs.Client, c *sqs.Client, n int) (dlq, dest *sqs.Queue, drop func()) {
	b.Helper()
	body := strings.Repeat("x", 200)
	return benchQueuesWith(b, api, c, n, func(i int) string { return fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, body) })
}

// benchQueuesWith is benchQueues with the DLQ's bodies made by body.
func benchQueuesWith(b *testing.B, api *awssqs.Client, c *sqs.Client, n int, body func(int) string) (dlq, dest *sqs.Queue, drop func()) {
	b.Helper()
	ctx := context.Background()
	mk := func(prefix string) *sqs.Queue {
		name := testenv.UniqueName(b, prefix)
		out, err := api.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			b.Fatal(err)
		}
		q, err := c.Resolve(ctx, aws.ToString(out.QueueUrl))
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	dlq, dest = mk("bdlq"), mk("bdst")
	drop = func() {
		for _, q := range []*sqs.Queue{dlq, dest} {
			_, _ = api.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(q.URL)})
		}
	}
	b.Cleanup(drop)
	if err := seed.FillDLQ(ctx, api, dlq.URL, n, body); err != nil {
		b.Fatal(err)
	}
	return dlq, dest, drop
}

// plainLoop is the baseline: receive → send → delete with the same number
// of workers and no safety (no journal, no lease, no per-entry handling).
func plainLoop(ctx context.Context, api *awssqs.Client, c *sqs.Client, dlq, dest *sqs.Queue, workers int) int64 {
	var moved atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			empty := 0
			for empty < 2 {
				msgs, err := c.Receive(ctx, dlq, 10, 30*time.Second, time.Second)
				if err != nil || len(msgs) == 0 {
					empty++
					continue
				}
				empty = 0
				entries := make([]sqs.SendEntry, len(msgs))
				for i, m := range msgs {
					attrs, _ := sqs.SQSAttributes(m.Attributes)
					entries[i] = sqs.SendEntry{Body: m.Body, Attributes: attrs}
				}
				if _, err := c.SendBatch(ctx, dest, entries); err != nil {
					continue
				}
				if _, err := c.Delete(ctx, dlq, msgs); err == nil {
					moved.Add(int64(len(msgs)))
				}
			}
		}()
	}
	wg.Wait()
	return moved.Load()
}

// BenchmarkRedriveVsPlainLoop moves DLQCTL_BENCH_N messages from a DLQ to a
// recovery queue with a plain receive→send→delete loop and with dlqctl's
// mover (journal with fsync, lease, marker, per-entry handling), both with 8
// workers, in the order loop, dlqctl, dlqctl, loop (ABBA), so that the
// emulator slowing down over a session does not favour either side. It
// reports msgs/s (mean of the two runs of each) and peak RSS of each, and the
// ratio dlqctl/loop (target ≥ 0.9).
func BenchmarkRedriveVsPlainLoop(b *testing.B) {
	env := testenv.Require(b)
	api := env.SQS(b)
	c := sqs.New(api, env.Region)
	n := benchN()
	ctx := context.Background()
	var loopRates, mvRates []float64
	var loopRSS, mvRSS float64
	runLoop := func() {
		b.StopTimer()
		dlq, dest, drop := benchQueues(b, api, c, n)
		resetPeakRSS()
		b.StartTimer()
		start := time.Now()
		moved := plainLoop(ctx, api, c, dlq, dest, benchConcurrency)
		loopRates = append(loopRates, float64(moved)/time.Since(start).Seconds())
		b.StopTimer()
		loopRSS = max(loopRSS, peakRSSMB())
		if moved != int64(n) {
			b.Fatalf("plain loop moved %d of %d", moved, n)
		}
		drop()
	}
	runMover := func() {
		b.StopTimer()
		dlq, dest, drop := benchQueues(b, api, c, n)
		j, err := redrive.CreateJournal(b.TempDir(), redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		resetPeakRSS()
		b.StartTimer()
		start := time.Now()
		src := newQueueSource(c, dlq, 30*time.Second, time.Second)
		res, err := redrive.Run(ctx, src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(dest), Concurrency: benchConcurrency})
		_ = src.Close(ctx)
		mvRates = append(mvRates, float64(res.Moved)/time.Since(start).Seconds())
		b.StopTimer()
		mvRSS = max(mvRSS, peakRSSMB())
		j.Close()
		if err != nil || res.Moved != n {
			b.Fatalf("dlqctl moved %d of %d: %v %v", res.Moved, n, err, res.Errors)
		}
		drop()
	}
	for i := 0; i < b.N; i++ {
		runLoop()
		runMover()
		runMover()
		runLoop()
	}
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	mvRate, loopRate := mean(mvRates), mean(loopRates)
	b.ReportMetric(mvRate, "dlqctl-msgs/s")
	b.ReportMetric(loopRate, "loop-msgs/s")
	b.ReportMetric(mvRate/loopRate, "ratio")
	b.ReportMetric(mvRSS, "dlqctl-peakRSS-MB")
	b.ReportMetric(loopRSS, "loop-peakRSS-MB")
	b.Logf("%d messages, %d workers, order loop-dlqctl-dlqctl-loop: dlqctl %.0f msgs/s %v (peak RSS %.0f MB), plain loop %.0f msgs/s %v (peak RSS %.0f MB), ratio %.2f",
		n, benchConcurrency, mvRate, roundAll(mvRates), mvRSS, loopRate, roundAll(loopRates), loopRSS, mvRate/loopRate)
}

func roundAll(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

// BenchmarkJournalSent measures the journal's hot path: one fsync'd Sent
// call per batch of 10 from 8 concurrent workers (group commit).
func BenchmarkJournalSent(b *testing.B) {
	j, err := redrive.CreateJournal(b.TempDir(), redrive.RunMeta{ID: "bench", Created: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var seq atomic.Int64
	b.SetParallelism(benchConcurrency)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			recs := make([]redrive.SentRecord, 10)
			for i := range recs {
				id := strconv.FormatInt(seq.Add(1), 10)
				recs[i] = redrive.SentRecord{Orig: id, Dest: "https://sqs.example/q", DestID: id, SHA: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
			}
			if err := j.Sent(recs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJournalBatch measures what the write-ahead intent costs the
// journal: per batch of 10 from 8 concurrent workers, "sent" is the sent
// records alone (the journal before issue 32), "intent+sent" an fsynced
// intent line before them (what a batch pays now). Reported as msgs/s.
//
//	go test -run '^$' -bench 'JournalBatch' -benchtime 3s ./pkg/redrive/
func BenchmarkJournalBatch(b *testing.B) {
	for _, intent := range []bool{false, true} {
		name := "sent"
		if intent {
			name = "intent+sent"
		}
		b.Run(name, func(b *testing.B) {
			j, err := redrive.CreateJournal(b.TempDir(), redrive.RunMeta{ID: "bench", Created: time.Now()})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			var seq atomic.Int64
			start := time.Now()
			b.SetParallelism(benchConcurrency)
			b.RunParallel(func(pb *testing.PB) {
				ids := make([]string, 10)
				for pb.Next() {
					recs := make([]redrive.SentRecord, 10)
					for i := range recs {
						id := strconv.FormatInt(seq.Add(1), 10)
						ids[i] = id
						recs[i] = redrive.SentRecord{Orig: id, Dest: "https://sqs.example/q", DestID: id, SHA: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
					}
					if intent {
						if err := j.Intend("q", ids); err != nil {
							b.Fatal(err)
						}
					}
					if err := j.Sent(recs); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(seq.Load())/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
