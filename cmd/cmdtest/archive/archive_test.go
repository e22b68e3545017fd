package archive

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestArchiveFlagsParseIntoOptions(t *testing.T) {
	var got *cmd.ArchiveOptions
	f := &cmd.Factory{IO: output.Test(nil, io.Discard, io.Discard, false)}
	c := cmd.NewCmdArchive(f, func(_ context.Context, o *cmd.ArchiveOptions) error { got = o; return nil })
	c.SetArgs([]string{"orders-dlq", "--to", "s3://acme-archive/prod/", "--part-size", "16MiB", "--part-records", "500",
		"--class", "permanent", "--delete", "--sse", "aws:kms", "--kms-key-id", "alias/dlq", "--max", "7"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Queue != "orders-dlq" || got.Dest != (archive.Location{Bucket: "acme-archive", Key: "prod"}) || got.PartSize != 16<<20 ||
		got.PartRecords != 500 || !got.Delete || got.SSE != "aws:kms" || got.KMSKeyID != "alias/dlq" || got.Max != 7 ||
		len(got.Selection.Classes) != 1 {
		t.Fatalf("options %+v", got)
	}
}

func TestArchiveBadInputExitsTwo(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"archive", "q"}, "--to s3://BUCKET/PREFIX"},
		{[]string{"archive", "q", "--to", "/tmp/x"}, "not an S3 location"},
		{[]string{"archive", "q", "--to", "s3://Bad_Bucket/x"}, "bucket name"},
		{[]string{"archive", "q", "--to", "s3://bucket/x", "--part-size", "lots"}, "--part-size"},
		{[]string{"archive", "q", "--to", "s3://bucket/x", "--part-size", "10GiB"}, "5GiB"},
		{[]string{"archive", "q", "--to", "s3://bucket/x", "--kms-key-id", "k"}, "--sse aws:kms"},
		{[]string{"archive", "q", "--to", "s3://bucket/x", "--sse", "rot13"}, "--sse"},
		{[]string{"archive", "q", "--to", "s3://bucket/x", "--class", "nonsense"}, "unknown class"},
		{[]string{"archive", "verify"}, "one archive run"},
		{[]string{"restore", "s3://bucket/m.json"}, "--to QUEUE"},
		{[]string{"restore", "s3://bucket/m.json", "--to", "q", "--rate", "5", "--ramp", "1,2"}, "--ramp alone"},
		{[]string{"restore", "/no/such/manifest.json", "--to", "q"}, "not an archive manifest"},
	}
	for _, tc := range cases {
		r := clitest.Run(t, testenv.Env{}, "", tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// archiveFixture is a fresh incident (this test changes queues) and bucket.
type archiveFixture struct {
	env    testenv.Env
	truth  *seed.Truth
	s3     *s3.Client
	sqs    *awssqs.Client
	bucket string
}

func newArchiveFixture(t *testing.T) *archiveFixture {
	t.Helper()
	env := testenv.Require(t)
	a := &archiveFixture{env: env, s3: env.S3(t), sqs: env.SQS(t)}
	truth, err := seed.Incident(t.Context(), a.sqs, seed.Options{Prefix: testenv.UniqueName(t, "ar")})
	if err != nil {
		t.Fatal(err)
	}
	a.truth = truth
	a.bucket = strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "cli"), "_", "-"))
	if _, err := a.s3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(a.bucket)}); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *archiveFixture) objects(t *testing.T) []string {
	t.Helper()
	out, err := a.s3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(a.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

func TestArchiveDeleteNeedsYesAndMissingBucketChangesNothing(t *testing.T) {
	a := newArchiveFixture(t)
	dlq := a.truth.DLQ
	n := len(a.truth.InQueue(dlq.Name))

	r := clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/x", "--delete")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("--delete without --yes in a script: exit %d, stderr %q; want exit 2 asking for --yes", r.Code, r.Stderr)
	}
	r = clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://no-such-bucket-dlqctl-5/x", "--delete", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "does not exist") {
		t.Fatalf("missing bucket: exit %d, stderr %q; want exit 2 naming the bucket", r.Code, r.Stderr)
	}
	if v, inflight := clitest.SettledDepth(t, a.sqs, dlq.URL); v != n || inflight != 0 {
		t.Fatalf("after refused runs %s has %d visible / %d in flight, want %d / 0", dlq.Name, v, inflight, n)
	}
	if keys := a.objects(t); len(keys) != 0 {
		t.Fatalf("refused runs wrote %v", keys)
	}

	// On a terminal --delete asks; anything but y/yes changes nothing.
	clitest.SetStackEnv(t, a.env)
	var out, errOut bytes.Buffer
	code := cmd.Run(t.Context(), output.Test(strings.NewReader("n\n"), &out, &errOut, true),
		[]string{"archive", dlq.Name, "--to", "s3://" + a.bucket + "/x", "--delete"})
	if code != 2 || !strings.Contains(errOut.String(), "[y/N]") || !strings.Contains(errOut.String(), "not confirmed") {
		t.Fatalf("declined prompt: exit %d, stderr %q; want the question and exit 2", code, errOut.String())
	}
	if v, inflight := clitest.SettledDepth(t, a.sqs, dlq.URL); v != n || inflight != 0 || len(a.objects(t)) != 0 {
		t.Fatalf("after a declined prompt: %d visible / %d in flight, objects %v", v, inflight, a.objects(t))
	}

	// --dry-run reports and changes nothing.
	r = clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/x", "--delete", "--dry-run", "-o", "json")
	var pl cmd.ArchivePlanOutput
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &pl) != nil || pl.Selected != n || pl.Parts != 1 || pl.Bytes <= 0 {
		t.Fatalf("dry run: exit %d %s %+v", r.Code, r.Stderr, pl)
	}
	if v, _ := clitest.QueueDepth(t, a.sqs, dlq.URL); v != n || len(a.objects(t)) != 0 {
		t.Fatalf("--dry-run changed something: %d visible, objects %v", v, a.objects(t))
	}
}

// TestArchiveVerifyTriageRestoreRoundTrip archives both DLQs of an incident
// with --delete, checks the archive against the seeded truth through every
// reader (verify, group/classify/sample --from S3 and local copies), restores
// to recovery queues and compares the copies with the truth.
func TestArchiveVerifyTriageRestoreRoundTrip(t *testing.T) {
	a := newArchiveFixture(t)
	stateDir := t.TempDir()
	for _, dlq := range []seed.Queue{a.truth.DLQ, a.truth.FIFODLQ} {
		want := a.truth.InQueue(dlq.Name)
		r := clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/incident", "--delete", "--yes", "--part-records", "10", "-o", "json")
		var sum cmd.ArchiveSummary
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil {
			t.Fatalf("archive %s: exit %d\n%s\n%s", dlq.Name, r.Code, r.Stdout, r.Stderr)
		}
		if sum.Status != "completed" || sum.Run.Totals.Records != len(want) || sum.Run.Totals.Deleted != len(want) || !sum.Run.Deleted {
			t.Fatalf("archive %s summary %+v", dlq.Name, sum)
		}
		if v, inflight := clitest.SettledDepth(t, a.sqs, dlq.URL); v+inflight != 0 {
			t.Fatalf("%s still holds %d+%d messages after archive --delete", dlq.Name, v, inflight)
		}
		wantPrefix := "s3://" + a.bucket + "/incident/queue=" + dlq.Name + "/dt=" + sum.Run.StartedAt.UTC().Format("2006-01-02") + "/run=" + sum.Run.RunID + "/"
		if !strings.HasPrefix(sum.Manifest, wantPrefix) || !strings.HasSuffix(sum.Manifest, "/_manifest.json") {
			t.Fatalf("manifest %s, want under %s", sum.Manifest, wantPrefix)
		}

		// verify, from S3 and from a local copy of the run directory.
		if r := clitest.Run(t, a.env, "", "archive", "verify", sum.Manifest); r.Code != 0 || !strings.Contains(r.Stderr, "archive ok") {
			t.Fatalf("verify: exit %d %s", r.Code, r.Stderr)
		}
		local := a.download(t, sum.Manifest)
		if r := clitest.Run(t, testenv.Env{}, "", "archive", "verify", filepath.Join(local, archive.ManifestName), "-o", "json"); r.Code != 0 {
			t.Fatalf("verify local copy: exit %d %s", r.Code, r.Stderr)
		}

		// Offline triage reads the archive like the queue it came from.
		for _, from := range []string{sum.Manifest, filepath.Join(local, archive.ManifestName)} {
			rep := clitest.DecodeGroupReport(t, clitest.Run(t, a.env, "", "group", "--from", from, "--by", "class", "-o", "json"))
			if rep.Read != len(want) {
				t.Errorf("group --from %s read %d records, want %d", from, rep.Read, len(want))
			}
			if r := clitest.Run(t, a.env, "", "classify", "--from", from, "--summary", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"matched": `) {
				t.Errorf("classify --from %s: exit %d %s", from, r.Code, r.Stderr)
			}
		}
		recs := clitest.SampleArchive(t, a.env, sum.Manifest)
		checkRecordsAgainstTruth(t, recs, want)
		// Parts read directly: the first from the local copy, the last from S3.
		partRecs := clitest.SampleArchive(t, a.env, filepath.Join(local, "part-00001.ndjson.gz"))
		if n := len(sum.Run.Parts); n > 1 {
			partRecs = append(partRecs, clitest.SampleArchive(t, a.env, "s3://"+a.bucket+"/"+sum.Run.Parts[n-1].Key)...)
		}
		if wantN := sum.Run.Parts[0].Records + sum.Run.Parts[len(sum.Run.Parts)-1].Records*min(1, len(sum.Run.Parts)-1); len(partRecs) != wantN {
			t.Errorf("first and last part read directly hold %d records, want %d", len(partRecs), wantN)
		}

		// restore to a recovery queue: exact copies, FIFO groups in order.
		recovery := dlq.Name[:len(dlq.Name)-len(path.Ext(dlq.Name))] + "-recovery"
		if dlq.FIFO {
			recovery = strings.TrimSuffix(dlq.Name, ".fifo") + "-recovery.fifo"
		}
		in := &awssqs.CreateQueueInput{QueueName: aws.String(recovery)}
		if dlq.FIFO {
			in.Attributes = map[string]string{"FifoQueue": "true"}
		}
		out, err := a.sqs.CreateQueue(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if r := clitest.Run(t, a.env, "", "restore", sum.Manifest, "--to", recovery, "--dry-run", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"would_move": `+clitest.Itoa(len(want))) ||
			strings.Contains(r.Stderr, "other queues") {
			t.Fatalf("restore --dry-run to a recovery queue: exit %d %s %s (want no warning about sources)", r.Code, r.Stdout, r.Stderr)
		}
		if !dlq.FIFO {
			// Two queues dead-letter to this DLQ: a dry run --to one of
			// them says how many came from the other, which the restore
			// would send there too.
			fromPayments := 0
			for _, m := range want {
				if m.SourceName == a.truth.Payments.Name {
					fromPayments++
				}
			}
			r := clitest.Run(t, a.env, "", "restore", sum.Manifest, "--to", a.truth.Orders.Name, "--dry-run", "-o", "json")
			var pl struct {
				Sources map[string]int `json:"sources"`
			}
			if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &pl) != nil || pl.Sources[a.truth.Payments.Name] != fromPayments || pl.Sources[a.truth.Orders.Name] != len(want)-fromPayments ||
				!strings.Contains(r.Stderr, fmt.Sprintf("%d of the messages to restore were dead-lettered from other queues than %s (%s %d)", fromPayments, a.truth.Orders.Name, a.truth.Payments.Name, fromPayments)) {
				t.Fatalf("restore --dry-run --to %s of a two-source archive (%d from %s): exit %d\n%s\n%s", a.truth.Orders.Name, fromPayments, a.truth.Payments.Name, r.Code, r.Stdout, r.Stderr)
			}
			// The run itself (no selection: every record is sent) warns
			// before it asks; unconfirmed, nothing is sent.
			before, _ := clitest.QueueDepth(t, a.sqs, a.truth.Orders.URL)
			r = clitest.Run(t, a.env, "", "restore", sum.Manifest, "--to", a.truth.Orders.Name)
			if r.Code != 2 || !strings.Contains(r.Stderr, fmt.Sprintf("%d of the messages to restore were dead-lettered from other queues than %s", fromPayments, a.truth.Orders.Name)) {
				t.Fatalf("restore --to %s of a two-source archive without --yes: exit %d\n%s; want the warning, then exit 2", a.truth.Orders.Name, r.Code, r.Stderr)
			}
			if v, _ := clitest.QueueDepth(t, a.sqs, a.truth.Orders.URL); v != before {
				t.Fatalf("an unconfirmed restore sent %d messages to %s", v-before, a.truth.Orders.Name)
			}
		}
		if v, _ := clitest.QueueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v != 0 {
			t.Fatalf("restore --dry-run sent %d messages", v)
		}
		if dlq.FIFO {
			// One sender keeps each group's order: --concurrency is
			// refused once the destination is known to be FIFO, before
			// anything is sent.
			r := clitest.Run(t, a.env, "", "--state-dir", stateDir, "restore", sum.Manifest, "--to", recovery, "--concurrency", "4", "--yes")
			if r.Code != 2 || !strings.Contains(r.Stderr, "--concurrency needs a destination several senders can send to at once") || !strings.Contains(r.Stderr, "FIFO queue keeps a message group's order") {
				t.Fatalf("restore to a FIFO queue with --concurrency 4: exit %d %s; want exit 2 with the refusal", r.Code, r.Stderr)
			}
			if v, inflight := clitest.QueueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v+inflight != 0 {
				t.Fatalf("a refused restore sent %d+%d messages", v, inflight)
			}
		}
		r = clitest.Run(t, a.env, "", "--state-dir", stateDir, "restore", sum.Manifest, "--to", recovery, "--yes", "-o", "json")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"moved": `+clitest.Itoa(len(want))) {
			t.Fatalf("restore: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		copies := a.readAll(t, aws.ToString(out.QueueUrl))
		checkRecordsAgainstTruth(t, stripMarker(t, copies), want)
		if dlq.FIFO {
			checkGroupOrder(t, copies, want)
		}

		// The same restore again is refused: an archive never drains, so
		// it would send every message twice.
		r = clitest.Run(t, a.env, "", "--state-dir", stateDir, "restore", sum.Manifest, "--to", recovery, "--yes")
		if r.Code != 2 || !strings.Contains(r.Stderr, "--again") {
			t.Fatalf("second restore: exit %d %s; want exit 2 pointing at --again", r.Code, r.Stderr)
		}
		if v, inflight := clitest.QueueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v+inflight != len(want) {
			t.Fatalf("%s holds %d+%d after a refused second restore, want %d", recovery, v, inflight, len(want))
		}
	}
}

func TestVerifyAndRestoreRefuseATamperedArchive(t *testing.T) {
	a := newArchiveFixture(t)
	dlq := a.truth.DLQ
	r := clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/t", "--part-records", "20", "-o", "json")
	var sum cmd.ArchiveSummary
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil {
		t.Fatalf("archive: exit %d %s", r.Code, r.Stderr)
	}
	// Overwrite part 2 behind dlqctl's back with one line changed.
	key := sum.Run.Parts[1].Key
	obj, err := a.s3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(a.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	data[len(data)/2] ^= 0x01
	if _, err := a.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(a.bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, a.env, "", "archive", "verify", sum.Manifest)
	if r.Code != 3 || !strings.Contains(r.Stdout, "FAIL") || !strings.Contains(r.Stderr, "1 of 3 part(s)") {
		t.Fatalf("verify of a tampered part: exit %d\n%s\n%s; want exit 3 naming the part", r.Code, r.Stdout, r.Stderr)
	}
	out, err := a.sqs.CreateQueue(t.Context(), &awssqs.CreateQueueInput{QueueName: aws.String(dlq.Name + "-rec")})
	if err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, a.env, "", "--state-dir", t.TempDir(), "restore", sum.Manifest, "--to", dlq.Name+"-rec", "--yes")
	if r.Code != 3 || !strings.Contains(r.Stderr, "nothing was sent") {
		t.Fatalf("restore of a tampered archive: exit %d %s; want exit 3", r.Code, r.Stderr)
	}
	if v, _ := clitest.QueueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v != 0 {
		t.Fatalf("restore of a tampered archive sent %d messages", v)
	}
}

// download copies the run directory of manifest (s3://…) to a temp dir.
func (a *archiveFixture) download(t *testing.T, manifest string) string {
	t.Helper()
	loc, _ := archive.ParseS3URI(manifest)
	dir := t.TempDir()
	out, err := a.s3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(a.bucket), Prefix: aws.String(path.Dir(loc.Key) + "/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		obj, err := a.s3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(a.bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err := os.WriteFile(filepath.Join(dir, path.Base(aws.ToString(o.Key))), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readAll reads every message of a queue in receive order (non-destructive).
func (a *archiveFixture) readAll(t *testing.T, url string) []record.Record {
	t.Helper()
	c := sqs.New(a.sqs, a.env.Region)
	q, err := c.Resolve(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var recs []record.Record
	if _, err := inspect.Scan(t.Context(), sqs.NewEndpoint(c, q), inspect.ScanOptions{Workers: 1}, func(m *record.Record, _ any) error {
		recs = append(recs, *m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// stripMarker checks and removes the dlqctl-redrive marker every restored
// copy carries, leaving the original attributes.
func stripMarker(t *testing.T, recs []record.Record) []record.Record {
	t.Helper()
	for i := range recs {
		if _, ok := recs[i].Attributes[record.MarkerAttribute]; !ok && len(recs[i].Attributes) < sqs.MaxAttributes {
			t.Errorf("restored copy %s has no %s attribute", recs[i].MessageID, record.MarkerAttribute)
		}
		delete(recs[i].Attributes, record.MarkerAttribute)
	}
	return recs
}

// checkRecordsAgainstTruth asserts recs hold each seeded message exactly
// once with its exact body, attributes (binary included) and FIFO group.
func checkRecordsAgainstTruth(t *testing.T, recs []record.Record, want []seed.Seeded) {
	t.Helper()
	if len(recs) != len(want) {
		t.Errorf("%d records, want %d", len(recs), len(want))
	}
	bySHA := map[string][]record.Record{}
	for _, r := range recs {
		bySHA[record.SHA256Hex(r.Body)] = append(bySHA[record.SHA256Hex(r.Body)], r)
	}
	for _, s := range want {
		got := bySHA[s.BodySHA256]
		if len(got) != 1 {
			t.Errorf("seeded %s message %s appears %d times, want once", s.Kind, s.MessageID, len(got))
			continue
		}
		r := got[0]
		if len(r.Attributes) != len(s.Attributes) {
			t.Errorf("%s message %s: %d attributes, want %d", s.Kind, s.MessageID, len(r.Attributes), len(s.Attributes))
		}
		for name, av := range s.Attributes {
			ra := r.Attributes[name]
			wantVal := aws.ToString(av.StringValue)
			gotVal := ra.Value
			if av.BinaryValue != nil {
				wantVal, gotVal = base64.StdEncoding.EncodeToString(av.BinaryValue), ra.Base64
			}
			if ra.Type != aws.ToString(av.DataType) || gotVal != wantVal {
				t.Errorf("%s message %s attribute %s = %s %q, want %s %q", s.Kind, s.MessageID, name, ra.Type, gotVal, aws.ToString(av.DataType), wantVal)
			}
		}
		if r.System.MessageGroupID != s.GroupID {
			t.Errorf("%s message %s: group %q, want %q", s.Kind, s.MessageID, r.System.MessageGroupID, s.GroupID)
		}
	}
}

// checkGroupOrder asserts that within each FIFO group the copies arrive in
// the seeded order.
func checkGroupOrder(t *testing.T, recs []record.Record, want []seed.Seeded) {
	t.Helper()
	seq := map[string]int{}
	for _, s := range want {
		seq[s.BodySHA256] = s.GroupSeq
	}
	last := map[string]int{}
	for _, r := range recs {
		g := r.System.MessageGroupID
		n := seq[record.SHA256Hex(r.Body)]
		if prev, ok := last[g]; ok && n < prev {
			t.Errorf("group %s: message #%d arrived after #%d", g, n, prev)
		}
		last[g] = n
	}
}

// legacyCopy rewrites the run of manifest (s3://…/_manifest.json) as an
// older dlqctl wrote it: the same parts under
// PREFIX/<queue>/<yyyy>/<mm>/<dd>/<run-id>/ and a manifest.json next to
// them listing those keys. It returns the legacy manifest's URI.
func (a *archiveFixture) legacyCopy(t *testing.T, manifest, prefix string) string {
	t.Helper()
	loc, _ := archive.ParseS3URI(manifest)
	ref := archive.Ref{Src: archive.S3Source{API: a.s3, Bucket: loc.Bucket}, Key: loc.Key}
	m, err := archive.ReadManifest(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	dir := archive.LegacyRunDir(prefix, m.Queue.Name, m.StartedAt, m.RunID)
	for i, p := range m.Parts {
		key := path.Join(dir, path.Base(p.Key))
		if _, err := a.s3.CopyObject(t.Context(), &s3.CopyObjectInput{Bucket: aws.String(a.bucket), Key: aws.String(key),
			CopySource: aws.String(a.bucket + "/" + p.Key)}); err != nil {
			t.Fatal(err)
		}
		m.Parts[i].Key = key
	}
	m.Prefix = prefix
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	key := path.Join(dir, archive.LegacyManifestName)
	if _, err := a.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(a.bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
	return "s3://" + a.bucket + "/" + key
}

// TestArchiveLayoutIsPartitionedAndOldLayoutStillReads checks the layout
// query engines read (queue=/dt=/run= folders holding only parts, the
// manifest named _manifest.json), every form --from takes (a run folder,
// queue= and dt= prefixes, the archive prefix, local folders), and that a
// run in the layout older dlqctl versions wrote (…/<queue>/<yyyy>/<mm>/<dd>/
// <run-id>/manifest.json) still verifies, reads with --from and restores.
func TestArchiveLayoutIsPartitionedAndOldLayoutStillReads(t *testing.T) {
	a := newArchiveFixture(t)
	dlq := a.truth.DLQ
	want := a.truth.InQueue(dlq.Name)
	r := clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/lake", "--part-records", "25", "-o", "json")
	var sum cmd.ArchiveSummary
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil {
		t.Fatalf("archive: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	day := sum.Run.StartedAt.UTC().Format("2006-01-02")
	runDir := "lake/queue=" + dlq.Name + "/dt=" + day + "/run=" + sum.Run.RunID + "/"
	for _, k := range a.objects(t) {
		base := path.Base(k)
		switch {
		case !strings.HasPrefix(k, runDir):
			t.Errorf("object %s is outside the run folder %s", k, runDir)
		case base == archive.ManifestName:
		case strings.HasPrefix(base, "part-") && strings.HasSuffix(base, ".ndjson.gz"):
		default:
			t.Errorf("object %s in a data folder is neither a record part nor _-prefixed", k)
		}
	}
	if sum.Manifest != "s3://"+a.bucket+"/"+runDir+archive.ManifestName {
		t.Fatalf("manifest %s, want %s", sum.Manifest, runDir+archive.ManifestName)
	}

	legacy := a.legacyCopy(t, sum.Manifest, "old")
	legacyDir := strings.TrimSuffix(legacy, archive.LegacyManifestName)
	if !strings.Contains(legacy, "/old/"+dlq.Name+"/"+sum.Run.StartedAt.UTC().Format("2006/01/02")+"/"+sum.Run.RunID+"/manifest.json") {
		t.Fatalf("legacy copy at %s", legacy)
	}
	bucket := "s3://" + a.bucket
	count := func(from string) int {
		t.Helper()
		rep := clitest.DecodeGroupReport(t, clitest.Run(t, a.env, "", "group", "--from", from, "--by", "class", "-o", "json"))
		return rep.Read
	}
	for from, n := range map[string]int{
		sum.Manifest:                       len(want), // the run's manifest
		bucket + "/" + runDir:              len(want), // the run folder
		bucket + "/lake/queue=" + dlq.Name: len(want), // every run of the queue
		bucket + "/lake/queue=" + dlq.Name + "/dt=" + day + "/": len(want), // every run of the day
		legacy:                            len(want),     // the old layout's manifest.json
		legacyDir:                         len(want),     // its run folder
		bucket + "/old/" + dlq.Name + "/": len(want),     // its queue prefix
		bucket:                            2 * len(want), // both runs in the bucket
	} {
		if got := count(from); got != n {
			t.Errorf("group --from %s read %d records, want %d", from, got, n)
		}
	}
	// classify and sample over the old layout see the seeded messages.
	if r := clitest.Run(t, a.env, "", "classify", "--from", legacyDir, "--summary", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"matched": `) {
		t.Errorf("classify --from %s: exit %d %s", legacyDir, r.Code, r.Stderr)
	}
	checkRecordsAgainstTruth(t, clitest.SampleArchive(t, a.env, legacy), want)

	// verify: new and old layout, manifest or folder, S3 or local copy.
	for _, m := range []string{sum.Manifest, bucket + "/" + runDir, legacy, legacyDir} {
		if r := clitest.Run(t, a.env, "", "archive", "verify", m); r.Code != 0 || !strings.Contains(r.Stderr, "archive ok") {
			t.Errorf("verify %s: exit %d %s", m, r.Code, r.Stderr)
		}
	}
	localNew, localOld := a.download(t, sum.Manifest), a.download(t, legacy)
	for _, m := range []string{localNew, localOld, filepath.Join(localOld, archive.LegacyManifestName)} {
		if r := clitest.Run(t, testenv.Env{}, "", "archive", "verify", m); r.Code != 0 {
			t.Errorf("verify local %s: exit %d %s", m, r.Code, r.Stderr)
		}
		if got := count(m); got != len(want) {
			t.Errorf("group --from local %s read %d, want %d", m, got, len(want))
		}
	}
	// A folder holding several runs is one input for triage, but verify
	// and restore need one run: exit 2 naming the choice.
	parent := t.TempDir()
	for _, d := range []string{localNew, localOld} {
		if err := os.Rename(d, filepath.Join(parent, filepath.Base(d))); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(parent); got != 2*len(want) {
		t.Errorf("group --from a folder of two local runs read %d, want %d", got, 2*len(want))
	}
	// verify of a prefix checks every run under it; restore needs one run.
	r = clitest.Run(t, a.env, "", "archive", "verify", bucket, "-o", "json")
	var runs cmd.ArchiveVerifyRuns
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &runs) != nil || !runs.OK || len(runs.Runs) != 2 || runs.Runs[0].Records+runs.Runs[1].Records != 2*len(want) {
		t.Errorf("verify of a prefix with two runs: exit %d\n%s\n%s; want both runs verified", r.Code, r.Stdout, r.Stderr)
	}
	if r := clitest.Run(t, a.env, "", "--state-dir", t.TempDir(), "restore", bucket, "--to", dlq.Name, "--yes"); r.Code != 2 || !strings.Contains(r.Stderr, "2 archive runs") {
		t.Errorf("restore of a prefix with two runs: exit %d %q; want exit 2 asking for one run", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, a.env, "", "group", "--from", bucket+"/nothing-here/", "--by", "class"); r.Code != 2 || !strings.Contains(r.Stderr, "no archive runs") && !strings.Contains(r.Stderr, "does not exist") {
		t.Errorf("--from an empty prefix: exit %d %q; want exit 2", r.Code, r.Stderr)
	}

	// restore from the old layout's run folder, then the same run by its
	// manifest: one restore, refused the second time.
	out, err := a.sqs.CreateQueue(t.Context(), &awssqs.CreateQueueInput{QueueName: aws.String(dlq.Name + "-old-rec")})
	if err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	r = clitest.Run(t, a.env, "", "--state-dir", stateDir, "restore", legacyDir, "--to", dlq.Name+"-old-rec", "--yes", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"moved": `+clitest.Itoa(len(want))) {
		t.Fatalf("restore from the old layout: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	checkRecordsAgainstTruth(t, stripMarker(t, a.readAll(t, aws.ToString(out.QueueUrl))), want)
	r = clitest.Run(t, a.env, "", "--state-dir", stateDir, "restore", legacy, "--to", dlq.Name+"-old-rec", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--again") {
		t.Fatalf("restore of the same run by its manifest after its folder: exit %d %s; want exit 2 pointing at --again", r.Code, r.Stderr)
	}
}

// duckdbRunner returns the path of scripts/duckdb/run.mjs once node and the
// pinned @duckdb/node-api (scripts/tools.sh installs them) are there. In
// CI (or with the stack required) their absence fails the test.
func duckdbRunner(t *testing.T) string {
	t.Helper()
	runner := clitest.RepoPath(t, "scripts", "duckdb", "run.mjs")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(filepath.Dir(runner), "node_modules", "@duckdb", "node-api", "package.json"))
	if nodeErr != nil || modErr != nil {
		msg := "the DuckDB engine is not installed (node and scripts/duckdb/node_modules); run scripts/tools.sh"
		if os.Getenv("CI") != "" || os.Getenv("DLQCTL_REQUIRE_STACK") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return runner
}

// docQueries returns the ```sql duckdb blocks of a markdown document by
// their "-- name: X" first line.
func docQueries(t *testing.T, doc string) (map[string]string, []string) {
	t.Helper()
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	var order []string
	for _, m := range regexp.MustCompile("(?ms)^```sql duckdb\n(.*?)^```").FindAllStringSubmatch(string(md), -1) {
		first, _, _ := strings.Cut(m[1], "\n")
		name, ok := strings.CutPrefix(strings.TrimSpace(first), "-- name: ")
		if !ok {
			t.Fatalf("%s: a duckdb block does not start with '-- name: …': %q", doc, first)
		}
		blocks[name] = m[1]
		order = append(order, name)
	}
	return blocks, order
}

// duckResult is one block's result from run.mjs.
type duckResult struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// rows returns the result as maps by column name, values as strings.
func (d duckResult) maps() []map[string]string {
	var out []map[string]string
	for _, r := range d.Rows {
		m := map[string]string{}
		for i, c := range d.Columns {
			if r[i] != nil {
				m[c] = fmt.Sprint(r[i])
			}
		}
		out = append(out, m)
	}
	return out
}

func runDuckDB(t *testing.T, runner, dir string, blocks []string) []duckResult {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"dir": dir, "blocks": blocks})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", runner)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	var res []duckResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(blocks) {
		t.Fatalf("duckdb output (%v): %s", err, out)
	}
	return res
}

// downloadPrefix copies every object under prefix to dir, keeping the key
// below prefix as the relative path (partition folders included).
func (a *archiveFixture) downloadPrefix(t *testing.T, prefix, dir string) {
	t.Helper()
	p := s3.NewListObjectsV2Paginator(a.s3, &s3.ListObjectsV2Input{Bucket: aws.String(a.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			obj, err := a.s3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(a.bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(obj.Body)
			obj.Body.Close()
			dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(aws.ToString(o.Key), prefix)))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// groupCounts runs group --from with one key and returns count by value.
func groupCounts(t *testing.T, from, by string) map[string]int {
	t.Helper()
	rep := clitest.DecodeGroupReport(t, clitest.Run(t, testenv.Env{}, "", "group", "--from", from, "--by", by, "-o", "json"))
	out := map[string]int{}
	for _, g := range rep.Groups {
		out[g.Key[by]] += g.Count
	}
	return out
}

// TestArchiveQueriesDocRunInDuckDB runs the DuckDB queries of
// docs/archive-queries.md exactly as written, with the real engine
// (@duckdb/node-api), over a local copy of an archive of two DLQs, and
// checks every answer against dlqctl group/classify --from on the same
// copy: counts by class and by source per day and queue, the top error
// fingerprints, and the message ids of one tenant. The archive includes
// envelopes whose event_version is a string ("v0", "2.1") next to numeric
// ones, which the declared schema reads as it is.
func TestArchiveQueriesDocRunInDuckDB(t *testing.T) {
	runner := duckdbRunner(t)
	blocks, order := docQueries(t, clitest.RepoPath(t, "docs", "archive-queries.md"))
	for _, n := range []string{"view", "counts-by-class", "counts-by-source", "top-error-fingerprints", "tenant-message-ids"} {
		if blocks[n] == "" {
			t.Fatalf("docs/archive-queries.md has no duckdb block named %q (has %v)", n, order)
		}
	}
	if order[0] != "view" {
		t.Fatalf("the first duckdb block must be the view, not %q", order[0])
	}
	a := newArchiveFixture(t)
	for _, body := range []string{
		`{"version":"0","id":"eb-1","detail-type":"OrderShipped","source":"acme.shipping","time":"2026-11-30T03:00:00Z","detail":{"orderId":"o-9","tenantId":"t-acme"}}`,
		`{"eventId":"ev-21","eventType":"OrderCreated","eventVersion":"2.1","tenantId":"t-acme","payload":{"orderId":"o-21"}}`,
		`{"eventId":"ev-22","eventType":"OrderCreated","eventVersion":"v0","payload":{"orderId":"o-22"}}`,
	} {
		if _, err := a.sqs.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(a.truth.DLQ.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	days := map[string]bool{}
	for _, args := range [][]string{{a.truth.DLQ.Name}, {a.truth.FIFODLQ.Name, "--delete", "--yes"}} {
		r := clitest.Run(t, a.env, "", append([]string{"archive", "--to", "s3://" + a.bucket + "/lake", "--part-records", "20", "-o", "json"}, args...)...)
		var sum cmd.ArchiveSummary
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil || sum.Status != "completed" {
			t.Fatalf("archive %v: exit %d\n%s\n%s", args, r.Code, r.Stdout, r.Stderr)
		}
		days[sum.Run.StartedAt.UTC().Format("2006-01-02")] = true
	}
	local := t.TempDir()
	a.downloadPrefix(t, "lake/", local)

	// Every doc block in order (the view first), plus one check of the
	// mixed-type event versions over the doc's view.
	var sqls []string
	for _, n := range order {
		sqls = append(sqls, blocks[n])
	}
	sqls = append(sqls, `SELECT envelope.event_version AS v, count(*) AS n FROM dlq WHERE envelope.event_version IS NOT NULL GROUP BY ALL ORDER BY v`)
	res := runDuckDB(t, runner, local, sqls)
	byName := map[string]duckResult{}
	for i, n := range order {
		byName[n] = res[i]
	}

	queues := []string{a.truth.DLQ.Name, a.truth.FIFODLQ.Name}
	for _, key := range []struct{ block, col, by string }{{"counts-by-class", "class", "class"}, {"counts-by-source", "source", "source"}} {
		got := map[string]map[string]int{}
		for _, row := range byName[key.block].maps() {
			if !days[row["dt"]] {
				t.Errorf("%s: dt %q is not the day the runs started (%v)", key.block, row["dt"], days)
			}
			if got[row["queue"]] == nil {
				got[row["queue"]] = map[string]int{}
			}
			n, _ := strconv.Atoi(row["messages"])
			got[row["queue"]][row[key.col]] += n
		}
		for _, q := range queues {
			want := groupCounts(t, filepath.Join(local, "queue="+q), key.by)
			if !maps.Equal(got[q], want) {
				t.Errorf("%s for %s: duckdb %v, dlqctl group --by %s %v", key.block, q, got[q], key.by, want)
			}
		}
	}
	// Class counts over both queues agree with classify --summary too.
	var summary struct {
		Classes []struct {
			Class string `json:"class"`
			Count int    `json:"count"`
		} `json:"classes"`
	}
	r := clitest.Run(t, testenv.Env{}, "", "classify", "--from", local, "--summary", "-o", "json")
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &summary) != nil {
		t.Fatalf("classify --from %s --summary: exit %d %s", local, r.Code, r.Stderr)
	}
	duckClasses, classified := map[string]int{}, map[string]int{}
	for _, row := range byName["counts-by-class"].maps() {
		n, _ := strconv.Atoi(row["messages"])
		duckClasses[row["class"]] += n
	}
	for _, c := range summary.Classes {
		classified[c.Class] += c.Count
	}
	if !maps.Equal(duckClasses, classified) || len(classified) < 3 {
		t.Errorf("classes: duckdb %v, dlqctl classify --summary %v", duckClasses, classified)
	}

	// Top error fingerprints: the 20 largest groups of group --by error.
	errs := groupCounts(t, local, "error")
	fps := byName["top-error-fingerprints"].maps()
	if len(fps) != min(20, len(errs)) || len(fps) < 3 {
		t.Errorf("top-error-fingerprints returned %d rows; dlqctl group --by error has %d groups", len(fps), len(errs))
	}
	last := int(^uint(0) >> 1)
	for _, row := range fps {
		n, _ := strconv.Atoi(row["messages"])
		if errs[row["error_fingerprint"]] != n || n > last {
			t.Errorf("fingerprint %q: duckdb %d (after %d), dlqctl group --by error %d", row["error_fingerprint"], n, last, errs[row["error_fingerprint"]])
		}
		last = n
	}

	// The tenant's message ids: the same set classify --filter selects,
	// as many as group --by tenant counts.
	var duckIDs []string
	for _, row := range byName["tenant-message-ids"].maps() {
		duckIDs = append(duckIDs, row["message_id"])
	}
	r = clitest.Run(t, testenv.Env{}, "", "classify", "--from", local, "-o", "ndjson", "--filter",
		`(.envelope.tenant_id // .attributes.tenant.value // .attributes.tenantId.value // .attributes.tenant_id.value) == "t-acme"`)
	if r.Code != 0 {
		t.Fatalf("classify --from --filter: exit %d %s", r.Code, r.Stderr)
	}
	var dlqIDs []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var rec struct {
			MessageID string `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("classify ndjson line %q: %v", line, err)
		}
		dlqIDs = append(dlqIDs, rec.MessageID)
	}
	slices.Sort(dlqIDs)
	if !slices.Equal(duckIDs, dlqIDs) || len(duckIDs) != groupCounts(t, local, "tenant")["t-acme"] || len(duckIDs) < 3 {
		t.Errorf("tenant t-acme: duckdb %d ids %v\ndlqctl classify --filter %d ids %v", len(duckIDs), duckIDs, len(dlqIDs), dlqIDs)
	}

	// event_version: numbers and strings side by side, read as text.
	versions := map[string]int{}
	for _, row := range res[len(res)-1].maps() {
		n, _ := strconv.Atoi(row["n"])
		versions[row["v"]] = n
	}
	if versions["v0"] != 1 || versions["2.1"] != 1 || versions["2"] == 0 {
		t.Errorf("event versions read by duckdb: %v; want the string versions v0 and 2.1 next to the numeric 2", versions)
	}
}
