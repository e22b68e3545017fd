package redrive

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// killJournal closes a journal's file the way kill -9 does: whatever was
// buffered and not yet written is lost, the lock is dropped.
func killJournal(j *Journal) { j.f.Close() }

// TestAnIntentWithoutItsConfirmationIsOutcomeUnknownOnResume: a batch's
// intent is on disk before the broker sees it; sent and unsent lines
// confirm it. After a kill, the reopened journal reports exactly the ids
// whose intent has no confirmation — with their destination — and `runs`
// counts them; resending one (Resent) and settling the rest as gone
// closes them, and `runs` then counts the resend as maybe twice.
func TestAnIntentWithoutItsConfirmationIsOutcomeUnknownOnResume(t *testing.T) {
	dir := t.TempDir()
	meta := RunMeta{ID: "20260101T000000-bbbbbb", Kind: "redrive", Fingerprint: "fp", Created: time.Now()}
	j, err := CreateJournal(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	// Batch 1: sent and confirmed, deleted.
	if err := j.Intend("orders", []string{"m1", "m2"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Sent([]SentRecord{{Orig: "m1", Dest: "q", DestID: "d1", SHA: "aa"}, {Orig: "m2", Dest: "q", DestID: "d2", SHA: "bb"}}); err != nil {
		t.Fatal(err)
	}
	j.Deleted([]string{"m1", "m2"})
	// Batch 2: m3 accepted, m4 refused by the destination (settled).
	if err := j.Intend("orders", []string{"m3", "m4"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Sent([]SentRecord{{Orig: "m3", Dest: "q", DestID: "d3", SHA: "cc"}}); err != nil {
		t.Fatal(err)
	}
	j.Unsent([]string{"m4"})
	// Batches 3 and 4, two workers: handed to the broker, then the kill.
	if err := j.Intend("orders", []string{"m5", "m6"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Intend("payments", []string{"m7"}); err != nil {
		t.Fatal(err)
	}
	if d, ok := j.Unconfirmed("m5"); !ok || d != "orders" {
		t.Fatalf("Unconfirmed(m5) = %q, %v during the run", d, ok)
	}
	if _, ok := j.Unconfirmed("m3"); ok {
		t.Fatal("a sent message is still unconfirmed")
	}
	killJournal(j)

	runs, err := ListRuns(dir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns = %+v, %v", runs, err)
	}
	if r := runs[0]; r.Sent != 3 || r.Deleted != 2 || r.Unconfirmed != 3 || r.MaybeTwice != 0 {
		t.Fatalf("killed run: sent %d deleted %d unconfirmed %d maybe-twice %d; want 3 2 3 0", r.Sent, r.Deleted, r.Unconfirmed, r.MaybeTwice)
	}
	j2, err := OpenJournal(dir, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"m5": "orders", "m6": "orders", "m7": "payments"}
	if got := j2.UnconfirmedAtOpen(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the kill the journal finds unconfirmed %v, want %v (m4 was refused: settled; m1-m3 confirmed)", got, want)
	}
	// The resume: m5 still in the DLQ, sent again (to another destination
	// this time: the report keeps where the first copy may be); m6 and m7
	// gone.
	if err := j2.Intend("orders-recovery", []string{"m5"}); err != nil {
		t.Fatal(err)
	}
	if d, _ := j2.Unconfirmed("m5"); d != "orders" {
		t.Fatalf("a second intent replaced the first one's destination: %q", d)
	}
	if err := j2.Sent([]SentRecord{{Orig: "m5", Dest: "q", DestID: "d5", SHA: "ee", MaybeTwice: true, Resent: true}}); err != nil {
		t.Fatal(err)
	}
	j2.Gone([]string{"m6", "m7"})
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	j3, err := OpenJournal(dir, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := j3.UnconfirmedAtOpen(); len(got) != 0 {
		t.Fatalf("after the resume %v are still unconfirmed", got)
	}
	killJournal(j3)
	for _, fromJournal := range []bool{false, true} {
		if fromJournal {
			os.Remove(filepath.Join(RunsDir(dir), meta.ID, countsFile))
		}
		runs, _ = ListRuns(dir)
		if r := runs[0]; r.Sent != 4 || r.Unconfirmed != 0 || r.MaybeTwice != 1 {
			t.Fatalf("after the resume (read from the journal: %v): sent %d unconfirmed %d maybe-twice %d; want 4 0 1", fromJournal, r.Sent, r.Unconfirmed, r.MaybeTwice)
		}
	}
	// The journal's lines, as docs/redrive.md documents them.
	b, err := os.ReadFile(filepath.Join(RunsDir(dir), meta.ID, "journal.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, l := range []string{
		`{"t":"intent","dest":"orders","ids":["m1","m2"]}`,
		`{"t":"unsent","ids":["m4"]}`,
		`{"t":"sent","orig":"m5","dest":"q","dest_id":"d5","sha":"ee","maybe_twice":true,"resent":true}`,
		`{"t":"gone","ids":["m6","m7"]}`,
	} {
		if !strings.Contains(text, l+"\n") {
			t.Errorf("journal has no line %s:\n%s", l, text)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("journal line %q is not JSON: %v", l, err)
		}
	}
}

// An intent is written and fsynced before Intend returns — the broker is
// called after it — so even a kill right after leaves it on disk; a torn
// intent line (killed mid-write) is skipped like a torn sent line.
func TestAnIntentIsOnDiskBeforeTheSendAndATornOneIsSkipped(t *testing.T) {
	dir := t.TempDir()
	meta := RunMeta{ID: "20260101T000000-cccccc", Kind: "redrive", Created: time.Now()}
	j, err := CreateJournal(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Intend("q", []string{"a\"1", "b\n2"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(RunsDir(dir), meta.ID, "journal.ndjson")
	b, _ := os.ReadFile(path)
	if want := `{"t":"intent","dest":"q","ids":["a\"1","b\n2"]}` + "\n"; string(b) != want {
		t.Fatalf("on disk after Intend: %q, want %q", b, want)
	}
	killJournal(j)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":"intent","dest":"q","ids":["c`)
	f.Close()
	j2, err := OpenJournal(dir, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if got := j2.UnconfirmedAtOpen(); !reflect.DeepEqual(got, map[string]string{"a\"1": "q", "b\n2": "q"}) {
		t.Fatalf("unconfirmed %v", got)
	}
}

// TestKeptLinesSurviveAReopen: what a transforming run recorded of its
// originals (the parts and their ids) is what a resumed attempt finds,
// and the kept line is on disk once the intent that follows it is.
func TestKeptLinesSurviveAReopen(t *testing.T) {
	dir := t.TempDir()
	j, err := CreateJournal(dir, RunMeta{ID: "k1", Kind: "redrive", Created: time.Now(),
		Transform: &TransformMeta{Expression: ".json.a |= tonumber", SHA256: strings.Repeat("ab", 32), Originals: "s3://b/p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Kept(json.RawMessage(`{"key":"p/part-00001.ndjson.gz","records":2}`), []string{"m1", "m2"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Intend("q", []string{"m1"}); err != nil {
		t.Fatal(err)
	}
	// Without a Close (a kill -9 after the intent): read what is on disk.
	b, err := os.ReadFile(filepath.Join(j.Dir(), "journal.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"t":"kept"`) || !strings.Contains(lines[1], `"t":"intent"`) {
		t.Fatalf("journal on disk after the intent:\n%s\nwant the kept line, then the intent", b)
	}
	killJournal(j)
	r, err := OpenJournal(dir, "k1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.WasKept("m1") || !r.WasKept("m2") || r.WasKept("m3") {
		t.Fatal("kept ids not found after a reopen")
	}
	if parts := r.KeptParts(); len(parts) != 1 || !strings.Contains(string(parts[0]), "part-00001") {
		t.Fatalf("parts after a reopen: %s", parts)
	}
	if m := r.Meta(); m.Transform == nil || m.Transform.Expression != ".json.a |= tonumber" {
		t.Fatalf("run.json transform %+v", m.Transform)
	}
}
