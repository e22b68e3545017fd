package redrive

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Only ids that give themselves back from prefix and number form runs.
func TestSplitRunIDTakesOnlyCanonicalNumbers(t *testing.T) {
	for id, ok := range map[string]bool{
		"orders-dlt-0@1234": true, "a@0": true, "x@y@7": true,
		"a@": false, "a@07": false, "a@-1": false, "a@+1": false, "a@1x": false,
		"6f1c2d3e-uuid": false, "a@1234567890123456789": false,
	} {
		p, n, got := splitRunID(id)
		if got != ok {
			t.Errorf("splitRunID(%q) ok = %v, want %v", id, got, ok)
		}
		if got && runID(p, n) != id {
			t.Errorf("splitRunID(%q) = %q %d, which gives back %q", id, p, n, runID(p, n))
		}
	}
}

// The interval set agrees with a plain set under random adds and removes.
func TestIntervalsMatchAPlainSet(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var s intervals
	plain := map[int64]bool{}
	for step := 0; step < 5000; step++ {
		from := int64(rng.Intn(300))
		to := from + int64(rng.Intn(20))
		want := int64(0)
		if rng.Intn(3) == 0 {
			for n := from; n <= to; n++ {
				if plain[n] {
					want++
					delete(plain, n)
				}
			}
			if got := s.remove(from, to); got != want {
				t.Fatalf("step %d: remove(%d, %d) = %d, want %d", step, from, to, got, want)
			}
		} else {
			for n := from; n <= to; n++ {
				if !plain[n] {
					want++
					plain[n] = true
				}
			}
			if got := s.add(from, to); got != want {
				t.Fatalf("step %d: add(%d, %d) = %d, want %d", step, from, to, got, want)
			}
		}
		for i := 1; i < len(s); i++ {
			if s[i][0] <= s[i-1][1]+1 {
				t.Fatalf("step %d: intervals not disjoint and apart: %v", step, s)
			}
		}
		for n := int64(-1); n < 330; n++ {
			if s.has(n) != plain[n] {
				t.Fatalf("step %d: has(%d) = %v, want %v", step, n, s.has(n), plain[n])
			}
		}
	}
}

// A batch of consecutive offsets is one sent line and one del line; a
// resume reads them back as the per-message lines would read: every id
// sent, those deleted not pending, the counts exact — also mixed with
// per-message lines and lines of an older journal.
func TestSentRunsReadBackLikePerMessageLines(t *testing.T) {
	dir := t.TempDir()
	meta := RunMeta{ID: "20261204T070000-abcdef", Kind: "redrive", Created: time.Now()}
	j, err := CreateJournal(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(p int, from, n int) []SentRecord {
		var recs []SentRecord
		for o := from; o < from+n; o++ {
			recs = append(recs, SentRecord{Orig: fmt.Sprintf("orders-dlt-%d@%d", p, o), Dest: "orders", DestID: fmt.Sprintf("orders-0@%d", o), SHA: fmt.Sprintf("%064x", o)})
		}
		return recs
	}
	ids := func(recs []SentRecord) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Orig)
		}
		return out
	}
	a := append(batch(0, 100, 50), batch(1, 7, 50)...)
	b := batch(0, 150, 10)
	// A resent copy stays a line of its own (its flags are the report).
	c := []SentRecord{{Orig: "orders-dlt-2@5", Dest: "orders", DestID: "orders-1@9", SHA: "ab", MaybeTwice: true, Resent: true}}
	for _, recs := range [][]SentRecord{a, b, c} {
		if err := j.Sent(recs); err != nil {
			t.Fatal(err)
		}
	}
	j.Deleted(ids(a))
	j.Deleted(ids(c))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(RunsDir(dir), meta.ID, "journal.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n != 5 {
		t.Fatalf("journal has %d lines, want 5 (two batch lines, one resent line, two del lines):\n%s", n, raw)
	}
	if !strings.Contains(string(raw), `{"t":"sentr","dest":"orders","runs":[{"p":"orders-dlt-0@","from":100,"to":149},{"p":"orders-dlt-1@","from":7,"to":56}],"shas":[`) {
		t.Fatalf("no batch line for the first batch:\n%s", raw)
	}
	j, err = OpenJournal(dir, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	sent, deleted := j.Counts()
	if sent != 111 || deleted != 101 {
		t.Fatalf("counts after reopening: %d sent, %d deleted; want 111 and 101", sent, deleted)
	}
	for _, id := range append(append(ids(a), ids(b)...), ids(c)...) {
		if _, ok := j.WasSent(id); !ok {
			t.Fatalf("%s not known as sent after reopening", id)
		}
	}
	for _, id := range []string{"orders-dlt-0@99", "orders-dlt-0@160", "orders-dlt-1@57", "orders-dlt-2@4"} {
		if _, ok := j.WasSent(id); ok {
			t.Fatalf("%s known as sent, but no line has it", id)
		}
	}
	if got := len(j.PendingRecords()); got != 10 {
		t.Fatalf("%d pending records, want the 10 of the undeleted batch", got)
	}
	if !j.HasBody(fmt.Sprintf("%064x", 120)) {
		t.Fatal("a batch line's body digest is not known after reopening")
	}
	if n, recs := j.MaybeTwice(); n != 1 || recs[0].Orig != "orders-dlt-2@5" {
		t.Fatalf("maybe twice %d %v, want the resent copy", n, recs)
	}
}
