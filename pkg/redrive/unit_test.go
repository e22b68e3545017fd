package redrive

import (
	"fmt"
	"os"
	"path/filepath"
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
