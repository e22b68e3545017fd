package archive

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// headerRecorder is a reverse proxy in front of the S3 server that keeps
// the bucket-access headers of every request it forwards.
type headerRecorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerRecorder) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, http.Header{
			"Owner": {r.Header.Get("X-Amz-Expected-Bucket-Owner")},
			"Payer": {r.Header.Get("X-Amz-Request-Payer")},
			"Op":    {r.Method + " " + r.URL.Path},
		})
		h.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBucketOwnerIsSentOnEveryS3Call: with --bucket-owner and
// --requester-pays, every S3 request of an archive run, of its
// verification and of a triage read from it carries
// x-amz-expected-bucket-owner and x-amz-request-payer; a bucket owned by
// another account is refused before any message is touched (exit 2,
// everything still in the queue). versitygw enforces the owner check
// (its owners are access keys, not account ids).
func TestBucketOwnerIsSentOnEveryS3Call(t *testing.T) {
	env := testenv.Require(t)
	if env.IsMoto() {
		t.Skip("versitygw enforces ExpectedBucketOwner; moto ignores it")
	}
	name, url := clitest.FillQueue(t, env, "owner", 30)
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "own"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	rec := &headerRecorder{}
	via := env
	via.S3Endpoint = rec.start(t, env.S3Endpoint)

	// Another owner: refused up front, nothing received or deleted.
	r := clitest.Run(t, via, "", "archive", name, "--to", "s3://"+bucket+"/arch", "--delete", "--yes", "--bucket-owner", "123456789012")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--bucket-owner") {
		t.Fatalf("archive to a bucket of another owner: exit %d, stderr %q; want exit 2 naming --bucket-owner", r.Code, r.Stderr)
	}
	if v, in := clitest.SettledDepth(t, env.SQS(t), url); v != 30 || (in != 0 && !env.CountsIncludeInFlight()) {
		t.Fatalf("after the refused archive the queue holds %d (+%d in flight); want all 30", v, in)
	}

	// The owner: archived, verified, deleted; every call carried both headers.
	r = clitest.Run(t, via, "", "archive", name, "--to", "s3://"+bucket+"/arch", "--delete", "--yes", "--bucket-owner", "dlqctl-local", "--requester-pays", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("archive with the right owner: exit %d: %s", r.Code, r.Stderr)
	}
	r = clitest.Run(t, via, "", "classify", "--from", "s3://"+bucket+"/arch/", "--bucket-owner", "dlqctl-local", "--requester-pays", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("classify --from the archive: exit %d: %s", r.Code, r.Stderr)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var puts, gets int
	for _, h := range rec.seen {
		if h.Get("Owner") == "" {
			t.Fatalf("%s was sent without x-amz-expected-bucket-owner", h.Get("Op"))
		}
		if h.Get("Owner") == "dlqctl-local" && h.Get("Payer") != "requester" {
			t.Fatalf("%s carried the owner but not x-amz-request-payer", h.Get("Op"))
		}
		switch {
		case strings.HasPrefix(h.Get("Op"), "PUT /"+bucket+"/"):
			puts++
		case strings.HasPrefix(h.Get("Op"), "GET /"+bucket+"/"):
			gets++
		}
	}
	if puts == 0 || gets == 0 {
		t.Fatalf("recorded %d requests (%d part/manifest PUTs, %d GETs); want uploads and reads", len(rec.seen), puts, gets)
	}
}
