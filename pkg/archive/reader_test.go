package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// TestResolveInputLocal: a local folder is every run manifest under it
// (_manifest.json and the older manifest.json, at any depth, in path
// order); a file is itself; a folder without a manifest, a missing path
// and a several-run folder given where one run is needed are bad input
// (exit 2) with a sentence naming the fix.
func TestResolveInputLocal(t *testing.T) {
	root := t.TempDir()
	day := time.Date(2026, 11, 30, 3, 15, 0, 0, time.UTC)
	newRun := filepath.Join(root, filepath.FromSlash(RunDir("", "orders-dlq", day, "20261130T031500Z-aa")))
	oldRun := filepath.Join(root, filepath.FromSlash(LegacyRunDir("old", "orders-dlq", day, "20261130T031500Z-bb")))
	for _, f := range []string{filepath.Join(newRun, ManifestName), filepath.Join(newRun, "part-00001.ndjson.gz"), filepath.Join(oldRun, LegacyManifestName)} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in, err := ResolveInput(t.Context(), root, nil)
	if err != nil || !in.Runs || len(in.Refs) != 2 {
		t.Fatalf("ResolveInput(%s) = %+v, %v; want the two runs", root, in, err)
	}
	if got := []string{in.Refs[0].Name(), in.Refs[1].Name()}; got[0] != filepath.Join(oldRun, LegacyManifestName) || got[1] != filepath.Join(newRun, ManifestName) {
		t.Errorf("runs %v, want the old layout's manifest.json and the new _manifest.json in path order", got)
	}
	if ref, err := ResolveRun(t.Context(), newRun, nil); err != nil || ref.Name() != filepath.Join(newRun, ManifestName) {
		t.Errorf("ResolveRun(run folder) = %v, %v", ref.Name(), err)
	}
	part := filepath.Join(newRun, "part-00001.ndjson.gz")
	if in, err := ResolveInput(t.Context(), part, nil); err != nil || in.Runs || len(in.Refs) != 1 || in.Refs[0].Name() != part {
		t.Errorf("ResolveInput(part) = %+v, %v", in, err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"several runs where one is needed", func() error { _, err := ResolveRun(t.Context(), root, nil); return err }, "holds 2 archive runs"},
		{"a folder without a manifest", func() error { _, err := ResolveInput(t.Context(), empty, nil); return err }, "holds no archive manifest"},
		{"a missing path", func() error { _, err := ResolveInput(t.Context(), filepath.Join(empty, "nope"), nil); return err }, "cannot read"},
		{"a bad s3 URI", func() error { _, err := ResolveInput(t.Context(), "s3://Bad_Bucket/x", nil); return err }, "bucket name"},
	} {
		err := c.call()
		if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one exit-2 sentence containing %q", c.name, err, c.want)
		}
	}
	if IsManifestName("a/part-00001.ndjson.gz") || !IsManifestName("x/_manifest.json") || !IsManifestName("manifest.json") {
		t.Error("IsManifestName")
	}
}
