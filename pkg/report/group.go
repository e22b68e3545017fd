package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// GroupReport is the JSON output of `dlqctl group`.
type GroupReport struct {
	Queue     string           `json:"queue,omitempty"`
	By        []string         `json:"by"`
	Selection string           `json:"selection"`
	Read      int              `json:"read"`
	Matched   int              `json:"matched"`
	Complete  bool             `json:"complete"`
	Depth     int              `json:"depth,omitempty"`
	Note      string           `json:"note,omitempty"`
	Groups    []*inspect.Group `json:"groups"`
	// FilterErrors: messages the --filter or a rule failed on (left out).
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
	// NoFailureHint, printed under the table, says where the failure of
	// the messages grouped as (no failure context) can be found on this
	// broker ("" when nowhere, or already asked for).
	NoFailureHint string `json:"-"`
}

// WriteGroups prints rep in format; ages and expiries count from now.
func WriteGroups(s *output.IOStreams, format output.Format, rep *GroupReport, now time.Time) error {
	if done, err := WriteStructured(s, format, rep, rep.Groups); done {
		return err
	}
	if len(rep.Groups) == 0 {
		s.Infof("no messages")
		return nil
	}
	estimated := anyEstimate(rep.Groups)
	var headers []string
	for _, k := range rep.By {
		headers = append(headers, strings.ReplaceAll(strings.ToUpper(output.Truncate(k, 24)), "_", " "))
	}
	headers = append(append(headers, countColumns(estimated)...), "RECV", "EXAMPLES")
	t := output.NewTable(s, headers...)
	for _, g := range rep.Groups {
		var row []string
		for _, v := range g.Values {
			row = append(row, s.Cell(v, 72))
		}
		row = append(append(row, countCells(g, estimated, now)...), RecvCell(g), strings.Join(g.Examples, " "))
		t.Row(row...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if rep.NoFailureHint != "" {
		s.Infof("%s", rep.NoFailureHint)
	}
	return nil
}

// anyEstimate reports whether a group's total is estimated (only a sample
// of a queue of known depth was read): the table then has the EST. TOTAL
// column.
func anyEstimate(groups []*inspect.Group) bool {
	for _, g := range groups {
		if g.Estimate != nil {
			return true
		}
	}
	return false
}

// countColumns are the headers of countCells.
func countColumns(estimated bool) []string {
	h := []string{"COUNT", "SHARE"}
	if estimated {
		h = append(h, "EST. TOTAL (95%)")
	}
	return append(h, "OLDEST", "EXPIRES")
}

// countCells are a group's count, share, estimated total (when the table
// has estimates), oldest age and soonest expiry, for group's and
// classify --summary's tables.
func countCells(g *inspect.Group, estimated bool, now time.Time) []string {
	row := []string{fmt.Sprint(g.Count), fmt.Sprintf("%.1f%%", 100*g.Share)}
	if estimated {
		row = append(row, EstimateCell(g.Estimate))
	}
	return append(row, AgeCell(now, g.OldestSentAt), ExpiryCell(now, g.SoonestExpiry))
}
