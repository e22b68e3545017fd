package multiproc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestRateShareBadValuesExitTwo: a malformed --rate-share, or one combined
// with what cannot be shared, is refused with one sentence and exit 2 by
// redrive, restore and archive, before anything is touched.
func TestRateShareBadValuesExitTwo(t *testing.T) {
	env := testenv.Require(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "whatever-dlq", "--rate-share", "0/4"}, "1 ≤ I ≤ N"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "5/4"}, "1 ≤ I ≤ N"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "4"}, "use I/N"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "a/b"}, "use I/N"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "1/0"}, "use I/N"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "1/100000"}, "N ≤ 1000"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "1/2", "--canary", "5"}, "--canary and --rate-share"},
		{[]string{"redrive", "whatever-dlq", "--rate-share", "1/2", "--engine", "native"}, "--rate-share"},
		{[]string{"restore", "s3://some-bucket/p/_manifest.json", "--to", "q", "--rate-share", "3/2"}, "1 ≤ I ≤ N"},
		{[]string{"archive", "whatever-dlq", "--to", "s3://some-bucket/p", "--rate-share", "x"}, "use I/N"},
	} {
		r := clitest.Run(t, env, "", append(tc.args, "--yes", "--state-dir", t.TempDir())...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line mentioning %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// TestSharedRestoreSplitsTheArchive: an archive is not a queue — nobody
// hands a record to one process only — so --rate-share I/N on a restore
// takes the I-th share of the records. Two processes restoring the same
// archive send every message exactly once between them, each journal and
// summary holding only its share, the rest skipped as the other's.
func TestSharedRestoreSplitsTheArchive(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 300
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "rsh"), nil)
	destName := testenv.UniqueName(t, "rshd")
	dest, _ := clitest.CreateQueue(t, c, destName, nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "rsh"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, env, "", "archive", dlq, "--to", "s3://"+bucket+"/a", "--yes", "-o", "json")
	var as cmd.ArchiveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &as); r.Code != 0 || err != nil || as.Manifest == "" {
		t.Fatalf("archive: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	moved, skipped := 0, 0
	for i := 1; i <= 2; i++ {
		// The dry run plans this process's share, at its share of the rate.
		dr := clitest.Run(t, env, "", "restore", as.Manifest, "--to", destName, "--rate-share", fmt.Sprintf("%d/2", i), "--rate", "20", "--dry-run", "-o", "json")
		var plan struct {
			WouldMove int            `json:"would_move"`
			Skipped   map[string]int `json:"skipped"`
			Seconds   float64        `json:"estimated_seconds"`
		}
		if err := json.Unmarshal([]byte(dr.Stdout), &plan); dr.Code != 0 || err != nil {
			t.Fatalf("restore --dry-run %d/2: exit %d, %v\n%s", i, dr.Code, err, dr.Stderr)
		}
		if plan.WouldMove == 0 || plan.WouldMove == n || plan.WouldMove+plan.Skipped[redrive.SkipOtherShare] != n || plan.Seconds < float64(plan.WouldMove)/10*0.9 {
			t.Fatalf("restore --dry-run %d/2: would send %d, skipped %v, %.0f s; want its share of %d at 10/s (half of --rate 20)", i, plan.WouldMove, plan.Skipped, plan.Seconds, n)
		}
		r := clitest.Run(t, env, "", "restore", as.Manifest, "--to", destName, "--rate-share", fmt.Sprintf("%d/2", i), "--yes", "-o", "json", "--state-dir", t.TempDir())
		if r.Code != 0 {
			t.Fatalf("restore %d/2: exit %d\n%s", i, r.Code, r.Stderr)
		}
		var s struct {
			Moved   int            `json:"moved"`
			Skipped map[string]int `json:"skipped"`
			Share   string         `json:"rate_share"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
			t.Fatal(err)
		}
		if s.Share != fmt.Sprintf("%d/2", i) || s.Moved == 0 || s.Moved == n || s.Moved+s.Skipped[redrive.SkipOtherShare] != n {
			t.Fatalf("restore %d/2: share %q, sent %d, skipped %v; want a part of %d, the rest skipped as the other's", i, s.Share, s.Moved, s.Skipped, n)
		}
		moved += s.Moved
		skipped += s.Skipped[redrive.SkipOtherShare]
	}
	if moved != n || skipped != n {
		t.Fatalf("the two restores sent %d and skipped %d as the other's; want %d each", moved, skipped, n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, _ := clitest.QueueDepth(t, c, dest); v == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkExactlyOnce(t, clitest.DrainBodies(t, c, dest), n, 0)
}
