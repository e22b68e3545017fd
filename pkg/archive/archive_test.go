package archive

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

type fixture struct {
	env    testenv.Env
	qc     *sqs.Client
	s3     *s3.Client
	bucket string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := testenv.Require(t)
	f := &fixture{env: env, qc: sqs.New(env.SQS(t), env.Region), s3: env.S3(t)}
	f.bucket = newBucket(t, f.s3)
	return f
}

func (f *fixture) resolve(t *testing.T, ref string) *sqs.Queue {
	t.Helper()
	q, err := f.qc.Resolve(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// fillQueue creates a standard queue holding n small messages.
func (f *fixture) fillQueue(t *testing.T, n int) *sqs.Queue {
	t.Helper()
	api := f.env.SQS(t)
	name := testenv.UniqueName(t, "arc")
	out, err := api.CreateQueue(t.Context(), &awssqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.FillDLQ(t.Context(), api, aws.ToString(out.QueueUrl), n, func(i int) string {
		return fmt.Sprintf(`{"eventId":"evt-%05d","eventType":"OrderCreated","payload":{"n":%d,"pad":%q}}`, i, i, strings.Repeat("x", 200))
	}); err != nil {
		t.Fatal(err)
	}
	return f.resolve(t, name)
}

// remaining receives every message left in q (non-destructively) and returns
// their ids.
func (f *fixture) remaining(t *testing.T, q *sqs.Queue) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	_, err := inspect.Scan(t.Context(), f.ep(q), inspect.ScanOptions{Visibility: 20 * time.Second}, func(m *record.Record, _ any) error {
		ids[m.MessageID] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// archived reads every record of a run's manifest from S3.
func (f *fixture) archived(t *testing.T, api S3API, key string) []record.Record {
	t.Helper()
	var recs []record.Record
	err := ForEachRecord(t.Context(), Ref{Src: S3Source{API: api, Bucket: f.bucket}, Key: key}, func(rec *record.Record, _ any) error {
		recs = append(recs, *rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (f *fixture) opts(delete bool) Options {
	return Options{
		Dest: Location{Bucket: f.bucket, Key: "dlq-archive"}, Delete: delete, ToolVersion: "test",
		Visibility: 30 * time.Second, PartRecords: 7, TempDir: "",
	}
}

// checkAgainstTruth asserts that recs hold every seeded message of want
// exactly once with its exact body and attributes.
func checkAgainstTruth(t *testing.T, recs []record.Record, want []seed.Seeded) {
	t.Helper()
	bySHA := map[string]int{}
	for _, r := range recs {
		bySHA[r.BodySHA256]++
		if record.SHA256Hex(r.Body) != r.BodySHA256 {
			t.Errorf("message %s: body does not match body_sha256", r.MessageID)
		}
	}
	got := map[string]record.Record{}
	for _, r := range recs {
		got[r.BodySHA256] = r
	}
	for _, s := range want {
		if bySHA[s.BodySHA256] != 1 {
			t.Errorf("seeded %s message %s is in the archive %d times, want exactly once", s.Kind, s.MessageID, bySHA[s.BodySHA256])
			continue
		}
		r := got[s.BodySHA256]
		if r.Body != s.Body {
			t.Errorf("message %s: archived body differs from the seeded one", s.MessageID)
		}
		if len(r.Attributes) != len(s.Attributes) {
			t.Errorf("message %s: %d attributes archived, %d seeded", s.MessageID, len(r.Attributes), len(s.Attributes))
		}
		for name, a := range s.Attributes {
			ra, ok := r.Attributes[name]
			switch {
			case !ok:
				t.Errorf("message %s: attribute %s missing", s.MessageID, name)
			case ra.Type != aws.ToString(a.DataType):
				t.Errorf("message %s: attribute %s type %s, want %s", s.MessageID, name, ra.Type, aws.ToString(a.DataType))
			case a.BinaryValue != nil && ra.Base64 != base64.StdEncoding.EncodeToString(a.BinaryValue):
				t.Errorf("message %s: binary attribute %s = %s, want %s", s.MessageID, name, ra.Base64, base64.StdEncoding.EncodeToString(a.BinaryValue))
			case a.BinaryValue == nil && ra.Value != aws.ToString(a.StringValue):
				t.Errorf("message %s: attribute %s = %q, want %q", s.MessageID, name, ra.Value, aws.ToString(a.StringValue))
			}
		}
		if s.GroupID != "" && r.System.MessageGroupID != s.GroupID {
			t.Errorf("message %s: group %q, want %q", s.MessageID, r.System.MessageGroupID, s.GroupID)
		}
		if s.SourceARN != "" && r.System.SourceQueueARN != s.SourceARN {
			t.Errorf("message %s: source arn %q, want %q", s.MessageID, r.System.SourceQueueARN, s.SourceARN)
		}
	}
	if len(recs) != len(want) {
		t.Errorf("archive holds %d records, want %d", len(recs), len(want))
	}
}

func TestArchiveIncident(t *testing.T) {
	f := newFixture(t)
	truth, err := seed.Incident(t.Context(), f.env.SQS(t), seed.Options{Prefix: testenv.UniqueName(t, "arc")})
	if err != nil {
		t.Fatal(err)
	}
	for _, dlq := range []seed.Queue{truth.DLQ, truth.FIFODLQ} {
		want := truth.InQueue(dlq.Name)
		q := f.resolve(t, dlq.URL)

		// Without --delete: the archive holds everything, the queue is unchanged.
		res, err := Run(t.Context(), f.ep(q), f.s3, f.opts(false))
		if err != nil {
			t.Fatalf("%s: archive without delete: %v", dlq.Name, err)
		}
		if res.ManifestKey == "" || !res.Manifest.Complete || res.Manifest.Deleted {
			t.Fatalf("%s: manifest %q complete=%v deleted=%v", dlq.Name, res.ManifestKey, res.Manifest.Complete, res.Manifest.Deleted)
		}
		checkAgainstTruth(t, f.archived(t, f.s3, res.ManifestKey), want)
		if left := f.remaining(t, q); len(left) != len(want) {
			t.Fatalf("%s: %d messages left after archive without --delete, want all %d", dlq.Name, len(left), len(want))
		}
		if wantParts := (len(want) + 6) / 7; len(res.Manifest.Parts) != wantParts {
			t.Errorf("%s: %d parts for %d records at 7 per part, want %d", dlq.Name, len(res.Manifest.Parts), len(want), wantParts)
		}

		// With --delete: the queue ends empty; the archive holds each message once.
		res, err = Run(t.Context(), f.ep(q), f.s3, f.opts(true))
		if err != nil {
			t.Fatalf("%s: archive --delete: %v", dlq.Name, err)
		}
		checkAgainstTruth(t, f.archived(t, f.s3, res.ManifestKey), want)
		if res.Stats.Deleted != len(want) || res.Manifest.Totals.Deleted != len(want) {
			t.Errorf("%s: deleted %d (manifest %d), want %d", dlq.Name, res.Stats.Deleted, res.Manifest.Totals.Deleted, len(want))
		}
		if left := f.remaining(t, q); len(left) != 0 {
			t.Fatalf("%s: %d messages left after archive --delete, want 0", dlq.Name, len(left))
		}

		// verify passes on the untouched archive.
		ref := Ref{Src: S3Source{API: f.s3, Bucket: f.bucket}, Key: res.ManifestKey}
		rep, err := VerifyArchive(t.Context(), ref, nil)
		if err != nil || !rep.OK || rep.Records != len(want) {
			t.Fatalf("%s: verify of a good archive: ok=%v records=%d err=%v %+v", dlq.Name, rep != nil && rep.OK, rep.Records, err, rep)
		}
	}
}

func TestArchiveSelectionKeepsTheRestInQueue(t *testing.T) {
	f := newFixture(t)
	q := f.fillQueue(t, 40)
	o := f.opts(true)
	o.Select = SelectFunc(func(rec *record.Record, parsed any) bool {
		var n int
		fmt.Sscanf(rec.Body[strings.Index(rec.Body, `"n":`)+4:], "%d", &n)
		rec.Class = "even"
		return n%2 == 0
	})
	res, err := Run(t.Context(), f.ep(q), f.s3, o)
	if err != nil {
		t.Fatal(err)
	}
	recs := f.archived(t, f.s3, res.ManifestKey)
	if len(recs) != 20 || res.Stats.Received != 40 {
		t.Fatalf("archived %d of %d received, want 20 of 40", len(recs), res.Stats.Received)
	}
	for _, r := range recs {
		if r.Class != "even" {
			t.Fatalf("record %s has class %q; the selection's annotation must be archived", r.MessageID, r.Class)
		}
	}
	if left := f.remaining(t, q); len(left) != 20 {
		t.Fatalf("%d messages left, want the 20 not selected", len(left))
	}
}

func TestVerifyDetectsTamperedPart(t *testing.T) {
	f := newFixture(t)
	q := f.fillQueue(t, 20)
	res, err := Run(t.Context(), f.ep(q), f.s3, f.opts(false))
	if err != nil {
		t.Fatal(err)
	}
	// Replace part 2 with a valid gzip of different content (bypassing
	// If-None-Match, as someone with write access could).
	p := res.Manifest.Parts[1]
	pw, _ := newPartWriter(t.TempDir(), false)
	pw.Write(&record.Record{MessageID: "forged", Body: "x", BodySHA256: record.SHA256Hex("x")})
	pw.Finish()
	body, _ := pw.Reader()
	data, _ := io.ReadAll(body)
	pw.Discard()
	if _, err := f.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(p.Key), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	var seen []PartCheck
	rep, err := VerifyArchive(t.Context(), Ref{Src: S3Source{API: f.s3, Bucket: f.bucket}, Key: res.ManifestKey}, func(pc PartCheck) { seen = append(seen, pc) })
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Parts[1].OK || !rep.Parts[0].OK || len(seen) != len(res.Manifest.Parts) {
		t.Fatalf("verify of a tampered part 2: ok=%v parts=%+v", rep.OK, rep.Parts)
	}
	joined := strings.Join(rep.Parts[1].Problems, "; ")
	for _, want := range []string{"SHA-256", "records"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q do not mention %s", joined, want)
		}
	}
}

// faultProxy sits between dlqctl and the S3 gateway and misbehaves on
// demand: fault(n, req) is called for every part PUT (n = 1, 2, …) and for
// every HEAD; it may answer itself, or return a response modifier.
type faultProxy struct {
	srv   *httptest.Server
	puts  atomic.Int32
	heads atomic.Int32
}

type fault struct {
	// onPut returns true to answer part PUT n with a 503 instead of forwarding.
	rejectPut func(n int) bool
	// corruptPut flips a byte of part PUT n's body on the way.
	corruptPut func(n int) bool
	// corruptHead rewrites the checksum header of HEAD n.
	corruptHead func(n int) bool
	// killAt closes the proxy (connection refused from then on) at part PUT n.
	killAt int
	// wrongBucket sends part PUT n to another (missing) bucket.
	wrongBucket func(n int) bool
}

func newFaultProxy(t *testing.T, target string, fl fault) *faultProxy {
	t.Helper()
	u, _ := url.Parse(target)
	fp := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodHead && strings.Contains(resp.Request.URL.Path, "part-") {
			n := int(fp.heads.Add(1))
			if fl.corruptHead != nil && fl.corruptHead(n) {
				resp.Header.Set("X-Amz-Checksum-Sha256", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
			}
		}
		return nil
	}
	var closeOnce sync.Once
	fp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "part-") {
			n := int(fp.puts.Add(1))
			if fl.killAt > 0 && n >= fl.killAt {
				closeOnce.Do(func() { go fp.srv.Close() })
				hj, ok := w.(http.Hijacker)
				if ok {
					c, _, _ := hj.Hijack()
					c.Close()
				}
				return
			}
			if fl.rejectPut != nil && fl.rejectPut(n) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `<Error><Code>AccessDenied</Code><Message>injected</Message></Error>`)
				return
			}
			if fl.corruptPut != nil && fl.corruptPut(n) {
				b, _ := io.ReadAll(r.Body)
				b[len(b)/2] ^= 0xff
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			if fl.wrongBucket != nil && fl.wrongBucket(n) {
				parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
				r.URL.Path = "/no-such-bucket-dlqctl/" + parts[1]
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { fp.srv.Close() })
	return fp
}

func (f *fixture) s3Via(t *testing.T, endpoint string) *s3.Client {
	return s3.NewFromConfig(f.env.AWSConfig(t.Context()), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
		o.RetryMaxAttempts = 2
	})
}

// TestArchiveFailuresDeleteNothingUnverified breaks the S3 side at part 3
// of a --delete run and checks the safety contract: the run ends with a
// partial error (exit 4); exactly the messages of the verified parts 1–2 are
// gone from the queue and in the manifest; everything else is back in the
// queue.
func TestArchiveFailuresDeleteNothingUnverified(t *testing.T) {
	cases := []struct {
		name  string
		fault fault
	}{
		{"rejected upload", fault{rejectPut: func(n int) bool { return n >= 3 }}},
		{"corrupted upload", fault{corruptPut: func(n int) bool { return n >= 3 }}},
		{"corrupted verification", fault{corruptHead: func(n int) bool { return n >= 3 }}},
		{"stopped server", fault{killAt: 3}},
		{"wrong bucket", fault{wrongBucket: func(n int) bool { return n >= 3 }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			q := f.fillQueue(t, 50)
			fp := newFaultProxy(t, f.env.S3Endpoint, tc.fault)
			api := f.s3Via(t, fp.srv.URL)
			o := f.opts(true)
			o.PartRecords = 10
			o.Workers = 1
			res, err := Run(t.Context(), f.ep(q), api, o)
			if errs.Code(err) != errs.ExitPartial {
				t.Fatalf("run with %s: err %v (exit %d), want exit 4", tc.name, err, errs.Code(err))
			}
			if len(res.Manifest.Parts) != 2 {
				t.Fatalf("%d verified parts, want 2 (fault at part 3)", len(res.Manifest.Parts))
			}
			archivedIDs := map[string]bool{}
			for _, r := range f.archived(t, f.s3, res.Manifest.Parts[0].Key) {
				archivedIDs[r.MessageID] = true
			}
			for _, r := range f.archived(t, f.s3, res.Manifest.Parts[1].Key) {
				archivedIDs[r.MessageID] = true
			}
			left := f.remaining(t, q)
			if len(archivedIDs) != 20 || len(left) != 30 || res.Stats.Deleted != 20 {
				t.Fatalf("archived %d, deleted %d, left %d; want 20 archived+deleted and 30 left", len(archivedIDs), res.Stats.Deleted, len(left))
			}
			for id := range archivedIDs {
				if left[id] {
					t.Errorf("message %s is in a verified part and still in the queue after --delete", id)
				}
			}
			if tc.fault.killAt == 0 && res.ManifestKey == "" {
				t.Errorf("no manifest written after a part failure; the verified parts must be described")
			}
		})
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFixture(t)
	q := f.fillQueue(t, 30)
	o := f.opts(true)
	o.PartRecords = 8
	pl, err := DryRun(t.Context(), f.ep(q), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Selected != 30 || pl.Parts != 4 || pl.Bytes <= 0 || pl.UncompressedBytes <= pl.Bytes || !pl.Complete {
		t.Fatalf("plan %+v, want 30 selected in 4 parts with compressed < uncompressed bytes", pl)
	}
	if left := f.remaining(t, q); len(left) != 30 {
		t.Fatalf("%d messages left after --dry-run, want 30", len(left))
	}
	out, err := f.s3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(f.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Fatalf("--dry-run wrote %d objects", len(out.Contents))
	}
}

func TestArchiveInterruptReleasesOpenPart(t *testing.T) {
	f := newFixture(t)
	q := f.fillQueue(t, 30)
	ctx, cancel := context.WithCancel(t.Context())
	o := f.opts(true)
	o.PartRecords = 10
	o.Workers = 1
	o.Reporter = cancelAfterParts{n: 1, cancel: cancel}
	res, err := Run(ctx, f.ep(q), f.s3, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled (exit 130)", err)
	}
	left := f.remaining(t, q)
	if res.Stats.Deleted+len(left) != 30 {
		t.Fatalf("deleted %d + left %d != 30: a message was lost or duplicated", res.Stats.Deleted, len(left))
	}
	if res.ManifestKey == "" || res.Manifest.Complete {
		t.Fatalf("an interrupted run must still write its manifest, marked incomplete: key %q complete %v", res.ManifestKey, res.Manifest.Complete)
	}
	if got := res.Manifest.Totals.Deleted; got != res.Stats.Deleted {
		t.Fatalf("manifest says %d deleted, run deleted %d", got, res.Stats.Deleted)
	}
}

type cancelAfterParts struct {
	n      int
	cancel func()
}

func (c cancelAfterParts) Progress(Stats) {}
func (c cancelAfterParts) Warn(string)    {}
func (c cancelAfterParts) PartDone(p Part) {
	c.cancel()
}

// ep is q as the endpoint cmd's factory would give.
func (f *fixture) ep(q *sqs.Queue) broker.Endpoint {
	return sqs.NewEndpoint(f.qc, q)
}
