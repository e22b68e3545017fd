package awsconf

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3At is a client for a fake S3 endpoint answering HeadBucket as told.
func s3At(t *testing.T, status int, region string) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if region != "" {
			w.Header().Set("X-Amz-Bucket-Region", region)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
}

// TestBucketRegionFromTheRedirect: a bucket in another region answers 301
// with its region in x-amz-bucket-region (the SDK does not follow it);
// dlqctl reads the region from there, or from a 200, and says what to do
// when S3 does not tell.
func TestBucketRegionFromTheRedirect(t *testing.T) {
	for _, tc := range []struct {
		status     int
		header     string
		want, fail string
	}{
		{http.StatusMovedPermanently, "eu-central-1", "eu-central-1", ""},
		{http.StatusOK, "ap-southeast-2", "ap-southeast-2", ""},
		{http.StatusMovedPermanently, "", "", "pass --region"},
		{http.StatusNotFound, "", "", ""}, // archive.CheckBucket reports it
	} {
		got, err := BucketRegion(t.Context(), s3At(t, tc.status, tc.header), "b")
		if tc.fail != "" {
			if err == nil || !strings.Contains(err.Error(), tc.fail) {
				t.Fatalf("HTTP %d without a region: err %v; want one naming %q", tc.status, err, tc.fail)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Fatalf("HTTP %d, region header %q: got %q, %v; want %q", tc.status, tc.header, got, err, tc.want)
		}
	}
}
