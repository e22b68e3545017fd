package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RestoreSummary is the JSON summary of a restore (-o json, NDJSON summary).
type RestoreSummary struct {
	*redrive.Result
	Status  string           `json:"status"`
	Archive string           `json:"archive"`
	To      string           `json:"to"`
	Canary  *redrive.Verdict `json:"canary,omitempty"`
	// Routed: each message went where its route sent it (--to source),
	// so the table counts them per destination.
	Routed bool `json:"-"`
}

// WriteRestoreSummary prints the end of a restore in format; on a table,
// tail adds the rows a restore shares with a redrive (transform, outcome)
// and renders it.
func WriteRestoreSummary(s *output.IOStreams, prog *output.Progress, format output.Format, sum RestoreSummary, tail func(*output.TablePrinter) error) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, sum)
	case output.NDJSON:
		return prog.Summary(sum)
	}
	res := sum.Result
	t := output.NewTable(s, "", "")
	runRows(t, res, sum.Status, "sent", sum.Archive, sum.To)
	if routed(sum.Routed, len(res.ByDestination)) {
		// --to source: where they went.
		for _, d := range slices.Sorted(maps.Keys(res.ByDestination)) {
			t.Row("  to "+d, strconv.Itoa(res.ByDestination[d]))
		}
	}
	if res.Resumed > 0 {
		t.Row("resumed", fmt.Sprintf("%d already sent by an earlier attempt; not sent again", res.Resumed))
	}
	skippedRows(t, res)
	if res.Failed > 0 {
		t.Row("failed", fmt.Sprintf("%d refused by %s; run the same command again to retry", res.Failed, sum.To))
	}
	if res.Unknown > 0 {
		t.Row("unknown", fmt.Sprintf("%d whose send outcome is unknown; a FIFO destination de-duplicates a retry within 5 minutes", res.Unknown))
	}
	return tail(t)
}

// RestorePlanOutput is the JSON of restore --dry-run.
type RestorePlanOutput struct {
	redrive.Plan
	Archive   string    `json:"archive"`
	To        string    `json:"to"`
	Selection string    `json:"selection"`
	Rate      float64   `json:"rate,omitempty"`
	Ramp      []float64 `json:"ramp,omitempty"`
	// FilterErrors: records the --filter or a rule failed on (skipped
	// "filter error").
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
	// Routed as in RestoreSummary.
	Routed bool `json:"-"`
}

// WriteRestorePlan prints a restore dry run's plan in format (a table
// after the transform's plan, which the caller prints).
func WriteRestorePlan(s *output.IOStreams, prog *output.Progress, format output.Format, out RestorePlanOutput) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, out)
	case output.NDJSON:
		return prog.Summary(out)
	}
	pl := out.Plan
	t := output.NewTable(s, "", "")
	t.Row("dry run", "nothing was sent")
	t.Row("archive", out.Archive)
	t.Row("selection", out.Selection)
	t.Row("would send", fmt.Sprintf("%d of %d archived message(s) to %s", pl.WouldMove, pl.Scanned, out.To))
	if routed(out.Routed, len(pl.ByDestination)) {
		// --to source: where each goes.
		for _, d := range slices.Sorted(maps.Keys(pl.ByDestination)) {
			n := 0
			for _, c := range pl.ByDestination[d] {
				n += c
			}
			t.Row("  to "+d, strconv.Itoa(n))
		}
	}
	if len(pl.Sources) > 0 {
		// Where they were dead-lettered from: a restore sends them all
		// to one destination.
		from := make([]string, 0, len(pl.Sources))
		for _, q := range slices.Sorted(maps.Keys(pl.Sources)) {
			from = append(from, fmt.Sprintf("%s %d", q, pl.Sources[q]))
		}
		t.Row("dead-lettered from", strings.Join(from, ", "))
	}
	for _, r := range slices.Sorted(maps.Keys(pl.Skipped)) {
		t.Row("skipped", fmt.Sprintf("%d %s", pl.Skipped[r], r))
	}
	if pl.EstimatedSeconds > 0 {
		t.Row("duration", output.Duration(time.Duration(pl.EstimatedSeconds*float64(time.Second))))
	}
	return t.Render()
}

// routed says whether a restore's count per destination is worth its
// rows: it went through a route (--to source), or to more than one queue.
func routed(route bool, dests int) bool { return route || dests > 1 }
