package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// The seed corpora are in testdata/fuzz/<Target>/ and run with every `go
// test`; `make fuzz` explores further (FUZZTIME per target).

// FuzzDecodeManifest: any manifest text either decodes or is one bad-input
// error naming it; a decoded manifest writes back and decodes the same, and
// reading its parts from a folder that lacks them fails cleanly.
func FuzzDecodeManifest(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(bytes.NewReader(data), "run/manifest.json")
		if err != nil {
			if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "run/manifest.json") {
				t.Fatalf("DecodeManifest error %q (exit %d) is not a bad-input error naming the file", err, errs.Code(err))
			}
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("a decoded manifest cannot be written: %v", err)
		}
		back, err := DecodeManifest(bytes.NewReader(out), "again")
		if err != nil {
			t.Fatalf("a written manifest does not decode: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalizeManifest(m), normalizeManifest(back)) {
			t.Fatalf("manifest changed in a round trip:\n%+v\n%+v", m, back)
		}
		if !LooksLikeManifest(out) {
			t.Fatalf("a written manifest is not recognised as one:\n%s", out)
		}
		m.Sum()
		n := 0
		err = ForEachManifestRecord(context.Background(), DirSource{Dir: dir}, m, func(int, *record.Record, any) error { n++; return nil })
		if n != 0 {
			t.Fatalf("%d records read from an empty folder", n)
		}
		if len(m.Parts) > 0 && err == nil {
			t.Fatalf("parts %v read from an empty folder without an error", m.Parts)
		}
	})
}

// normalizeManifest makes times comparable (a round trip keeps the instant
// and offset but not the *time.Location pointer).
func normalizeManifest(m *Manifest) Manifest {
	c := *m
	c.StartedAt, c.FinishedAt = c.StartedAt.UTC(), c.FinishedAt.UTC()
	if len(c.Parts) == 0 {
		c.Parts = nil
	}
	return c
}

// FuzzReadPart: any file given to archive readers (a part, a gzip file,
// NDJSON, a manifest) yields printable records or one bad-input error —
// never a panic or another kind of error.
func FuzzReadPart(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		name := filepath.Join(dir, "part-00001.ndjson.gz")
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ref := Ref{Src: DirSource{Dir: dir}, Key: "part-00001.ndjson.gz"}
		err := ForEachRecord(context.Background(), ref, func(rec *record.Record, parsed any) error {
			if _, err := inspect.MarshalRecord(rec); err != nil {
				t.Fatalf("record cannot be printed: %v", err)
			}
			return nil
		})
		if err != nil && errs.Code(err) != errs.ExitUsage {
			t.Fatalf("reading %q: %v (exit %d, want a bad-input error)", data, err, errs.Code(err))
		}
	})
}

// FuzzParseS3URI: an S3 location parses or is one bad-input error, and a
// parsed location prints as a URI that parses to itself.
func FuzzParseS3URI(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseS3URI(s)
		if err != nil {
			if errs.Code(err) != errs.ExitUsage {
				t.Fatalf("ParseS3URI(%q): %v is not a bad-input error", s, err)
			}
			return
		}
		again, err := ParseS3URI(loc.String())
		if err != nil || again != loc {
			t.Fatalf("ParseS3URI(%q) = %+v prints as %q, which parses to %+v (%v)", s, loc, loc.String(), again, err)
		}
	})
}
