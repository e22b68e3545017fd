// Package archive writes dead-letter messages to S3 as gzip-compressed NDJSON
// parts of message records, verifies every part against its SHA-256 before
// anything is deleted, describes each run in a manifest, and reads archives
// back (verify, offline triage, restore).
//
// Layout of one run (Hive-style partition folders, so Athena, DuckDB, Spark
// and other engines read the parts as a table without help; the manifest's
// leading "_" makes them skip it):
//
//	PREFIX/queue=<queue-name>/dt=<yyyy-mm-dd>/run=<run-id>/part-00001.ndjson.gz
//	PREFIX/queue=<queue-name>/dt=<yyyy-mm-dd>/run=<run-id>/_manifest.json
//
// Runs written before this layout (PREFIX/<queue-name>/<yyyy>/<mm>/<dd>/
// <run-id>/ with manifest.json) are read, verified and restored the same way:
// every reader goes through the manifest, whose part keys are absolute.
package archive

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
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
// PREFIX/queue=<queue>/dt=<yyyy-mm-dd>/run=<run-id>. dt is the UTC day the
// run started.
func RunDir(prefix, queueName string, started time.Time, runID string) string {
	return path.Join(strings.Trim(prefix, "/"), "queue="+queueName, "dt="+started.UTC().Format("2006-01-02"), "run="+runID)
}

// LegacyRunDir is the key prefix runs had before the partitioned layout:
// PREFIX/<queue>/<yyyy>/<mm>/<dd>/<run-id>. Nothing writes it any more;
// tests use it to prove such archives still read, verify and restore.
func LegacyRunDir(prefix, queueName string, started time.Time, runID string) string {
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

// ManifestName is the file name of every run's manifest. The leading "_"
// makes query engines (Athena, Hive, Spark, DuckDB globs over *.ndjson.gz)
// skip it: only record parts are data.
const ManifestName = "_manifest.json"

// LegacyManifestName is the manifest's name in runs written before the
// partitioned layout; readers accept both.
const LegacyManifestName = "manifest.json"

// IsManifestName reports whether a file or key's last element names a run
// manifest (current or legacy).
func IsManifestName(key string) bool {
	b := path.Base(filepath.ToSlash(key))
	return b == ManifestName || b == LegacyManifestName
}

// CheckpointKey is the key of the checkpoint manifest archive --delete
// writes after part n is verified and before any of its messages is
// deleted: a run killed before its end (kill -9, a lost host) leaves its
// newest checkpoint, which lists every part whose messages may be gone
// from the queue, with their checksums. Readers take a run's final
// manifest, else its newest checkpoint.
func CheckpointKey(runDir string, n int) string {
	return path.Join(runDir, fmt.Sprintf("_manifest-checkpoint-%05d.json", n))
}

// IsCheckpointName reports whether a file or key's last element names a
// checkpoint manifest.
func IsCheckpointName(key string) bool {
	b := path.Base(filepath.ToSlash(key))
	return strings.HasPrefix(b, "_manifest-checkpoint-") && strings.HasSuffix(b, ".json")
}

// pickManifests keeps one manifest per run folder: its final manifest
// (current or legacy name), else its newest checkpoint. Keys come back
// sorted.
func pickManifests(finals, checkpoints []string) []string {
	dir := func(k string) string { return path.Dir(filepath.ToSlash(k)) }
	hasFinal := map[string]bool{}
	for _, k := range finals {
		hasFinal[dir(k)] = true
	}
	newest := map[string]string{}
	for _, k := range checkpoints {
		if d := dir(k); !hasFinal[d] && k > newest[d] {
			newest[d] = k
		}
	}
	out := append([]string(nil), finals...)
	for _, k := range newest {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NewRunID returns a sortable run id: UTC time plus random hex.
func NewRunID(now time.Time, random string) string {
	return now.UTC().Format("20060102T150405Z") + "-" + random
}
