//go:build unix

package statelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestProbeTellsALiveOwnerFromADeadOne: while the owner's file is open
// with its lock, a probe (another open file, as another process would
// have) says ErrLocked; once the owner's file is closed — what the kernel
// does when the owner dies — the probe succeeds.
func TestProbeTellsALiveOwnerFromADeadOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owner")
	owner, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Hold(owner); err != nil {
		t.Fatal(err)
	}
	probe := func() error {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return Probe(f)
	}
	if err := probe(); !errors.Is(err, ErrLocked) {
		t.Fatalf("probe of a live owner's file: %v, want ErrLocked", err)
	}
	owner.Close()
	if err := probe(); err != nil {
		t.Fatalf("probe of a dead owner's file: %v, want nil", err)
	}
}
