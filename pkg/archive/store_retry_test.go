package archive

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// s3Through returns an S3 client that talks to the stack's S3 server
// through a fault proxy.
func s3Through(t *testing.T, env testenv.Env, faults ...faultproxy.Fault) (*s3.Client, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.New(env.S3Endpoint, faults...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c := s3.NewFromConfig(env.AWSConfig(t.Context()), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL)
		o.UsePathStyle = true
	})
	return c, p
}

// TestPutWhoseAnswerWasLostIsAccepted: S3 stores a part but its answer is
// lost (a 500 after the server acted). The SDK retries the PUT, and the
// retry's If-None-Match: * answers 412 because the object now exists. That
// object is ours — same SHA-256, same size — so the upload is a success,
// not "object already exists" (which would fail the part and keep its
// messages in the DLQ for no reason).
func TestPutWhoseAnswerWasLostIsAccepted(t *testing.T) {
	env := testenv.Require(t)
	api, proxy := s3Through(t, env, faultproxy.Fault{Action: "PutObject", Kind: faultproxy.Status500After, Limit: 1})
	bucket := newBucket(t, env.S3(t))
	data := bytes.Repeat([]byte("a verified archive part\n"), 2000)
	sum := sha256.Sum256(data)
	if err := Put(t.Context(), api, bucket, "q/part-00001.ndjson.gz", bytes.NewReader(data), int64(len(data)), sum[:], "application/gzip", Encryption{}); err != nil {
		t.Fatalf("Put after a lost answer: %v (proxy: %v)", err, proxy.Stats())
	}
	if st := proxy.Stats(); st.Fired[faultproxy.Status500After] != 1 || st.Requests["PutObject"] < 2 {
		t.Fatalf("the fault did not happen as planned: %v", st)
	}
	if err := Verify(t.Context(), env.S3(t), bucket, "q/part-00001.ndjson.gz", int64(len(data)), sum[:]); err != nil {
		t.Fatalf("the stored part does not verify: %v", err)
	}
}

// TestPutOverAnotherObjectAfterALostAnswerIsRefused: when the key holds
// an object that is not ours, a 412 stays ErrExists, even on a retry.
func TestPutOverAnotherObjectAfterALostAnswerIsRefused(t *testing.T) {
	env := testenv.Require(t)
	direct := env.S3(t)
	bucket := newBucket(t, direct)
	other := []byte("someone else's object")
	so := sha256.Sum256(other)
	if err := Put(t.Context(), direct, bucket, "k", bytes.NewReader(other), int64(len(other)), so[:], "text/plain", Encryption{}); err != nil {
		t.Fatal(err)
	}
	api, _ := s3Through(t, env, faultproxy.Fault{Action: "PutObject", Kind: faultproxy.Status500, Limit: 1})
	mine := []byte("my part")
	sm := sha256.Sum256(mine)
	err := Put(t.Context(), api, bucket, "k", bytes.NewReader(mine), int64(len(mine)), sm[:], "text/plain", Encryption{})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Put over another object = %v, want ErrExists", err)
	}
	if err := Verify(t.Context(), direct, bucket, "k", int64(len(other)), so[:]); err != nil {
		t.Fatalf("the other object changed: %v", err)
	}
}
