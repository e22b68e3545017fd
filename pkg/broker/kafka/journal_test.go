package kafka

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestJournalCommitsOnlyContiguousHandledRecords(t *testing.T) {
	j := NewPartitionJournal(10, "")
	for _, o := range []int64{12, 13, 15} {
		if err := j.Mark(o); err != nil {
			t.Fatal(err)
		}
	}
	if j.Committed() != 10 {
		t.Fatalf("committed = %d, want 10: record 10 is still pending", j.Committed())
	}
	if !j.Handled(12) || !j.Handled(15) || j.Handled(11) || j.Handled(14) || j.Handled(10) {
		t.Fatal("handled set wrong")
	}
	// A later run reads the commit back and sees the same state.
	k := NewPartitionJournal(j.Committed(), j.Metadata())
	for o := int64(8); o < 18; o++ {
		if k.Handled(o) != j.Handled(o) {
			t.Fatalf("offset %d: handled %v after a round trip, want %v", o, k.Handled(o), j.Handled(o))
		}
	}
	// Handling the pending records moves the commit past everything contiguous.
	_ = k.Mark(10)
	if k.Committed() != 11 {
		t.Fatalf("committed = %d, want 11", k.Committed())
	}
	_ = k.Mark(11)
	if k.Committed() != 14 || k.Metadata() == "" {
		t.Fatalf("committed = %d (metadata %q), want 14 with 15 listed", k.Committed(), k.Metadata())
	}
	_ = k.Mark(14)
	if k.Committed() != 16 || k.Metadata() != "" {
		t.Fatalf("committed = %d metadata %q, want 16 and none", k.Committed(), k.Metadata())
	}
}

func TestJournalMergesSpans(t *testing.T) {
	j := NewPartitionJournal(0, "")
	for _, o := range []int64{5, 7, 6, 9, 8, 3} {
		_ = j.Mark(o)
	}
	if len(j.done) != 2 || j.done[0] != (span{3, 4}) || j.done[1] != (span{5, 10}) {
		t.Fatalf("spans = %v", j.done)
	}
	if j.HandledAbove() != 6 {
		t.Fatalf("HandledAbove = %d", j.HandledAbove())
	}
}

func TestJournalIgnoresForeignMetadata(t *testing.T) {
	for _, md := range []string{"", "some other tool", "dlqctl1:!!!", "dlqctl1:AA"} {
		j := NewPartitionJournal(4, md)
		if j.Handled(5) || j.HandledAbove() != 0 {
			t.Fatalf("metadata %q: listed records that are not handled", md)
		}
	}
}

func TestJournalFullKeepsRecordsPending(t *testing.T) {
	j := NewPartitionJournal(0, "")
	var full bool
	for o := int64(2); o < 200000; o += 2 { // every other record: one span each
		if err := j.Mark(o); err != nil {
			if !errors.Is(err, ErrJournalFull) {
				t.Fatal(err)
			}
			if j.Handled(o) {
				t.Fatalf("offset %d refused but listed as handled", o)
			}
			full = true
			break
		}
	}
	if !full {
		t.Fatal("journal never filled")
	}
	if n := len(j.Metadata()); n > MaxMetadataBytes {
		t.Fatalf("metadata %d bytes, over the %d bound", n, MaxMetadataBytes)
	}
}

func TestMarkerEncodingMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC)
	got := appendMarker(nil, "run-\"1\"", "orders-dlq-0@7", 3, at)
	var mk record.Marker
	if err := json.Unmarshal(got, &mk); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if mk.RunID != "run-\"1\"" || mk.OriginalID != "orders-dlq-0@7" || mk.Count != 3 || !mk.At.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("decoded %+v from %s", mk, got)
	}
}
