package redrive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func rec(id, body string, attrs map[string]record.Attribute) *record.Record {
	if attrs == nil {
		attrs = map[string]record.Attribute{}
	}
	return &record.Record{MessageID: id, Body: body, BodySHA256: record.SHA256Hex(body), Attributes: attrs}
}

func TestJournalResumeKnowsWhatWasSentAndSurvivesATornLine(t *testing.T) {
	dir := t.TempDir()
	j, err := CreateJournal(dir, RunMeta{ID: "r1", Kind: "redrive", Fingerprint: "fp", Created: time.Now(), Visibility: 30})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := j.Sent([]SentRecord{{Orig: id, Dest: "q", DestID: "d-" + id, SHA: "sha-" + id}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	j.Deleted([]string{"w0-0", "w0-1"})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// kill -9 in the middle of a write leaves a torn last line.
	f, _ := os.OpenFile(filepath.Join(dir, "runs", "r1", "journal.ndjson"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":"sent","orig":"torn`)
	f.Close()

	runs, err := ListRuns(dir)
	if err != nil || len(runs) != 1 || runs[0].Sent != 160 || runs[0].Deleted != 2 || runs[0].Status != StatusRunning {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if u, _ := FindUnfinished(dir, "fp"); u == nil || u.ID != "r1" {
		t.Fatalf("unfinished run not found: %+v", u)
	}
	j2, err := OpenJournal(dir, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if r, ok := j2.WasSent("w7-19"); !ok || r.DestID != "d-w7-19" || !j2.HasBody("sha-w3-3") {
		t.Fatalf("reopened journal lost records: %+v %v", r, ok)
	}
	if _, ok := j2.WasSent("torn"); ok {
		t.Fatal("a torn line counted as sent")
	}
	if err := j2.SetStatus(StatusCompleted, ""); err != nil {
		t.Fatal(err)
	}
	if u, _ := FindUnfinished(dir, "fp"); u != nil {
		t.Fatalf("a completed run is offered for resume: %+v", u)
	}
	if _, err := OpenJournal(dir, "../etc"); err == nil {
		t.Fatal("a path as run id was accepted")
	}
}

func TestEstimateSecondsAlongARamp(t *testing.T) {
	cases := []struct {
		n    int
		rate float64
		ramp []float64
		want float64
	}{
		{100, 10, nil, 10},
		{100, 0, nil, 0},
		{100, 0, []float64{1, 10}, 60 + 4}, // 60 s at 1/s moves 60, then 40 at 10/s
		{30, 0, []float64{1, 10}, 30},
	}
	for _, c := range cases {
		if got := EstimateSeconds(c.n, c.rate, c.ramp, time.Minute); got != c.want {
			t.Errorf("EstimateSeconds(%d, %g, %v) = %g, want %g", c.n, c.rate, c.ramp, got, c.want)
		}
	}
}

// Finding the run to resume (or the completed run that makes a re-run a
// no-op) reads run descriptions only: a state directory keeps every past
// run's journal, and reading them all made every redrive start slower
// with each incident (657 past runs, 160 MB of journals: 1.6 s of CPU
// before the first message). The unreadable journal below (a directory)
// fails whatever reads it.
func TestFindingARunReadsOnlyItsOwnJournal(t *testing.T) {
	dir := t.TempDir()
	mk := func(id, fp, status string) {
		j, err := CreateJournal(dir, RunMeta{ID: id, Kind: "redrive", Fingerprint: fp, Created: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Sent([]SentRecord{{Orig: id + "-m1", Dest: "d", DestID: "x", SHA: "ab"}}); err != nil {
			t.Fatal(err)
		}
		if err := j.SetStatus(status, ""); err != nil {
			t.Fatal(err)
		}
		j.Close()
	}
	mk("20260101T000000-aaaaaa", "fp-other", StatusInterrupted)
	mk("20260102T000000-bbbbbb", "fp-mine", StatusInterrupted)
	mk("20260103T000000-cccccc", "fp-done", StatusCompleted)
	// Another DLQ's run whose journal cannot be read.
	mk("20260104T000000-dddddd", "fp-broken", StatusInterrupted)
	broken := filepath.Join(RunsDir(dir), "20260104T000000-dddddd", "journal.ndjson")
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(broken, 0o700); err != nil {
		t.Fatal(err)
	}

	got, err := FindUnfinished(dir, "fp-mine")
	if err != nil {
		t.Fatalf("finding the run to resume read another run's journal: %v", err)
	}
	if got == nil || got.ID != "20260102T000000-bbbbbb" || got.Sent != 1 {
		t.Fatalf("FindUnfinished = %+v, want run bbbbbb with its 1 sent", got)
	}
	done, err := completedRun(dir, "fp-done")
	if err != nil || done == nil || done.ID != "20260103T000000-cccccc" || done.Sent != 1 {
		t.Fatalf("completedRun = %+v, %v", done, err)
	}
	if none, err := FindUnfinished(dir, "fp-absent"); err != nil || none != nil {
		t.Fatalf("FindUnfinished(absent) = %+v, %v", none, err)
	}
	metas, err := ListRunMetas(dir)
	if err != nil || len(metas) != 4 || metas[0].ID != "20260104T000000-dddddd" {
		t.Fatalf("ListRunMetas = %d runs (%v), want 4, newest first", len(metas), err)
	}
	// `dlqctl runs` reads every journal and says which one it could not.
	if _, err := ListRuns(dir); err == nil || !strings.Contains(err.Error(), "dddddd") {
		t.Fatalf("ListRuns = %v, want an error naming run dddddd", err)
	}
}

// `dlqctl runs` counts a closed run from what its journal said when it was
// closed, and reads the journal again once it has grown: a resume (or a
// resumed run killed mid-way) appends to it.
func TestRunCountsSurviveCloseAndFollowAResume(t *testing.T) {
	dir := t.TempDir()
	meta := RunMeta{ID: "20260101T000000-aaaaaa", Kind: "redrive", Fingerprint: "fp", Created: time.Now()}
	j, err := CreateJournal(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Sent([]SentRecord{{Orig: "m1", Dest: "d", DestID: "1", SHA: "aa"}, {Orig: "m2", Dest: "d", DestID: "2", SHA: "bb", MaybeTwice: true}}); err != nil {
		t.Fatal(err)
	}
	j.Deleted([]string{"m1"})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	counts := func() RunInfo {
		t.Helper()
		runs, err := ListRuns(dir)
		if err != nil || len(runs) != 1 {
			t.Fatalf("ListRuns = %v, %v", runs, err)
		}
		return runs[0]
	}
	if r := counts(); r.Sent != 2 || r.Deleted != 1 || r.MaybeTwice != 1 {
		t.Fatalf("after close: sent %d deleted %d maybe-twice %d, want 2 1 1", r.Sent, r.Deleted, r.MaybeTwice)
	}
	if _, err := os.Stat(filepath.Join(RunsDir(dir), meta.ID, countsFile)); err != nil {
		t.Fatalf("no counts saved at close: %v", err)
	}
	// A resume sends one more and deletes m2, then dies before closing.
	j2, err := OpenJournal(dir, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.Sent([]SentRecord{{Orig: "m3", Dest: "d", DestID: "3", SHA: "cc"}}); err != nil {
		t.Fatal(err)
	}
	if r := counts(); r.Sent != 3 || r.Deleted != 1 {
		t.Fatalf("during a resume: sent %d deleted %d, want 3 1 (the journal grew: read again)", r.Sent, r.Deleted)
	}
	j2.Deleted([]string{"m2", "m3"})
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if r := counts(); r.Sent != 3 || r.Deleted != 3 || r.MaybeTwice != 1 {
		t.Fatalf("after the resume closed: sent %d deleted %d maybe-twice %d, want 3 3 1", r.Sent, r.Deleted, r.MaybeTwice)
	}
	// The saved counts agree with a full read of the journal.
	os.Remove(filepath.Join(RunsDir(dir), meta.ID, countsFile))
	if r := counts(); r.Sent != 3 || r.Deleted != 3 || r.MaybeTwice != 1 {
		t.Fatalf("from the journal: sent %d deleted %d maybe-twice %d, want 3 3 1", r.Sent, r.Deleted, r.MaybeTwice)
	}
}
