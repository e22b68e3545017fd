package cmd

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

func TestArchiveFlagsParseIntoOptions(t *testing.T) {
	var got *ArchiveOptions
	f := &Factory{IO: output.Test(nil, io.Discard, io.Discard, false)}
	c := NewCmdArchive(f, func(_ context.Context, o *ArchiveOptions) error { got = o; return nil })
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
		r := runCLI(t, testenv.Env{}, "", tc.args...)
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
	sqs    *sqs.Client
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

	r := runCLI(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/x", "--delete")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("--delete without --yes in a script: exit %d, stderr %q; want exit 2 asking for --yes", r.Code, r.Stderr)
	}
	r = runCLI(t, a.env, "", "archive", dlq.Name, "--to", "s3://no-such-bucket-dlqctl-5/x", "--delete", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "does not exist") {
		t.Fatalf("missing bucket: exit %d, stderr %q; want exit 2 naming the bucket", r.Code, r.Stderr)
	}
	if v, inflight := settledDepth(t, a.sqs, dlq.URL); v != n || inflight != 0 {
		t.Fatalf("after refused runs %s has %d visible / %d in flight, want %d / 0", dlq.Name, v, inflight, n)
	}
	if keys := a.objects(t); len(keys) != 0 {
		t.Fatalf("refused runs wrote %v", keys)
	}

	// On a terminal --delete asks; anything but y/yes changes nothing.
	setStackEnv(t, a.env)
	var out, errOut bytes.Buffer
	code := Run(t.Context(), output.Test(strings.NewReader("n\n"), &out, &errOut, true),
		[]string{"archive", dlq.Name, "--to", "s3://" + a.bucket + "/x", "--delete"})
	if code != 2 || !strings.Contains(errOut.String(), "[y/N]") || !strings.Contains(errOut.String(), "not confirmed") {
		t.Fatalf("declined prompt: exit %d, stderr %q; want the question and exit 2", code, errOut.String())
	}
	if v, inflight := settledDepth(t, a.sqs, dlq.URL); v != n || inflight != 0 || len(a.objects(t)) != 0 {
		t.Fatalf("after a declined prompt: %d visible / %d in flight, objects %v", v, inflight, a.objects(t))
	}

	// --dry-run reports and changes nothing.
	r = runCLI(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/x", "--delete", "--dry-run", "-o", "json")
	var pl ArchivePlanOutput
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &pl) != nil || pl.Selected != n || pl.Parts != 1 || pl.Bytes <= 0 {
		t.Fatalf("dry run: exit %d %s %+v", r.Code, r.Stderr, pl)
	}
	if v, _ := queueDepth(t, a.sqs, dlq.URL); v != n || len(a.objects(t)) != 0 {
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
		r := runCLI(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/incident", "--delete", "--yes", "--part-records", "10", "-o", "json")
		var sum ArchiveSummary
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil {
			t.Fatalf("archive %s: exit %d\n%s\n%s", dlq.Name, r.Code, r.Stdout, r.Stderr)
		}
		if sum.Status != "completed" || sum.Run.Totals.Records != len(want) || sum.Run.Totals.Deleted != len(want) || !sum.Run.Deleted {
			t.Fatalf("archive %s summary %+v", dlq.Name, sum)
		}
		if v, inflight := settledDepth(t, a.sqs, dlq.URL); v+inflight != 0 {
			t.Fatalf("%s still holds %d+%d messages after archive --delete", dlq.Name, v, inflight)
		}
		wantPrefix := "s3://" + a.bucket + "/incident/queue=" + dlq.Name + "/dt=" + sum.Run.StartedAt.UTC().Format("2006-01-02") + "/run=" + sum.Run.RunID + "/"
		if !strings.HasPrefix(sum.Manifest, wantPrefix) || !strings.HasSuffix(sum.Manifest, "/_manifest.json") {
			t.Fatalf("manifest %s, want under %s", sum.Manifest, wantPrefix)
		}

		// verify, from S3 and from a local copy of the run directory.
		if r := runCLI(t, a.env, "", "archive", "verify", sum.Manifest); r.Code != 0 || !strings.Contains(r.Stderr, "archive ok") {
			t.Fatalf("verify: exit %d %s", r.Code, r.Stderr)
		}
		local := a.download(t, sum.Manifest)
		if r := runCLI(t, testenv.Env{}, "", "archive", "verify", filepath.Join(local, archive.ManifestName), "-o", "json"); r.Code != 0 {
			t.Fatalf("verify local copy: exit %d %s", r.Code, r.Stderr)
		}

		// Offline triage reads the archive like the queue it came from.
		for _, from := range []string{sum.Manifest, filepath.Join(local, archive.ManifestName)} {
			rep := decodeGroupReport(t, runCLI(t, a.env, "", "group", "--from", from, "--by", "class", "-o", "json"))
			if rep.Read != len(want) {
				t.Errorf("group --from %s read %d records, want %d", from, rep.Read, len(want))
			}
			if r := runCLI(t, a.env, "", "classify", "--from", from, "--summary", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"matched": `) {
				t.Errorf("classify --from %s: exit %d %s", from, r.Code, r.Stderr)
			}
		}
		recs := sampleArchive(t, a.env, sum.Manifest)
		checkRecordsAgainstTruth(t, recs, want)
		// Parts read directly: the first from the local copy, the last from S3.
		partRecs := sampleArchive(t, a.env, filepath.Join(local, "part-00001.ndjson.gz"))
		if n := len(sum.Run.Parts); n > 1 {
			partRecs = append(partRecs, sampleArchive(t, a.env, "s3://"+a.bucket+"/"+sum.Run.Parts[n-1].Key)...)
		}
		if wantN := sum.Run.Parts[0].Records + sum.Run.Parts[len(sum.Run.Parts)-1].Records*min(1, len(sum.Run.Parts)-1); len(partRecs) != wantN {
			t.Errorf("first and last part read directly hold %d records, want %d", len(partRecs), wantN)
		}

		// restore to a recovery queue: exact copies, FIFO groups in order.
		recovery := dlq.Name[:len(dlq.Name)-len(path.Ext(dlq.Name))] + "-recovery"
		if dlq.FIFO {
			recovery = strings.TrimSuffix(dlq.Name, ".fifo") + "-recovery.fifo"
		}
		in := &sqs.CreateQueueInput{QueueName: aws.String(recovery)}
		if dlq.FIFO {
			in.Attributes = map[string]string{"FifoQueue": "true"}
		}
		out, err := a.sqs.CreateQueue(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if r := runCLI(t, a.env, "", "restore", sum.Manifest, "--to", recovery, "--dry-run", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"would_move": `+itoa(len(want))) {
			t.Fatalf("restore --dry-run: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
		if v, _ := queueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v != 0 {
			t.Fatalf("restore --dry-run sent %d messages", v)
		}
		r = runCLI(t, a.env, "", "--state-dir", stateDir, "restore", sum.Manifest, "--to", recovery, "--yes", "-o", "json")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"moved": `+itoa(len(want))) {
			t.Fatalf("restore: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		copies := a.readAll(t, aws.ToString(out.QueueUrl))
		checkRecordsAgainstTruth(t, stripMarker(t, copies), want)
		if dlq.FIFO {
			checkGroupOrder(t, copies, want)
		}

		// The same restore again is refused: an archive never drains, so
		// it would send every message twice.
		r = runCLI(t, a.env, "", "--state-dir", stateDir, "restore", sum.Manifest, "--to", recovery, "--yes")
		if r.Code != 2 || !strings.Contains(r.Stderr, "--again") {
			t.Fatalf("second restore: exit %d %s; want exit 2 pointing at --again", r.Code, r.Stderr)
		}
		if v, inflight := queueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v+inflight != len(want) {
			t.Fatalf("%s holds %d+%d after a refused second restore, want %d", recovery, v, inflight, len(want))
		}
	}
}

func TestVerifyAndRestoreRefuseATamperedArchive(t *testing.T) {
	a := newArchiveFixture(t)
	dlq := a.truth.DLQ
	r := runCLI(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/t", "--part-records", "20", "-o", "json")
	var sum ArchiveSummary
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
	r = runCLI(t, a.env, "", "archive", "verify", sum.Manifest)
	if r.Code != 3 || !strings.Contains(r.Stdout, "FAIL") || !strings.Contains(r.Stderr, "1 of 3 part(s)") {
		t.Fatalf("verify of a tampered part: exit %d\n%s\n%s; want exit 3 naming the part", r.Code, r.Stdout, r.Stderr)
	}
	out, err := a.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(dlq.Name + "-rec")})
	if err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, a.env, "", "--state-dir", t.TempDir(), "restore", sum.Manifest, "--to", dlq.Name+"-rec", "--yes")
	if r.Code != 3 || !strings.Contains(r.Stderr, "nothing was sent") {
		t.Fatalf("restore of a tampered archive: exit %d %s; want exit 3", r.Code, r.Stderr)
	}
	if v, _ := queueDepth(t, a.sqs, aws.ToString(out.QueueUrl)); v != 0 {
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
func (a *archiveFixture) readAll(t *testing.T, url string) []queue.Record {
	t.Helper()
	c := queue.New(a.sqs, a.env.Region)
	q, err := c.Resolve(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var recs []queue.Record
	if _, err := inspect.Scan(t.Context(), c, q, inspect.ScanOptions{Workers: 1}, func(m *queue.Message, _ any) error {
		recs = append(recs, m.Record)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// stripMarker checks and removes the dlqctl-redrive marker every restored
// copy carries, leaving the original attributes.
func stripMarker(t *testing.T, recs []queue.Record) []queue.Record {
	t.Helper()
	for i := range recs {
		if _, ok := recs[i].Attributes[queue.MarkerAttribute]; !ok && len(recs[i].Attributes) < queue.MaxAttributes {
			t.Errorf("restored copy %s has no %s attribute", recs[i].MessageID, queue.MarkerAttribute)
		}
		delete(recs[i].Attributes, queue.MarkerAttribute)
	}
	return recs
}

// checkRecordsAgainstTruth asserts recs hold each seeded message exactly
// once with its exact body, attributes (binary included) and FIFO group.
func checkRecordsAgainstTruth(t *testing.T, recs []queue.Record, want []seed.Seeded) {
	t.Helper()
	if len(recs) != len(want) {
		t.Errorf("%d records, want %d", len(recs), len(want))
	}
	bySHA := map[string][]queue.Record{}
	for _, r := range recs {
		bySHA[queue.SHA256Hex(r.Body)] = append(bySHA[queue.SHA256Hex(r.Body)], r)
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
func checkGroupOrder(t *testing.T, recs []queue.Record, want []seed.Seeded) {
	t.Helper()
	seq := map[string]int{}
	for _, s := range want {
		seq[s.BodySHA256] = s.GroupSeq
	}
	last := map[string]int{}
	for _, r := range recs {
		g := r.System.MessageGroupID
		n := seq[queue.SHA256Hex(r.Body)]
		if prev, ok := last[g]; ok && n < prev {
			t.Errorf("group %s: message #%d arrived after #%d", g, n, prev)
		}
		last[g] = n
	}
}

// sampleArchive reads every record of an archive input with sample --from.
func sampleArchive(t *testing.T, env testenv.Env, from string) []queue.Record {
	t.Helper()
	return sampleAll(t, env, "--from="+from, 100000, "--no-redact")
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
	r := runCLI(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/lake", "--part-records", "25", "-o", "json")
	var sum ArchiveSummary
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
		rep := decodeGroupReport(t, runCLI(t, a.env, "", "group", "--from", from, "--by", "class", "-o", "json"))
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
	if r := runCLI(t, a.env, "", "classify", "--from", legacyDir, "--summary", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"matched": `) {
		t.Errorf("classify --from %s: exit %d %s", legacyDir, r.Code, r.Stderr)
	}
	checkRecordsAgainstTruth(t, sampleArchive(t, a.env, legacy), want)

	// verify: new and old layout, manifest or folder, S3 or local copy.
	for _, m := range []string{sum.Manifest, bucket + "/" + runDir, legacy, legacyDir} {
		if r := runCLI(t, a.env, "", "archive", "verify", m); r.Code != 0 || !strings.Contains(r.Stderr, "archive ok") {
			t.Errorf("verify %s: exit %d %s", m, r.Code, r.Stderr)
		}
	}
	localNew, localOld := a.download(t, sum.Manifest), a.download(t, legacy)
	for _, m := range []string{localNew, localOld, filepath.Join(localOld, archive.LegacyManifestName)} {
		if r := runCLI(t, testenv.Env{}, "", "archive", "verify", m); r.Code != 0 {
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
	if r := runCLI(t, a.env, "", "archive", "verify", bucket); r.Code != 2 || !strings.Contains(r.Stderr, "2 archive runs") {
		t.Errorf("verify of a prefix with two runs: exit %d %q; want exit 2 asking for one run", r.Code, r.Stderr)
	}
	if r := runCLI(t, a.env, "", "group", "--from", bucket+"/nothing-here/", "--by", "class"); r.Code != 2 || !strings.Contains(r.Stderr, "no archive runs") && !strings.Contains(r.Stderr, "does not exist") {
		t.Errorf("--from an empty prefix: exit %d %q; want exit 2", r.Code, r.Stderr)
	}

	// restore from the old layout's run folder, then the same run by its
	// manifest: one restore, refused the second time.
	out, err := a.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(dlq.Name + "-old-rec")})
	if err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	r = runCLI(t, a.env, "", "--state-dir", stateDir, "restore", legacyDir, "--to", dlq.Name+"-old-rec", "--yes", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"moved": `+itoa(len(want))) {
		t.Fatalf("restore from the old layout: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	checkRecordsAgainstTruth(t, stripMarker(t, a.readAll(t, aws.ToString(out.QueueUrl))), want)
	r = runCLI(t, a.env, "", "--state-dir", stateDir, "restore", legacy, "--to", dlq.Name+"-old-rec", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--again") {
		t.Fatalf("restore of the same run by its manifest after its folder: exit %d %s; want exit 2 pointing at --again", r.Code, r.Stderr)
	}
}
