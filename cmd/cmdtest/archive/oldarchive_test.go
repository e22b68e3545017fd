package archive

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// oldArchive is an archive written by dlqctl before the broker-neutral
// record (no "broker" field), kept byte for byte.
const oldArchive = "../../../testdata/archive-v0.1-sqs"

// TestArchiveWrittenBeforeTheBrokerSeamStillVerifiesReadsAndRestores: an
// archive written by the earlier dlqctl, uploaded as it is, verifies, is
// read with --from (S3 and the local copy) and restores every message
// with its body and attributes byte for byte.
func TestArchiveWrittenBeforeTheBrokerSeamStillVerifiesReadsAndRestores(t *testing.T) {
	env := testenv.Require(t)
	s3c, sqsc := env.S3(t), env.SQS(t)
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "old"), "_", "-"))
	if _, err := s3c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	var manifest string
	var archived []record.Record
	err := filepath.WalkDir(oldArchive, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "README.md") {
			return err
		}
		rel, _ := filepath.Rel(oldArchive, p)
		key := "arch/" + filepath.ToSlash(rel) // the prefix the run was written under (its manifest names its parts by key)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := s3c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(key, "_manifest.json"):
			manifest = "s3://" + bucket + "/" + key
		case strings.HasSuffix(key, ".ndjson.gz"):
			archived = append(archived, readPart(t, b)...)
		}
		return nil
	})
	if err != nil || manifest == "" || len(archived) != 5 {
		t.Fatalf("fixture: %v, manifest %q, %d records", err, manifest, len(archived))
	}

	r := clitest.Run(t, env, "", "archive", "verify", manifest, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"ok": true`) {
		t.Fatalf("verify: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	for _, from := range []string{manifest, oldArchive + "/queue=fx-orders-dlq"} {
		r = clitest.Run(t, env, "", "sample", "--from", from, "-o", "ndjson", "-n", "100", "--no-redact")
		if r.Code != 0 {
			t.Fatalf("sample --from %s: exit %d %s", from, r.Code, r.Stderr)
		}
		var read []record.Record
		for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			var rec record.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("sample --from %s: %v in %s", from, err, line)
			}
			read = append(read, rec)
		}
		if len(read) != len(archived) {
			t.Fatalf("sample --from %s read %d records, want %d", from, len(read), len(archived))
		}
		for i, rec := range read {
			want := archived[i]
			if rec.MessageID != want.MessageID || rec.Body != want.Body || rec.BodySHA256 != record.SHA256Hex(rec.Body) ||
				rec.BrokerName() != record.BrokerSQS || rec.System.SourceQueueARN != want.System.SourceQueueARN || !sameAttrs(rec.Attributes, want.Attributes) {
				t.Errorf("sample --from %s: record %d is %+v, archived %+v", from, i, rec, want)
			}
		}
	}

	recovery, _ := clitest.CreateQueue(t, sqsc, testenv.UniqueName(t, "oldrec"), nil)
	r = clitest.Run(t, env, "", "--state-dir", t.TempDir(), "restore", manifest, "--to", recovery, "--yes", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"moved": 5`) {
		t.Fatalf("restore: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	got := map[string]awsMessage{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(archived) && time.Now().Before(deadline) {
		out, err := sqsc.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(recovery), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			attrs := map[string]record.Attribute{}
			for k, v := range m.MessageAttributes {
				if k == record.MarkerAttribute {
					continue
				}
				a := record.Attribute{Type: aws.ToString(v.DataType), Value: aws.ToString(v.StringValue)}
				if v.BinaryValue != nil {
					a.Value, a.Base64 = "", base64.StdEncoding.EncodeToString(v.BinaryValue)
				}
				attrs[k] = a
			}
			got[aws.ToString(m.Body)] = awsMessage{attrs: attrs}
		}
	}
	for _, want := range archived {
		g, ok := got[want.Body]
		if !ok {
			t.Errorf("restored copy of %s missing (body %q)", want.MessageID, want.Body)
			continue
		}
		wantAttrs := map[string]record.Attribute{}
		for k, v := range want.Attributes {
			if k != record.MarkerAttribute {
				wantAttrs[k] = v
			}
		}
		if !sameAttrs(g.attrs, wantAttrs) {
			t.Errorf("restored copy of %s: attributes %v, archived %v", want.MessageID, g.attrs, wantAttrs)
		}
	}
}

type awsMessage struct{ attrs map[string]record.Attribute }

func sameAttrs(a, b map[string]record.Attribute) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// readPart decodes a gzip NDJSON archive part, in its order.
func readPart(t *testing.T, gz []byte) []record.Record {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Record
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec record.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"broker"`) {
			t.Fatalf("the fixture was written after the broker field existed: %s", line)
		}
		out = append(out, rec)
	}
	return out
}
