package testenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestReadEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	content := `# written by scripts/stack.sh
export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1234
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:5678"
AWS_ACCESS_KEY_ID='ak'
export AWS_SECRET_ACCESS_KEY=sk
unset AWS_PROFILE AWS_SESSION_TOKEN
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"AWS_ENDPOINT_URL_SQS":  "http://127.0.0.1:1234",
		"AWS_ENDPOINT_URL_S3":   "http://127.0.0.1:5678",
		"AWS_ACCESS_KEY_ID":     "ak",
		"AWS_SECRET_ACCESS_KEY": "sk",
	}
	if len(got) != len(want) {
		t.Errorf("got %d vars %v, want %v", len(got), got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestLookupFromStackDir(t *testing.T) {
	dir := t.TempDir()
	env := "export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1\nexport AWS_ENDPOINT_URL_S3=http://127.0.0.1:2\n" +
		"export AWS_ACCESS_KEY_ID=a\nexport AWS_SECRET_ACCESS_KEY=s\n"
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("DLQCTL_STACK_DIR", dir)
	e, err := Lookup()
	if err != nil {
		t.Fatal(err)
	}
	want := Env{SQSEndpoint: "http://127.0.0.1:1", S3Endpoint: "http://127.0.0.1:2", Region: "us-east-1", AccessKey: "a", SecretKey: "s", Kind: KindLocal}
	if e != want {
		t.Errorf("Lookup() = %+v, want %+v", e, want)
	}

	t.Setenv("DLQCTL_STACK_DIR", filepath.Join(dir, "missing"))
	if _, err := Lookup(); err == nil {
		t.Error("Lookup() with no env file and no env vars succeeded")
	}
}

func TestLookupMotoFromStackDir(t *testing.T) {
	dir := t.TempDir()
	env := "export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1\nexport DLQCTL_MOTO_ENDPOINT=http://127.0.0.1:3\n"
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvMotoEndpoint, "")
	t.Setenv("DLQCTL_STACK_DIR", dir)
	e, err := LookupMoto()
	if err != nil {
		t.Fatal(err)
	}
	want := Env{SQSEndpoint: "http://127.0.0.1:3", S3Endpoint: "http://127.0.0.1:3", Region: "us-east-1", AccessKey: "testing", SecretKey: "testing", Kind: KindMoto}
	if e != want || !e.IsMoto() {
		t.Errorf("LookupMoto() = %+v, want %+v", e, want)
	}
	t.Setenv(EnvMotoEndpoint, "http://127.0.0.1:4")
	if e, err := LookupMoto(); err != nil || e.SQSEndpoint != "http://127.0.0.1:4" {
		t.Errorf("LookupMoto() with %s set = %+v, %v", EnvMotoEndpoint, e, err)
	}
	t.Setenv(EnvMotoEndpoint, "")
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte("export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LookupMoto(); err == nil || !strings.Contains(err.Error(), EnvMotoEndpoint) {
		t.Errorf("LookupMoto() on an env file without moto: %v", err)
	}
}

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,60}$`)
	seen := map[string]bool{}
	for _, prefix := range []string{"dlq", "", "orders.fifo/ünïcode  name", strings.Repeat("x", 100)} {
		for range 50 {
			n := UniqueName(t, prefix)
			if !valid.MatchString(n) {
				t.Fatalf("UniqueName(%q) = %q: not a valid short queue name", prefix, n)
			}
			if seen[n] {
				t.Fatalf("UniqueName(%q) repeated %q", prefix, n)
			}
			seen[n] = true
		}
	}
	t.Run("sub/test with spaces", func(t *testing.T) {
		n := UniqueName(t, "q")
		if !strings.HasPrefix(n, "q-test_with_spaces-") || !valid.MatchString(n) {
			t.Errorf("UniqueName in subtest = %q", n)
		}
	})
}

func TestBucketName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	for _, prefix := range []string{"arc", "", "Weird__Prefix--x_"} {
		if n := BucketName(t, prefix); !valid.MatchString(n) || strings.Contains(n, "--") {
			t.Errorf("BucketName(%q) = %q: not a valid bucket name", prefix, n)
		}
	}
}

func TestBuildBinary(t *testing.T) {
	bin := BuildBinary(t)
	if again := BuildBinary(t); again != bin {
		t.Errorf("second BuildBinary = %q, want the cached %q", again, bin)
	}
	cmd := exec.Command(bin, "--help")
	cmd.Env = Env{SQSEndpoint: "http://127.0.0.1:1", S3Endpoint: "http://127.0.0.1:1", Region: "us-east-1", AccessKey: "a", SecretKey: "s"}.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dlqctl --help: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "dlqctl") {
		t.Errorf("dlqctl --help printed %q", out)
	}
}

func TestEnvironOverridesAWSSettings(t *testing.T) {
	t.Setenv("AWS_PROFILE", "prod-admin")
	t.Setenv("AWS_SESSION_TOKEN", "tok")
	e := Env{SQSEndpoint: "http://127.0.0.1:1", S3Endpoint: "http://127.0.0.1:2", Region: "us-east-1", AccessKey: "a", SecretKey: "s"}
	got := map[string][]string{}
	for _, kv := range e.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = append(got[k], v)
	}
	if _, ok := got["AWS_PROFILE"]; ok {
		t.Error("AWS_PROFILE leaks into the subprocess environment")
	}
	if _, ok := got["AWS_SESSION_TOKEN"]; ok {
		t.Error("AWS_SESSION_TOKEN leaks into the subprocess environment")
	}
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_SQS": e.SQSEndpoint, "AWS_ENDPOINT_URL_S3": e.S3Endpoint, "AWS_ACCESS_KEY_ID": "a", "AWS_REGION": "us-east-1"} {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("%s = %v, want exactly [%s]", k, got[k], v)
		}
	}
	// A moto env points both services at its one endpoint.
	m := MotoEnv("http://127.0.0.1:3")
	got = map[string][]string{}
	for _, kv := range m.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = append(got[k], v)
	}
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_SQS": m.SQSEndpoint, "AWS_ENDPOINT_URL_S3": m.SQSEndpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"} {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("moto: %s = %v, want exactly [%s]", k, got[k], v)
		}
	}
}

// TestMotoSmoke: a queue and a bucket on moto_server through the same
// helpers (SQS JSON protocol, path-style S3 with an explicit SHA256
// checksum read back with ChecksumMode=ENABLED, as dlqctl's archive does).
func TestMotoSmoke(t *testing.T) {
	env := RequireMoto(t)
	if env.Kind != KindMoto || env.SQSEndpoint != env.S3Endpoint {
		t.Fatalf("RequireMoto() = %+v", env)
	}
	ctx := t.Context()

	c := env.SQS(t)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(UniqueName(t, "moto"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("héllo 👋")}); err != nil {
		t.Fatal(err)
	}
	// A long poll: a short one may answer empty although the message is
	// there (AWS samples a subset of its servers; moto answered [] once
	// under make test's load). With a visibility of 2 s: a receive whose
	// answer was lost under load (the SDK retries it, docs/emulators.md)
	// holds the message that long, not the queue's 30 s, and the retried
	// long poll gets it (ci32 received [] after 5 s).
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 8, VisibilityTimeout: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "héllo 👋" {
		t.Fatalf("received %+v", out.Messages)
	}

	s := env.S3(t)
	bucket := BucketName(t, "moto")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("archive line\n"), 1000)
	sum := sha256.Sum256(data)
	if _, err := s.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("p/1.ndjson"), Body: bytes.NewReader(data),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	}); err != nil {
		t.Fatal(err)
	}
	head, err := s.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("p/1.ndjson"), ChecksumMode: s3types.ChecksumModeEnabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := base64.StdEncoding.EncodeToString(sum[:]); aws.ToString(head.ChecksumSHA256) != want || aws.ToInt64(head.ContentLength) != int64(len(data)) {
		t.Errorf("HeadObject = size %d sha256 %q, want %d %q", aws.ToInt64(head.ContentLength), aws.ToString(head.ChecksumSHA256), len(data), want)
	}
	// The queue is not visible to the local-aws-sqs stack: two servers.
	if local, err := Lookup(); err == nil && local.SQSEndpoint == env.SQSEndpoint {
		t.Errorf("moto and local-aws-sqs share %s", env.SQSEndpoint)
	}
}

// TestStackSmoke exercises both servers with the same SDK settings dlqctl
// uses, including the S3 SDK's default checksum behaviour.
func TestStackSmoke(t *testing.T) {
	env := Require(t)
	ctx := t.Context()

	t.Run("sqs", func(t *testing.T) {
		c := env.SQS(t)
		name := UniqueName(t, "smoke")
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
		body := "héllo 👋"
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: q.QueueUrl, MessageBody: aws.String(body),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				"sig": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
			},
		}); err != nil {
			t.Fatal(err)
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != body {
			t.Fatalf("received %+v, want one message %q", out.Messages, body)
		}
		if got := out.Messages[0].MessageAttributes["sig"].BinaryValue; !bytes.Equal(got, []byte{0, 1, 2, 255}) {
			t.Errorf("binary attribute = %v", got)
		}
	})

	t.Run("s3", func(t *testing.T) {
		c := env.S3(t)
		bucket := BucketName(t, "smoke")
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte("archive line\n"), 1000)
		sum := sha256.Sum256(data)
		key := "parts/part-00001.ndjson"
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
			ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
		}); err != nil {
			t.Fatal(err)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: s3types.ChecksumModeEnabled,
		})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt64(head.ContentLength) != int64(len(data)) {
			t.Errorf("HeadObject size = %d, want %d", aws.ToInt64(head.ContentLength), len(data))
		}
		if want := base64.StdEncoding.EncodeToString(sum[:]); aws.ToString(head.ChecksumSHA256) != want {
			t.Errorf("HeadObject ChecksumSHA256 = %q, want %q", aws.ToString(head.ChecksumSHA256), want)
		}
		// Default SDK settings (no explicit algorithm) must work too.
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String("plain.txt"), Body: strings.NewReader("plain"),
		}); err != nil {
			t.Fatalf("PutObject with SDK default checksums: %v", err)
		}
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("plain.txt")})
		if err != nil {
			t.Fatal(err)
		}
		defer get.Body.Close()
		if b, _ := io.ReadAll(get.Body); string(b) != "plain" {
			t.Errorf("GetObject = %q", b)
		}
	})

	t.Run("aws-config-endpoints", func(t *testing.T) {
		// A client built only from AWSConfig (as dlqctl's own code would)
		// reaches both local servers; the process environment plays no part.
		t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1")
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
		cfg := env.AWSConfig(ctx)
		if _, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
			t.Errorf("SQS via AWSConfig: %v", err)
		}
		if _, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
			t.Errorf("S3 via AWSConfig: %v", err)
		}
	})
}
