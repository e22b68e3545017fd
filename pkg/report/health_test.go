package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// TestWriteCheck: the table shows each threshold in its unit, and a
// breach is a verdict (exit 3) naming the thresholds breached.
func TestWriteCheck(t *testing.T) {
	rep := &health.CheckReport{Results: []health.Result{
		{Name: "visible", Status: "breach", Value: 46, Limit: 10, Unit: "messages", Detail: "~46 visible"},
		{Name: "oldest_age", Status: "ok", Value: 90, Limit: 3600, Unit: "seconds"},
		{Name: "growth", Status: health.StatusUnknown, Value: 0, Limit: 50, Unit: "messages/5m", Detail: "no saved reading"},
	}}
	var out bytes.Buffer
	err := WriteCheck(output.Test(nil, &out, &bytes.Buffer{}, false), output.Table, rep, "orders-dlq")
	if errs.Code(err) != errs.ExitVerdict || !strings.Contains(err.Error(), "orders-dlq: 1 of 3 threshold(s) breached: visible") {
		t.Fatalf("verdict %v (code %d)", err, errs.Code(err))
	}
	want := "breach\tvisible\t46\t10\t~46 visible\nok\toldest_age\t1m\t1h\t\nunknown\tgrowth\t?\t50/5m\tno saved reading\n"
	if out.String() != want {
		t.Fatalf("check table:\n%q\nwant\n%q", out.String(), want)
	}
	rep.Results = rep.Results[1:]
	if err := WriteCheck(output.Test(nil, &out, &bytes.Buffer{}, false), output.JSON, rep, "orders-dlq"); err != nil {
		t.Fatalf("no breach: %v", err)
	}
}

func TestWatchText(t *testing.T) {
	g := 2.5
	if GrowthText(nil) != "-" || GrowthText(&g) != "+2.5" {
		t.Errorf("GrowthText: %q %q", GrowthText(nil), GrowthText(&g))
	}
	n, rate := int64(120), int32(50)
	tasks := []health.MoveTask{
		{Status: "RUNNING", Moved: 30, ToMove: &n, MaxPerSecond: &rate, DestinationARN: "arn:aws:sqs:us-east-1:1:orders"},
		{Status: "RUNNING", Moved: 5},
	}
	if got, want := MoveTaskText(tasks), "RUNNING 30/120 moved -> orders at 50/s; RUNNING 5 moved -> original sources"; got != want {
		t.Errorf("MoveTaskText = %q, want %q", got, want)
	}
	tick := health.Tick{At: time.Date(2026, 12, 4, 7, 0, 0, 0, time.UTC), Counts: health.Counts{Visible: 46, InFlight: 2},
		Terms: broker.DepthTerms{Ready: "visible", Held: "in flight"}, ListsMoves: true,
		Gauges: []broker.Gauge{{Name: "oldest", Value: "3d"}}}
	frame := WatchFrame("orders-dlq", 10*time.Second, tick)
	for _, want := range []string{clearScreen, "dlqctl watch orders-dlq  every 10s", "  visible     46\n", "  in-flight   2\n", "  growth/min  -\n", "  move task   none\n", "  oldest      3d\n"} {
		if !strings.Contains(frame, want) {
			t.Errorf("frame has no %q:\n%s", want, frame)
		}
	}
	if strings.Contains(frame, "delayed") {
		t.Errorf("a count the broker has no word for is shown:\n%s", frame)
	}
	var out bytes.Buffer
	if err := WriteWatchTick(output.Test(nil, &out, &bytes.Buffer{}, false), nil, "orders-dlq", time.Second, tick); err != nil {
		t.Fatal(err)
	}
	if want := "2026-12-04T07:00:00Z\t46\t2\t0\t-\t-\n"; out.String() != want {
		t.Errorf("piped tick %q, want %q", out.String(), want)
	}
}
