package archive

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// TestPickManifestsPrefersTheFinalThenTheNewestCheckpoint: per run folder
// the final manifest wins (current or legacy name); a run killed before its
// end is read through its newest checkpoint, never an older one.
func TestPickManifestsPrefersTheFinalThenTheNewestCheckpoint(t *testing.T) {
	finals := []string{
		"p/queue=q/dt=2026-12-01/run=a/_manifest.json",
		"p/q/2026/11/30/old/manifest.json",
	}
	checkpoints := []string{
		"p/queue=q/dt=2026-12-01/run=a/_manifest-checkpoint-00001.json",
		"p/queue=q/dt=2026-12-01/run=b/_manifest-checkpoint-00009.json",
		"p/queue=q/dt=2026-12-01/run=b/_manifest-checkpoint-00010.json",
		"p/queue=q/dt=2026-12-01/run=b/_manifest-checkpoint-00002.json",
	}
	got := pickManifests(finals, checkpoints)
	want := []string{
		"p/q/2026/11/30/old/manifest.json",
		"p/queue=q/dt=2026-12-01/run=a/_manifest.json",
		"p/queue=q/dt=2026-12-01/run=b/_manifest-checkpoint-00010.json",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for _, k := range checkpoints {
		if !IsCheckpointName(k) || IsManifestName(k) {
			t.Fatalf("%s: checkpoint %v, manifest %v", k, IsCheckpointName(k), IsManifestName(k))
		}
	}
	if k := CheckpointKey("p/run=b", 12); k != "p/run=b/_manifest-checkpoint-00012.json" {
		t.Fatalf("CheckpointKey = %s", k)
	}
}

// TestLocalPartKeyMustNameAFile: a damaged manifest whose part key is "..",
// "." or a folder is bad input (exit 2), never a read of the folder or of
// a path outside the run.
func TestLocalPartKeyMustNameAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"..", ".", "run/..", "sub"} {
		_, err := DirSource{Dir: dir}.Open(t.Context(), key)
		if errs.Code(err) != errs.ExitUsage {
			t.Fatalf("part key %q: %v (exit %d); want a bad-input error", key, err, errs.Code(err))
		}
	}
}
