package kafka

import (
	"os"
	"path/filepath"
	"testing"
)

func batchOf(part int32, offs ...int64) []*Message {
	out := make([]*Message, len(offs))
	for i, o := range offs {
		out[i] = &Message{Partition: part, Offset: o}
	}
	return out
}

// TestIntentLogNamesWhatKilledRunsProducedPastTheCommit: the intent files
// of killed runs (lock free) are claimed by the next run of the group,
// clipped to what the group's commit leaves pending, and attributed to the
// run that produced them (transactional or not) — also through a run
// killed in its turn, which carried them; a live run's file is left alone,
// a record a batch did not pick is never listed, a torn last line (killed
// mid-write, before the produce) is ignored; a clean end removes the file
// only once every carried record was produced again.
func TestIntentLogNamesWhatKilledRunsProducedPastTheCommit(t *testing.T) {
	dir := t.TempDir()
	live := openIntentLog(dir, "g/1", "pay-dlt", "run-live", false, nil, nil)
	live.record(batchOf(0, 0, 1, 2, 3))
	killed := openIntentLog(dir, "g/1", "pay-dlt", "run-killed", false, nil, nil)
	killed.record(append(batchOf(0, 10, 11, 12, 13, 14, 16, 17), batchOf(2, 100, 101, 102)...)) // 15 not picked
	if _, err := killed.f.WriteString("b 0 50 5"); err != nil {                                 // torn: no newline
		t.Fatal(err)
	}
	killed.f.Close() // kill -9: the file stays, its lock goes
	eos := openIntentLog(dir, "g/1", "pay-dlt", "run-eos", true, nil, nil)
	eos.record(batchOf(1, 20, 21, 22))
	eos.f.Close()
	other := openIntentLog(dir, "g/2", "pay-dlt", "run-other-group", false, nil, nil)
	other.record(batchOf(0, 12))
	other.f.Close()

	plan := &Plan{Journals: map[int32]*PartitionJournal{0: NewPartitionJournal(12, ""), 1: NewPartitionJournal(0, ""), 2: NewPartitionJournal(0, "")}}
	next := openIntentLog(dir, "g/1", "pay-dlt", "run-next", false, plan, nil)
	if next == nil || next.prior == nil {
		t.Fatal("the next run inherited nothing")
	}
	if next.prior.total != 3+2+3+3 {
		t.Errorf("inherited %d offsets, want 11 (12-14, 16-17, 100-102, 20-22)", next.prior.total)
	}
	for _, c := range []struct {
		part int32
		off  int64
		run  string
		txn  bool
	}{{0, 11, "", false}, {0, 12, "run-killed", false}, {0, 15, "", false}, {0, 17, "run-killed", false}, {0, 50, "", false},
		{0, 2, "", false}, {2, 101, "run-killed", false}, {1, 22, "run-eos", true}, {1, 23, "", false}} {
		r, ok := next.prior.lookup(c.part, c.off)
		if ok != (c.run != "") || r.ID != c.run || r.Txn != c.txn {
			t.Errorf("partition %d offset %d: %+v %v; want %q (txn %v)", c.part, c.off, r, ok, c.run, c.txn)
		}
	}
	for _, l := range []*intentLog{killed, eos} {
		if _, err := os.Stat(l.path); !os.IsNotExist(err) {
			t.Errorf("a claimed dead run's file is still there: %s", l.path)
		}
	}
	for _, l := range []*intentLog{live, other} {
		if _, err := os.Stat(l.path); err != nil {
			t.Errorf("a live run's (or another group's) file was touched: %v", err)
		}
	}

	// The next run is killed in its turn: a third run still names the first.
	next.f.Close()
	third := openIntentLog(dir, "g/1", "pay-dlt", "run-third", false, nil, nil)
	if r, ok := third.prior.lookup(0, 13); !ok || r.ID != "run-killed" {
		t.Errorf("through a run killed twice, offset 13 is %+v %v; want run-killed", r, ok)
	}
	if r, ok := third.prior.lookup(1, 20); !ok || r.ID != "run-eos" || !r.Txn {
		t.Errorf("through a run killed twice, partition 1 offset 20 is %+v %v; want run-eos (txn)", r, ok)
	}
	// A clean end with carried records not produced again keeps the file;
	// once all were, it goes.
	third.close(true)
	if _, err := os.Stat(third.path); err != nil {
		t.Errorf("a run that left inherited records unsettled removed its file: %v", err)
	}
	fourth := openIntentLog(dir, "g/1", "pay-dlt", "run-fourth", false, nil, nil)
	fourth.prior.found = fourth.prior.total
	fourth.close(true)
	live.close(true)
	if files, _ := filepath.Glob(filepath.Join(intentDir(dir, "g/1", "pay-dlt"), "*.log")); len(files) != 0 {
		t.Errorf("intent files left after clean ends: %v", files)
	}
}
