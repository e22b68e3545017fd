// Package archive writes dead-letter messages to S3 as gzip-compressed NDJSON
// parts of message records, verifies every part against its SHA-256 before
// anything is deleted, describes each run in a manifest, and reads archives
// back (verify, offline triage, restore).
//
// Layout of one run:
//
//	PREFIX/<queue-name>/<yyyy>/<mm>/<dd>/<run-id>/part-00001.ndjson.gz
//	PREFIX/<queue-name>/<yyyy>/<mm>/<dd>/<run-id>/manifest.json
package archive

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Location is an s3://BUCKET/PREFIX destination or object.
type Location struct {
	Bucket string
	Key    string // prefix (destination) or object key; no leading slash
}

// String renders the location as an s3:// URI.
func (l Location) String() string {
	if l.Key == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Key
}

// IsS3URI reports whether s looks like an s3:// URI.
func IsS3URI(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseS3URI parses s3://BUCKET[/KEY]. A bad URI is a bad-input error.
func ParseS3URI(s string) (Location, error) {
	if !IsS3URI(s) {
		return Location{}, errs.BadInputf("%q is not an S3 location; pass s3://BUCKET/PREFIX", s)
	}
	rest := strings.TrimPrefix(s, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, errs.BadInputf("%q has no bucket; pass s3://BUCKET/PREFIX", s)
	}
	if err := validBucket(bucket); err != nil {
		return Location{}, errs.BadInputf("%q: %v; pass s3://BUCKET/PREFIX with a valid bucket name", s, err)
	}
	return Location{Bucket: bucket, Key: strings.Trim(key, "/")}, nil
}

// validBucket checks the S3 bucket naming rules that catch typos early.
func validBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters", b)
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return fmt.Errorf("bucket name %q may only hold lower-case letters, digits, '-' and '.'", b)
		}
	}
	return nil
}

// RunDir is the key prefix of one archive run:
// PREFIX/<queue>/<yyyy>/<mm>/<dd>/<run-id>.
func RunDir(prefix, queueName string, started time.Time, runID string) string {
	t := started.UTC()
	return path.Join(strings.Trim(prefix, "/"), queueName,
		fmt.Sprintf("%04d", t.Year()), fmt.Sprintf("%02d", int(t.Month())), fmt.Sprintf("%02d", t.Day()), runID)
}

// PartKey is the key of part n (1-based) in runDir.
func PartKey(runDir string, n int) string {
	return path.Join(runDir, fmt.Sprintf("part-%05d.ndjson.gz", n))
}

// ManifestKey is the key of the run's manifest in runDir.
func ManifestKey(runDir string) string { return path.Join(runDir, ManifestName) }

// ManifestName is the file name of every run's manifest.
const ManifestName = "manifest.json"

// NewRunID returns a sortable run id: UTC time plus random hex.
func NewRunID(now time.Time, random string) string {
	return now.UTC().Format("20060102T150405Z") + "-" + random
}
