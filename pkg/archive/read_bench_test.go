package archive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// BenchmarkReadArchiveRSS measures the peak RSS (VmHWM) of the built dlqctl
// reading a local archive with --from, at DLQCTL_BENCH_READ_SMALL (default
// 20,000) and DLQCTL_BENCH_READ_BIG (default 200,000) records, for
//
//	group --from DIR --by class,source,error -o json
//	classify --from DIR --summary -o json
//	classify --from DIR -o ndjson --no-redact (every record printed, stdout discarded)
//	group --from s3://BUCKET/…/run=<id>/ --by class,source,error -o json
//	                                          (the same archive uploaded to the
//	                                          local stack's S3; needs the stack)
//
// and reports, per command, the peak RSS at each size and big/small (flat
// memory means a ratio near 1: reading streams one record at a time). The
// archive is written in the partitioned layout (queue=/dt=/run=, 10,000
// records a part, _manifest.json) with realistic ~1 KiB records: enriched
// failure wrappers with envelopes, tenants, two sources and a few dozen
// error families whose texts vary by ids and numbers. No stack is needed.
//
//	go test -run '^$' -bench ReadArchiveRSS -benchtime 1x ./pkg/archive/
func BenchmarkReadArchiveRSS(b *testing.B) {
	bin := testenv.BuildBinary(b)
	sizes := []int{envSize("DLQCTL_BENCH_READ_SMALL", 20_000), envSize("DLQCTL_BENCH_READ_BIG", 200_000)}
	dirs := make([]string, len(sizes))
	for i, n := range sizes {
		dirs[i] = b.TempDir()
		writeLocalArchive(b, dirs[i], n)
	}
	cmds := []struct {
		name string
		args []string
	}{
		{"group", []string{"group", "--by", "class,source,error", "-o", "json"}},
		{"classify-summary", []string{"classify", "--summary", "-o", "json"}},
		// --no-redact: secret masking costs ~0.7 ms of CPU per record
		// printed (measured on 20k records: 17.8 s masked, 2.4 s not) and
		// would make this benchmark take minutes without changing memory.
		{"classify-ndjson", []string{"classify", "-o", "ndjson", "--no-redact"}},
	}
	for _, c := range cmds {
		b.Run(c.name, func(b *testing.B) {
			var peaks []int64
			for i, n := range sizes {
				var peak int64
				var elapsed time.Duration
				for range b.N {
					kb, d := runPeak(b, bin, nil, append([]string{"--from", dirs[i]}, c.args...))
					peak, elapsed = max(peak, kb), elapsed+d
				}
				peaks = append(peaks, peak)
				b.ReportMetric(float64(peak)/1024, fmt.Sprintf("peakRSS-MB@%d", n))
				b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), fmt.Sprintf("records/s@%d", n))
			}
			b.ReportMetric(float64(peaks[1])/float64(peaks[0]), "RSS-big/small")
		})
	}
	b.Run("group-s3", func(b *testing.B) {
		env := testenv.Require(b)
		api := env.S3(b)
		bucket := testenv.BucketName(b, "rdrss")
		if _, err := api.CreateBucket(b.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			b.Fatal(err)
		}
		var peaks []int64
		for i, n := range sizes {
			run := uploadDir(b, api, bucket, dirs[i])
			var peak int64
			var elapsed time.Duration
			for range b.N {
				kb, d := runPeak(b, bin, env.Environ(), []string{"group", "--from", "s3://" + bucket + "/" + run, "--by", "class,source,error", "-o", "json"})
				peak, elapsed = max(peak, kb), elapsed+d
			}
			peaks = append(peaks, peak)
			b.ReportMetric(float64(peak)/1024, fmt.Sprintf("peakRSS-MB@%d", n))
			b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), fmt.Sprintf("records/s@%d", n))
		}
		b.ReportMetric(float64(peaks[1])/float64(peaks[0]), "RSS-big/small")
	})
}

// uploadDir puts every file under dir into bucket with its relative path as
// key and returns the key prefix of the run folder it holds.
func uploadDir(b *testing.B, api *s3.Client, bucket, dir string) string {
	b.Helper()
	var run string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		key := filepath.ToSlash(rel)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := api.PutObject(b.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: f}); err != nil {
			return err
		}
		b.Cleanup(func() {
			_, _ = api.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		})
		if IsManifestName(key) {
			run = strings.TrimSuffix(key, ManifestName)
		}
		return nil
	})
	if err != nil || run == "" {
		b.Fatalf("uploading %s: %v (run %q)", dir, err, run)
	}
	return run
}

func envSize(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil && n > 0 {
		return n
	}
	return def
}

// runPeak runs the binary (with environ, when set) and returns its peak
// RSS (KiB) and duration.
func runPeak(b *testing.B, bin string, environ []string, args []string) (int64, time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = environ
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	hwm := watchHWM(cmd.Process.Pid)
	err := cmd.Wait()
	d := time.Since(start)
	peak := <-hwm
	if err != nil {
		b.Fatalf("dlqctl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return peak, d
}

// writeLocalArchive writes one archive run of n records under dir in the
// layout dlqctl writes to S3, with its _manifest.json.
func writeLocalArchive(b *testing.B, dir string, n int) {
	b.Helper()
	started := time.Now().UTC()
	runDir := RunDir("", "bench-dlq", started, NewRunID(started, "00000000"))
	abs := filepath.Join(dir, filepath.FromSlash(runDir))
	if err := os.MkdirAll(abs, 0o755); err != nil {
		b.Fatal(err)
	}
	m := &Manifest{Format: Format, RunID: "bench", Queue: QueueInfo{Name: "bench-dlq"}, StartedAt: started, FinishedAt: started, Complete: true}
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var p *partWriter
	flush := func() {
		if err := p.Finish(); err != nil {
			b.Fatal(err)
		}
		key := PartKey(runDir, len(m.Parts)+1)
		r, err := p.Reader()
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, filepath.FromSlash(key)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(f, r); err != nil {
			b.Fatal(err)
		}
		f.Close()
		m.Parts = append(m.Parts, Part{Key: key, Records: p.records, Bytes: p.compressedLen, SHA256: p.sha256Hex,
			UncompressedBytes: p.raw.n, FirstMessageID: p.first, LastMessageID: p.last})
		p.Discard()
		p = nil
	}
	for i := range n {
		if p == nil {
			var err error
			if p, err = newPartWriter(b.TempDir(), false); err != nil {
				b.Fatal(err)
			}
		}
		rec := benchRecord(rng, i, started)
		if err := p.Write(&rec); err != nil {
			b.Fatal(err)
		}
		if p.records == DefaultPartRecords {
			flush()
		}
	}
	if p != nil {
		flush()
	}
	m.Sum()
	body, err := m.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(abs, ManifestName), body, 0o600); err != nil {
		b.Fatal(err)
	}
}

var benchFailures = []struct{ typ, reason, class string }{
	{"DatabaseTimeout", "timeout after %dms calling inventory-db for order o-%d", "transient"},
	{"ConnectionReset", "read tcp 10.0.3.%d:%d->10.0.9.2:5432: read: connection reset by peer", "transient"},
	{"HttpError", "POST https://ledger.internal/v1/entries returned 503 Service Unavailable (request id r-%d%d)", "transient"},
	{"Throttling", "429 Too Many Requests from psp-adyen (retry after %ds) for payment p-%d", "transient"},
	{"ValidationError", "validation failed: missing required field payload.customerId (%d of %d)", "permanent"},
	{"BusinessRuleViolation", "order o-%d already cancelled at step %d", "business"},
	{"SchemaValidationError", "unsupported eventVersion %d for OrderCreated (known: 1..%d)", "schema-mismatch"},
	{"PayloadTooLarge", "payload of %d bytes exceeds search-indexer limit of %d", "permanent"},
}

// benchRecord is a ~1 KiB dead-letter record: an enriched wrapper around an
// event, as the seeded incidents carry.
func benchRecord(rng *rand.Rand, i int, now time.Time) record.Record {
	f := benchFailures[rng.IntN(len(benchFailures))]
	reason := fmt.Sprintf(f.reason, rng.IntN(5000), rng.IntN(90000))
	event := []string{"OrderCreated", "OrderPaid", "OrderShipped", "RefundIssued"}[rng.IntN(4)]
	body := fmt.Sprintf(`{"original_payload":{"eventId":"ev-%08d","eventType":%q,"eventVersion":%d,"producer":"orders-api@2.3.1","tenantId":"t-%d","correlationId":"corr-%08x","payload":{"orderId":"o-%d","total":%d.%02d,"currency":"EUR","note":%q}},"failure_reason":%q,"failure_type":%q,"error_class":%q,"attempt_count":%d,"consumer_version":"orders-worker@1.4.2"}`,
		i, event, 1+rng.IntN(3), rng.IntN(40), rng.Uint32(), 1000+i, rng.IntN(500), rng.IntN(100), strings.Repeat("x", 300+rng.IntN(300)),
		reason, f.typ, f.class, 1+rng.IntN(5))
	src := []string{"orders", "payments"}[rng.IntN(2)]
	sent := now.Add(-time.Duration(rng.IntN(86400)) * time.Second)
	rec := record.Record{
		MessageID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, rng.Uint64()&0xffffffffffff), Queue: "arn:aws:sqs:us-east-1:123456789012:bench-dlq",
		Body: body, BodySHA256: record.SHA256Hex(body),
		Attributes: map[string]record.Attribute{"eventType": {Type: "String", Value: event}, "traceparent": {Type: "String", Value: fmt.Sprintf("00-%032x-%016x-01", rng.Uint64(), rng.Uint64())}},
		System:     record.System{ReceiveCount: 3, SentAt: sent, FirstReceivedAt: sent.Add(time.Second), SourceQueueARN: "arn:aws:sqs:us-east-1:123456789012:" + src},
		AgeSeconds: int64(now.Sub(sent) / time.Second), ExpiresAt: sent.Add(14 * 24 * time.Hour),
		Class: f.class,
	}
	rec.SizeBytes = sqs.MessageSize(rec.Body, rec.Attributes)
	return rec
}
