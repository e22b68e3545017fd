package procbench_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// BenchmarkProcessRSS measures the peak RSS (ru_maxrss) of the built dlqctl
// binary for archive, restore and redrive at two sizes,
// DLQCTL_BENCH_RSS_SMALL (default 10,000) and DLQCTL_BENCH_RSS_BIG (default
// 80,000 messages; local-aws-sqs answers OverLimit near 120k visible, and
// slows as queues grow), and reports RSS(big)/RSS(small) per command (issue
// 11 asks ≤ 1.25). Per size, one seeded DLQ goes through the three commands
// in a chain, against the local stack directly (no proxy):
//
//	archive DLQ --to s3://BUCKET/PREFIX --delete --yes    (DLQ → S3, DLQ empty)
//	restore s3://BUCKET/…/manifest.json --to Q --yes      (S3 → Q, Q holds n)
//	redrive Q --to DEST --yes                             (Q → DEST, DEST holds n)
//
// each with its default concurrency and -o json, counts checked after each.
//
//	go test -run '^$' -bench ProcessRSS -benchtime 1x -timeout 60m ./internal/procbench/
func BenchmarkProcessRSS(b *testing.B) {
	env := testenv.Require(b)
	dlqctl := dlqctlBinary(b)
	_, launch := benchTools(b)
	sizes := []int{envInt("DLQCTL_BENCH_RSS_SMALL", 10_000), envInt("DLQCTL_BENCH_RSS_BIG", 80_000)}
	api := env.SQS(b)
	s3c := env.S3(b)
	ctx := context.Background()
	bucket := testenv.BucketName(b, "pbrss")
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { emptyBucket(s3c, bucket) })
	environ := env.Environ()
	stateDir := b.TempDir()
	cmds := []string{"archive", "restore", "redrive"}
	rss := map[string][]float64{}  // command → peak MB per size
	rate := map[string][]float64{} // command → msgs/s per size

	for i := 0; i < b.N; i++ {
		for si, n := range sizes {
			b.StopTimer()
			dlqName, dlqURL, dropDLQ := newQueue(b, api, "pbrdlq")
			qName, qURL, dropQ := newQueue(b, api, "pbrq")
			destName, destURL, dropDest := newQueue(b, api, "pbrdst")
			seedQueue(b, api, dlqURL, n)
			prefix := fmt.Sprintf("run%d-n%d", i, n)
			b.StartTimer()

			record := func(cmd string, r procResult) {
				b.Helper()
				r.mustSucceed(b, fmt.Sprintf("dlqctl %s (%d messages)", cmd, n))
				if i == 0 {
					rss[cmd] = append(rss[cmd], r.PeakRSSMB)
					rate[cmd] = append(rate[cmd], float64(n)/r.Wall)
				} else {
					rss[cmd][si] = max(rss[cmd][si], r.PeakRSSMB)
				}
			}

			r := runProc(b, launch, environ, dlqctl, "archive", dlqName, "--to", "s3://"+bucket+"/"+prefix,
				"--delete", "--yes", "-o", "json", "--state-dir", stateDir)
			record("archive", r)
			if c := counts(b, api, dlqURL); c.total() != 0 {
				b.Fatalf("archive --delete of %d messages left %+v in the DLQ", n, c)
			}
			manifest := findManifest(b, s3c, bucket, prefix)

			r = runProc(b, launch, environ, dlqctl, "restore", "s3://"+bucket+"/"+manifest, "--to", qName,
				"--yes", "-o", "json", "--state-dir", stateDir)
			record("restore", r)
			if c := counts(b, api, qURL); c.Visible != n || c.total() != n {
				b.Fatalf("restore of %d messages: the queue holds %+v", n, c)
			}

			r = runProc(b, launch, environ, dlqctl, "redrive", qName, "--to", destName,
				"--yes", "-o", "json", "--state-dir", stateDir)
			record("redrive", r)
			expectCounts(b, api, "redrive", qURL, destURL, n)
			b.StopTimer()
			dropDLQ()
			dropQ()
			dropDest()
		}
	}
	small, big := sizeLabel(sizes[0]), sizeLabel(sizes[1])
	var lines []string
	for _, cmd := range cmds {
		ratio := rss[cmd][1] / rss[cmd][0]
		b.ReportMetric(rss[cmd][0], cmd+"-RSS-MB-"+small)
		b.ReportMetric(rss[cmd][1], cmd+"-RSS-MB-"+big)
		b.ReportMetric(ratio, cmd+"-RSS-ratio")
		lines = append(lines, fmt.Sprintf("%s %.0f → %.0f MB (×%.2f; %.0f / %.0f msgs/s)", cmd, rss[cmd][0], rss[cmd][1], ratio, rate[cmd][0], rate[cmd][1]))
	}
	b.Logf("peak RSS at %s → %s messages: %s", small, big, strings.Join(lines, "; "))
}

// sizeLabel formats 80000 as "80k".
func sizeLabel(n int) string {
	if n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// findManifest returns the key of the one manifest.json under prefix.
func findManifest(b *testing.B, s3c *s3.Client, bucket, prefix string) string {
	b.Helper()
	var found []string
	p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); strings.HasSuffix(k, "/_manifest.json") {
				found = append(found, k)
			}
		}
	}
	if len(found) != 1 {
		b.Fatalf("want one manifest.json under s3://%s/%s/, found %v", bucket, prefix, found)
	}
	return found[0]
}

// emptyBucket deletes every object of bucket, then the bucket.
func emptyBucket(s3c *s3.Client, bucket string) {
	ctx := context.Background()
	p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return
		}
		var ids []s3types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, s3types.ObjectIdentifier{Key: o.Key})
		}
		if len(ids) > 0 {
			_, _ = s3c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		}
	}
	_, _ = s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
}
