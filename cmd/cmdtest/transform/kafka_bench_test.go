package transform

import (
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// BenchmarkKafkaRedriveTransform times the dlqctl binary redriving a
// dead-letter topic of 20,000 orders (3 partitions, six headers each,
// ~150-byte bodies) on the stack's kfake: plain (exact copies), then with
// --transform fixExpr --archive-originals (each batch's originals
// uploaded and verified on versitygw before it is produced), each on a
// fresh topic, alternating. Reports records per second of each.
//
//	go test -run '^$' -bench KafkaRedriveTransform -benchtime 2x ./cmd/cmdtest/transform/
func BenchmarkKafkaRedriveTransform(b *testing.B) {
	env := testenv.Require(b)
	bin := testenv.BuildBinary(b)
	bucket := testenv.BucketName(b, "xfkbench")
	if _, err := env.S3(b).CreateBucket(b.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		b.Fatal(err)
	}
	const n = 20000
	run := func(k kafkaDLT, args ...string) time.Duration {
		c := exec.Command(bin, append([]string{"--state-dir", b.TempDir(), "redrive", k.ref(k.dlt), "--yes"}, args...)...)
		c.Env = env.Environ()
		var errb bytes.Buffer
		c.Stderr = &errb
		start := time.Now()
		if err := c.Run(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		return time.Since(start)
	}
	var plain, xf time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p, x := kafkaIncident(b, n, 0), kafkaIncident(b, n, 0)
		b.StartTimer()
		plain += run(p)
		xf += run(x, "--transform", fixExpr, "--archive-originals", "s3://"+bucket+"/orig")
	}
	b.ReportMetric(float64(n*b.N)/plain.Seconds(), "plain-rec/s")
	b.ReportMetric(float64(n*b.N)/xf.Seconds(), "transform-rec/s")
}
