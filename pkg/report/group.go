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
	estimated := false
	for _, g := range rep.Groups {
		estimated = estimated || g.Estimate != nil
	}
	var headers []string
	for _, k := range rep.By {
		headers = append(headers, strings.ReplaceAll(strings.ToUpper(output.Truncate(k, 24)), "_", " "))
	}
	headers = append(headers, "COUNT", "SHARE")
	if estimated {
		headers = append(headers, "EST. TOTAL (95%)")
	}
	headers = append(headers, "OLDEST", "EXPIRES", "RECV", "EXAMPLES")
	t := output.NewTable(s, headers...)
	for _, g := range rep.Groups {
		var row []string
		for _, v := range g.Values {
			row = append(row, output.Truncate(v, 72))
		}
		row = append(row, fmt.Sprint(g.Count), fmt.Sprintf("%.1f%%", 100*g.Share))
		if estimated {
			row = append(row, EstimateCell(g.Estimate))
		}
		row = append(row, AgeCell(now, g.OldestSentAt), ExpiryCell(now, g.SoonestExpiry), RecvCell(g),
			strings.Join(g.Examples, " "))
		t.Row(row...)
	}
	return t.Render()
}
