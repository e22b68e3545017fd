package kafka

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMemberLedgerTellsDeadRunsFromLivePeers: a running process's entry
// (its lock held) is never listed as dead; once its file is closed without
// being removed — what a kill -9 leaves — it is listed with its member id
// and session timeout; an entry of a process killed before the group gave
// it a member id is removed; a clean close removes the entry.
func TestMemberLedgerTellsDeadRunsFromLivePeers(t *testing.T) {
	dir := t.TempDir()
	live := openMemberLedger(dir, "g/1", "orders-dlt", 10*time.Second, nil)
	if live == nil {
		t.Fatal("no ledger")
	}
	live.setMember("member-live")
	killed := openMemberLedger(dir, "g/1", "orders-dlt", 12*time.Second, nil)
	killed.setMember("member-killed")
	early := openMemberLedger(dir, "g/1", "orders-dlt", 10*time.Second, nil)

	if d := deadMembers(dir, "g/1"); len(d) != 0 {
		t.Fatalf("live processes listed as dead: %+v", d)
	}
	// kill -9: the file stays, its lock goes.
	killed.f.Close()
	early.f.Close()
	d := deadMembers(dir, "g/1")
	if len(d) != 1 || d[0].MemberID != "member-killed" || d[0].session() != 12*time.Second || d[0].PID != os.Getpid() {
		t.Fatalf("dead members %+v; want the killed run's member with its 12s session", d)
	}
	if _, err := os.Stat(early.path); !os.IsNotExist(err) {
		t.Errorf("the entry of a run killed before it had a member id is still there: %v", err)
	}
	live.close()
	if _, err := os.Stat(live.path); !os.IsNotExist(err) {
		t.Errorf("a cleanly closed run's entry is still there: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(memberDir(dir, "g/1"), "*.json")); len(files) != 1 {
		t.Errorf("ledger files %v; want only the killed run's", files)
	}
}
