package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// newBucket creates a fresh bucket on the local S3 gateway.
func newBucket(t testing.TB, api *s3.Client) string {
	t.Helper()
	b := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "arc"), "_", "-"))
	if _, err := api.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("CreateBucket %s: %v", b, err)
	}
	return b
}

func TestPutStoresSHA256AndVerifies(t *testing.T) {
	env := testenv.Require(t)
	api := env.S3(t)
	bucket := newBucket(t, api)
	ctx := t.Context()
	data := bytes.Repeat([]byte("dlqctl archive part\n"), 5000)
	sum := sha256.Sum256(data)

	if err := Put(ctx, api, bucket, "p/part-00001.ndjson.gz", bytes.NewReader(data), int64(len(data)), sum[:], "application/gzip", Encryption{}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := Verify(ctx, api, bucket, "p/part-00001.ndjson.gz", int64(len(data)), sum[:]); err != nil {
		t.Fatalf("Verify of a good upload: %v", err)
	}
	// A digest that differs from the stored object must fail verification.
	other := sha256.Sum256([]byte("something else"))
	if err := Verify(ctx, api, bucket, "p/part-00001.ndjson.gz", int64(len(data)), other[:]); !errors.Is(err, ErrVerify) {
		t.Fatalf("Verify with a wrong digest = %v, want ErrVerify", err)
	}
	if err := Verify(ctx, api, bucket, "p/part-00001.ndjson.gz", int64(len(data))+1, sum[:]); !errors.Is(err, ErrVerify) {
		t.Fatalf("Verify with a wrong size = %v, want ErrVerify", err)
	}
}

func TestPutNeverOverwrites(t *testing.T) {
	env := testenv.Require(t)
	api := env.S3(t)
	bucket := newBucket(t, api)
	ctx := t.Context()
	first := []byte("first")
	s1 := sha256.Sum256(first)
	if err := Put(ctx, api, bucket, "k", bytes.NewReader(first), int64(len(first)), s1[:], "text/plain", Encryption{}); err != nil {
		t.Fatal(err)
	}
	second := []byte("second version")
	s2 := sha256.Sum256(second)
	err := Put(ctx, api, bucket, "k", bytes.NewReader(second), int64(len(second)), s2[:], "text/plain", Encryption{})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Put to the same key = %v, want ErrExists (If-None-Match: *)", err)
	}
	// The first object is untouched.
	if err := Verify(ctx, api, bucket, "k", int64(len(first)), s1[:]); err != nil {
		t.Fatalf("first object changed after refused overwrite: %v", err)
	}
}

func TestPutRejectsBodyThatDoesNotMatchChecksum(t *testing.T) {
	env := testenv.Require(t)
	api := env.S3(t)
	bucket := newBucket(t, api)
	data := []byte("what dlqctl wrote")
	wrong := sha256.Sum256([]byte("what the wire carried"))
	err := Put(t.Context(), api, bucket, "bad", bytes.NewReader(data), int64(len(data)), wrong[:], "text/plain", Encryption{})
	if err == nil {
		t.Fatal("Put with a SHA-256 that does not match the body succeeded; S3 must reject it")
	}
	if _, herr := api.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad")}); herr == nil {
		t.Fatal("the rejected object exists")
	}
}

func TestCheckBucketMissingIsBadInput(t *testing.T) {
	env := testenv.Require(t)
	api := env.S3(t)
	err := CheckBucket(context.Background(), api, "no-such-bucket-dlqctl-"+strings.ToLower(testenv.UniqueName(t, "x"))[:8])
	if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("CheckBucket(missing) = %v (code %d), want a bad-input error naming the bucket", err, errs.Code(err))
	}
}
