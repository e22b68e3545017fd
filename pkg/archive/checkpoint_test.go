package archive

import (
	"reflect"
	"testing"
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
