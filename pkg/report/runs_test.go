package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestRunRows: an unfinished redrive says how to resume it, an unfinished
// restore how to run it again, a finished run nothing, and neither does a
// failed one (refused by what it read: repeating it repeats the refusal).
func TestRunRows(t *testing.T) {
	at := time.Date(2026, 12, 4, 7, 0, 0, 0, time.Local)
	runs := []redrive.RunInfo{
		{RunMeta: redrive.RunMeta{ID: "r1", Kind: "redrive", Status: redrive.StatusInterrupted, Source: "arn:aws:sqs:us-east-1:1:orders-dlq", Destination: "orders", Created: at},
			Sent: 40, Deleted: 38, MaybeTwice: 1, Unconfirmed: 2},
		{RunMeta: redrive.RunMeta{ID: "r2", Kind: "restore", Status: redrive.StatusPartial, Source: "s3://b/arc/run=x/_manifest.json", Destination: "orders", Created: at,
			Transform: &redrive.TransformMeta{SHA256: "0123456789abcdef0123"}}, Sent: 3},
		{RunMeta: redrive.RunMeta{ID: "r3", Kind: "redrive", Status: redrive.StatusCompleted, Source: "orders-dlq", Destination: "orders", Created: at}, Sent: 5, Deleted: 5},
		{RunMeta: redrive.RunMeta{ID: "r4", Kind: "redrive", Status: redrive.StatusFailed, Source: "orders-dlq", Destination: "orders", Created: at}},
		{RunMeta: redrive.RunMeta{ID: "r5", Kind: "restore", Status: redrive.StatusFailed, Source: "s3://b/arc/run=x/_manifest.json", Destination: "orders", Created: at}},
	}
	rows := RunRows(runs)
	for i, want := range []string{"dlqctl redrive resume r1", "dlqctl restore s3://b/arc/run=x/_manifest.json --to orders (the same flags again)", "", "", ""} {
		if rows[i].Resume != want {
			t.Errorf("run %s: resume %q, want %q", rows[i].ID, rows[i].Resume, want)
		}
	}
	var out bytes.Buffer
	if err := WriteRuns(output.Test(nil, &out, &bytes.Buffer{}, false), output.Table, rows, "/state"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	started := at.Format(time.DateTime)
	want := []string{
		"r1\t" + started + "\tredrive\tinterrupted\torders-dlq\torders\t40\t38\t1 (+2 unconfirmed)\tdlqctl redrive resume r1",
		"r2\t" + started + "\trestore (transform 0123456789ab)\tpartial\ts3://b/arc/run=x/_manifest.json\torders\t3\t0\t0\tdlqctl restore s3://b/arc/run=x/_manifest.json --to orders (the same flags again)",
		"r3\t" + started + "\tredrive\tcompleted\torders-dlq\torders\t5\t5\t0\t-",
		"r4\t" + started + "\tredrive\tfailed\torders-dlq\torders\t0\t0\t0\t-",
		"r5\t" + started + "\trestore\tfailed\ts3://b/arc/run=x/_manifest.json\torders\t0\t0\t0\t-",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("runs table:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	var errOut bytes.Buffer
	out.Reset()
	if err := WriteRuns(output.Test(nil, &out, &errOut, false), output.Table, nil, "/state"); err != nil || out.Len() != 0 || !strings.Contains(errOut.String(), "no runs under /state") {
		t.Fatalf("no runs: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
}
