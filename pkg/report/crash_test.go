package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestCrashDuplicatesNamesAnEarlierAttemptsRetriedSends: a resumed run
// whose killed attempt recorded sends the SDK retried says so on stderr
// (the attempt died before its own summary; with -o json stdout is the
// record, so stderr is the only sentence an operator reads).
func TestCrashDuplicatesNamesAnEarlierAttemptsRetriedSends(t *testing.T) {
	var out, errOut bytes.Buffer
	CrashDuplicates(output.Test(nil, &out, &errOut, false), &redrive.Result{RunID: "r1", MaybeTwice: 10, MaybeTwiceEarlier: 10})
	if got := errOut.String(); !strings.Contains(got, "resumed run r1: 10 message(s) may have been delivered twice by an earlier attempt") {
		t.Fatalf("stderr %q does not name the earlier attempt's 10 copies", got)
	}
	if out.Len() != 0 {
		t.Fatalf("stdout %q: the note belongs on stderr", out.String())
	}
	errOut.Reset()
	CrashDuplicates(output.Test(nil, &out, &errOut, false), &redrive.Result{RunID: "r2", MaybeTwice: 3})
	if errOut.Len() != 0 {
		t.Fatalf("a run's own retried sends are its summary's row, not a crash note: %q", errOut.String())
	}
}
