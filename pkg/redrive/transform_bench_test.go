package redrive_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// BenchmarkRedriveTransform measures what --transform costs a redrive on
// the local stack (local-aws-sqs, versitygw): DLQCTL_BENCH_N messages with
// a string amount moved by the mover with 8 workers, three ways — plain
// (exact copies), transform (the expression '.json.amount |= tonumber'
// applied, originals not kept: the cost of jq alone), and
// transform+originals (what `redrive --transform --archive-originals`
// does: every batch's originals in a verified S3 part, journaled, before
// its send) — in the order plain, transform, transform+originals,
// transform+originals, transform, plain, so a session slowing down favours
// none. It reports msgs/s of each (mean of its two runs) and the ratios to
// plain.
//
//	DLQCTL_BENCH_N=5000 go test -run '^$' -bench RedriveTransform -benchtime 1x ./pkg/redrive/
func BenchmarkRedriveTransform(b *testing.B) {
	env := testenv.Require(b)
	api := env.SQS(b)
	c := sqs.New(api, env.Region)
	n := benchN()
	ctx := context.Background()
	bucket := testenv.BucketName(b, "bxf")
	if _, err := env.S3(b).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 200)
	body := func(i int) string { return fmt.Sprintf(`{"i":%d,"amount":"%d.50","pad":"%s"}`, i, i%1000, pad) }
	rates := map[string][]float64{}
	run := func(mode string) {
		b.StopTimer()
		dlq, dest, drop := benchQueuesWith(b, api, c, n, body)
		j, err := redrive.CreateJournal(b.TempDir(), redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		opt := redrive.Options{Publisher: sqs.NewPublisher(c), Journal: j, Router: sqs.ToQueue(dest), Concurrency: benchConcurrency}
		if mode != "plain" {
			xf, err := transform.Compile(".json.amount |= tonumber", transform.Limits{MaxMessageBytes: sqs.MaxMessageBytes, MaxAttributes: sqs.MaxAttributes})
			if err != nil {
				b.Fatal(err)
			}
			opt.Transform = xf
		}
		if mode == "transform+originals" {
			opt.Originals = archive.NewOriginals(env.S3(b), archive.OriginalsOptions{Dest: archive.Location{Bucket: bucket, Key: "orig"},
				Queue: archive.QueueInfo{Name: dlq.Name, URL: dlq.URL, ARN: dlq.ARN}})
		}
		b.StartTimer()
		start := time.Now()
		src := newQueueSource(c, dlq, 30*time.Second, time.Second)
		opt.SourceCaps = capsOf(src)
		res, err := redrive.Run(ctx, src, opt)
		_ = src.Close(ctx)
		rates[mode] = append(rates[mode], float64(res.Moved)/time.Since(start).Seconds())
		b.StopTimer()
		j.Close()
		if err != nil || res.Moved != n {
			b.Fatalf("%s moved %d of %d: %v %v", mode, res.Moved, n, err, res.Errors)
		}
		if mode != "plain" && (res.Transform == nil || res.Transform.Changed != n) {
			b.Fatalf("%s: transform %+v", mode, res.Transform)
		}
		if mode == "transform+originals" && (res.Transform.Originals == nil || res.Transform.Originals.Records != n) {
			b.Fatalf("originals %+v", res.Transform.Originals)
		}
		drop()
	}
	for i := 0; i < b.N; i++ {
		for _, m := range []string{"plain", "transform", "transform+originals", "transform+originals", "transform", "plain"} {
			run(m)
		}
	}
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	p, x, xo := mean(rates["plain"]), mean(rates["transform"]), mean(rates["transform+originals"])
	b.ReportMetric(p, "plain-msgs/s")
	b.ReportMetric(x, "transform-msgs/s")
	b.ReportMetric(xo, "transform+originals-msgs/s")
	b.ReportMetric(x/p, "transform-ratio")
	b.ReportMetric(xo/p, "originals-ratio")
	b.Logf("%d messages, %d workers: plain %.0f msgs/s %v, transform %.0f %v (%.2f×), transform+originals %.0f %v (%.2f×)",
		n, benchConcurrency, p, roundAll(rates["plain"]), x, roundAll(rates["transform"]), x/p, xo, roundAll(rates["transform+originals"]), xo/p)
}
