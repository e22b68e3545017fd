//go:build unix

package sqs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHoldLedgerLiveDeadAndDone: a live process's file is never listed as
// dead; once its lock is gone (the process died: Close(false) drops it the
// same way) it is, with the time and count it covered; a clean end leaves
// no file; a file whose time has passed is removed.
func TestHoldLedgerLiveDeadAndDone(t *testing.T) {
	dir := t.TempDir()
	const q = "http://127.0.0.1:1/000000000000/orders-dlq"
	l, err := OpenHoldLedger(dir, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(30 * time.Second)
	l.Cover(until, 40, 5*time.Second)
	if dead, err := DeadHolds(dir, q); err != nil || len(dead) != 0 {
		t.Fatalf("a live process's hold was listed as dead: %+v (%v)", dead, err)
	}
	l.Close(false) // what a kill does to the lock
	dead, err := DeadHolds(dir, q)
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead holds %+v (%v), want the one file", dead, err)
	}
	h := dead[0]
	if h.PID != os.Getpid() || h.Held < 40 || h.Until.Before(until) || h.Until.After(until.Add(6*time.Second)) {
		t.Fatalf("dead hold %+v: want pid %d, held >= 40, until in [%v, +6s]", h, os.Getpid(), until)
	}
	if d := DescribeDeadHolds(dead); !strings.Contains(d, "ended without releasing") || !strings.Contains(d, "up to") {
		t.Fatalf("description %q", d)
	}
	// Another queue's ledger does not see it.
	if other, _ := DeadHolds(dir, q+"-other"); len(other) != 0 {
		t.Fatalf("another queue sees %+v", other)
	}

	// Clean end: nothing left.
	l2, err := OpenHoldLedger(dir, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2.Cover(time.Now().Add(time.Minute), 1, 0)
	l2.Close(true)
	if dead, _ := DeadHolds(dir, q); len(dead) != 1 {
		t.Fatalf("after a clean end, dead holds %+v; want only the first", dead)
	}

	// Time passed a second ago: still listed, as Expired (a receive the
	// server answered late may hide its messages a visibility longer), and
	// not waited for.
	l4, err := OpenHoldLedger(dir, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	l4.Cover(time.Now().Add(-time.Second), 1, 0)
	l4.Close(false)
	if dead, _ := DeadHolds(dir, q); len(dead) != 2 || len(Waiting(dead)) != 1 || !dead[0].Expired {
		t.Fatalf("dead holds %+v; want the first and one expired a second ago, only the first waited for", dead)
	}
	ForgetDeadHolds(mustDeadHolds(t, dir, q)) // a run that read past it removes it

	// Time passed longer than a visibility ago: the file goes.
	l3, err := OpenHoldLedger(dir, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	l3.Cover(time.Now().Add(-time.Minute), 1, 0)
	l3.Close(false)
	files, _ := filepath.Glob(filepath.Join(HoldsDir(dir, q), "*.hold"))
	if len(files) != 2 {
		t.Fatalf("%d ledger files, want 2 before the sweep", len(files))
	}
	if dead, _ := DeadHolds(dir, q); len(dead) != 1 {
		t.Fatalf("dead holds %+v, want only the first (the other's time has passed)", dead)
	}
	files, _ = filepath.Glob(filepath.Join(HoldsDir(dir, q), "*.hold"))
	if len(files) != 1 {
		t.Fatalf("%d ledger files after the sweep, want 1", len(files))
	}
}

// TestHoldLedgerCoverWritesAheadOnly: Cover writes only when the file says
// less than needed, then with headroom; the record is one fixed-size write.
func TestHoldLedgerCoverWritesAheadOnly(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenHoldLedger(dir, "q", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(true)
	now := time.Now()
	l.Cover(now.Add(10*time.Second), 5, 4*time.Second)
	first := l.written
	st, err := os.Stat(l.path)
	if err != nil || st.Size() != holdRecordSize {
		t.Fatalf("file size %v (%v), want %d", st.Size(), err, holdRecordSize)
	}
	l.Cover(now.Add(12*time.Second), 5, 4*time.Second) // inside the headroom
	if !l.written.Equal(first) {
		t.Fatal("a cover inside the headroom rewrote the file")
	}
	l.Cover(now.Add(20*time.Second), 5, 4*time.Second)
	if l.written.Equal(first) {
		t.Fatal("a cover past the headroom did not rewrite the file")
	}
}

func mustDeadHolds(t *testing.T, dir, q string) []DeadHold {
	t.Helper()
	dead, err := DeadHolds(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	return dead
}
