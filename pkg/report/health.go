package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// WriteAudit prints audit's findings in format: one block per finding on
// a terminal, one tab-separated line per finding when piped.
func WriteAudit(s *output.IOStreams, format output.Format, rep *health.AuditReport) error {
	if done, err := WriteStructured(s, format, rep, rep.Findings); done {
		return err
	}
	if !s.OutTTY {
		t := output.NewTable(s)
		for _, x := range rep.Findings {
			t.Row(string(x.Severity), x.Queue, x.Check, x.Problem, x.Why, x.Fix.SetAttribute(), x.Fix.Terraform, x.Fix.Text)
		}
		return t.Render()
	}
	var b strings.Builder
	for i, x := range rep.Findings {
		if i > 0 {
			b.WriteString("\n")
		}
		sev := fmt.Sprintf("%-5s", strings.ToUpper(string(x.Severity)))
		head := fmt.Sprintf("%s  %s  %s", s.Paint(output.SeverityStyle(string(x.Severity)), sev), x.Queue, x.Check)
		if x.Related != "" {
			head += "  (" + x.Related + ")"
		}
		if x.Sampled {
			head += "  [sampled]"
		}
		fmt.Fprintf(&b, "%s\n  %s\n  why: %s\n", head, x.Problem, x.Why)
		fix := x.Fix.Text
		if a := x.Fix.SetAttribute(); a != "" {
			fmt.Fprintf(&b, "  fix: SetQueueAttributes %s on %s\n", a, x.Fix.Queue)
			if x.Fix.Terraform != "" {
				fmt.Fprintf(&b, "       terraform: %s\n", x.Fix.Terraform)
			}
			fmt.Fprintf(&b, "       %s\n", fix)
		} else {
			fmt.Fprintf(&b, "  fix: %s\n", fix)
		}
		if x.Fix.Command != "" {
			fmt.Fprintf(&b, "       run: %s\n", x.Fix.Command)
		}
	}
	_, err := fmt.Fprint(s.Out, b.String())
	return err
}

// formatValue renders a threshold value in its unit.
func formatValue(r health.Result, v float64, isValue bool) string {
	switch {
	case r.Status == health.StatusUnknown && isValue:
		return "?"
	case r.Unit == "seconds":
		return output.Duration(time.Duration(v * float64(time.Second)))
	case strings.HasPrefix(r.Unit, "messages/"):
		per := strings.TrimPrefix(r.Unit, "messages")
		if isValue {
			return fmt.Sprintf("%+.1f%s", v, per)
		}
		return fmt.Sprintf("%.0f%s", v, per)
	}
	return fmt.Sprintf("%.0f", v)
}

// WriteCheck prints a check report of the queue name in format and turns
// breaches into a verdict error (exit 3).
func WriteCheck(s *output.IOStreams, format output.Format, rep *health.CheckReport, name string) error {
	var err error
	switch format {
	case output.JSON:
		err = output.WriteJSON(s.Out, rep)
	case output.NDJSON:
		err = output.NewNDJSON(s.Out).Write(rep)
	default:
		t := output.NewTable(s, "STATUS", "THRESHOLD", "VALUE", "LIMIT", "DETAIL")
		for _, r := range rep.Results {
			t.Row(r.Status, r.Name, formatValue(r, r.Value, true), formatValue(r, r.Limit, false), r.Detail)
		}
		err = t.Render()
	}
	if err != nil {
		return err
	}
	if b := rep.Breaches(); len(b) > 0 {
		names := make([]string, len(b))
		for i, r := range b {
			names[i] = r.Name
		}
		return errs.Verdictf("%s: %d of %d threshold(s) breached: %s", name, len(b), len(rep.Results), strings.Join(names, ", "))
	}
	return nil
}

// WriteWatchTick prints one reading of watch: an NDJSON line (nd set: -o
// json or ndjson), a redrawn frame on a terminal, else a tab-separated
// line.
func WriteWatchTick(s *output.IOStreams, nd *output.NDJSONWriter, name string, interval time.Duration, t health.Tick) error {
	switch {
	case nd != nil:
		return nd.Write(t)
	case s.OutTTY:
		_, err := fmt.Fprint(s.Out, WatchFrame(name, interval, t))
		return err
	default:
		_, err := fmt.Fprintln(s.Out, strings.Join([]string{
			t.At.Format(time.RFC3339), fmt.Sprint(t.Counts.Visible), fmt.Sprint(t.Counts.InFlight), fmt.Sprint(t.Counts.Delayed),
			GrowthText(t.GrowthPerMinute), MoveTaskText(t.MoveTasks),
		}, "\t"))
		return err
	}
}

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// WatchFrame is the terminal view of a tick: the counts the broker keeps,
// in its words, the growth, the move task where the broker runs them, and
// the broker's further figures.
func WatchFrame(name string, interval time.Duration, t health.Tick) string {
	type line struct{ name, value string }
	var lines []line
	add := func(name string, v string) { lines = append(lines, line{name, v}) }
	// A count the broker keeps, in one word ("in flight" -> "in-flight").
	for _, c := range []struct {
		term string
		n    int
	}{{t.Terms.Ready, t.Counts.Visible}, {t.Terms.Held, t.Counts.InFlight}, {t.Terms.Delayed, t.Counts.Delayed}} {
		if c.term != "" {
			add(strings.ReplaceAll(c.term, " ", "-"), fmt.Sprint(c.n))
		}
	}
	add("growth/min", GrowthText(t.GrowthPerMinute))
	if t.ListsMoves {
		mt := MoveTaskText(t.MoveTasks)
		if mt == "-" {
			mt = "none"
		}
		if t.MoveTaskError != "" {
			mt = "unknown (" + t.MoveTaskError + ")"
		}
		add("move task", mt)
	}
	for _, g := range t.Gauges {
		add(g.Name, g.Value)
	}
	width := 10
	for _, l := range lines {
		width = max(width, len(l.name))
	}
	var b strings.Builder
	b.WriteString(clearScreen)
	fmt.Fprintf(&b, "dlqctl watch %s  every %s  %s  (Ctrl-C to stop)\n\n", name, interval, t.At.Local().Format("15:04:05"))
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, l.name, l.value)
	}
	return b.String()
}

// GrowthText is a growth per minute ("-": not known yet).
func GrowthText(g *float64) string {
	if g == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f", *g)
}

// MoveTaskText lists the broker's own move tasks ("-": none).
func MoveTaskText(ts []health.MoveTask) string {
	if len(ts) == 0 {
		return "-"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		s := fmt.Sprintf("%s %d", t.Status, t.Moved)
		if t.ToMove != nil {
			s += fmt.Sprintf("/%d", *t.ToMove)
		}
		s += " moved"
		dest := record.ARNName(t.DestinationARN, "sqs")
		if dest == "" {
			dest = "original sources"
		}
		s += " -> " + dest
		if t.MaxPerSecond != nil {
			s += fmt.Sprintf(" at %d/s", *t.MaxPerSecond)
		}
		parts[i] = s
	}
	return strings.Join(parts, "; ")
}
