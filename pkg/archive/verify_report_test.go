package archive

import (
	"slices"
	"testing"
)

func TestVerifyReportAllProblems(t *testing.T) {
	r := &VerifyReport{
		Parts: []PartCheck{
			{Key: "p/part-00001.ndjson.gz", OK: true},
			{Key: "p/part-00002.ndjson.gz", Problems: []string{"size 10, manifest says 12", "sha256 differs"}},
		},
		Problems: []string{"records 3, manifest says 4"},
	}
	want := []string{"p/part-00002.ndjson.gz: size 10, manifest says 12", "p/part-00002.ndjson.gz: sha256 differs", "records 3, manifest says 4"}
	if got := r.AllProblems(); !slices.Equal(got, want) {
		t.Fatalf("AllProblems() = %q, want %q", got, want)
	}
	if got := (&VerifyReport{Parts: []PartCheck{{Key: "k", OK: true}}}).AllProblems(); len(got) != 0 {
		t.Fatalf("a clean report has problems %q", got)
	}
}
