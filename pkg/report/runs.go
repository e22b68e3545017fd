package report

import (
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RunRows are the runs as `runs` prints them, each with the command that
// finishes it.
func RunRows(runs []redrive.RunInfo) []RunRow {
	out := make([]RunRow, 0, len(runs))
	for _, r := range runs {
		out = append(out, RunRow{RunInfo: r, Resume: resumeCommand(r)})
	}
	return out
}

// WriteRuns prints the runs of the state directory stateDir in format.
func WriteRuns(s *output.IOStreams, format output.Format, out []RunRow, stateDir string) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, out)
	case output.NDJSON:
		w := output.NewNDJSON(s.Out)
		for _, r := range out {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(out) == 0 {
		s.Infof("no runs under %s", stateDir)
		return nil
	}
	t := output.NewTable(s, "RUN", "STARTED", "KIND", "STATUS", "FROM", "DESTINATION", "SENT", "DELETED", "MAYBE TWICE", "NEXT")
	for _, r := range out {
		dlq := record.ARNName(r.Source, "sqs")
		if dlq == "" {
			dlq = r.Source
		}
		kind := dash(r.Kind)
		if r.Transform != nil {
			kind += fmt.Sprintf(" (transform %.12s)", r.Transform.SHA256)
		}
		t.Row(r.ID, r.Created.Local().Format(time.DateTime), kind, r.Status, dlq, r.Destination, fmt.Sprint(r.Sent), fmt.Sprint(r.Deleted), maybeTwiceCell(r.RunInfo), dash(r.Resume))
	}
	return t.Render()
}

// maybeTwiceCell is the MAYBE TWICE column: copies the journal marks as
// possibly delivered twice, and the sends a killed process never recorded
// (a resume sends those still in the DLQ again and counts them there).
func maybeTwiceCell(r redrive.RunInfo) string {
	if r.Unconfirmed > 0 {
		return fmt.Sprintf("%d (+%d unconfirmed)", r.MaybeTwice, r.Unconfirmed)
	}
	return fmt.Sprint(r.MaybeTwice)
}

// RunRow is a run as `runs` prints it.
type RunRow struct {
	redrive.RunInfo
	// Resume is the command that finishes the run ("" when there is
	// nothing to finish or it stopped on a verdict).
	Resume string `json:"resume"`
}

// resumeCommand is how to finish an unfinished run: a redrive is resumed
// by id; a restore by running the same restore again (it finds its run).
// A failed run has none: it was refused by what it read (a --filter,
// --rules or --transform that failed on every message, so nothing moved),
// and repeating it repeats the refusal; the fix is a corrected command.
func resumeCommand(r redrive.RunInfo) string {
	switch r.Status {
	case redrive.StatusRunning, redrive.StatusInterrupted, redrive.StatusPartial:
	default:
		return ""
	}
	switch r.Kind {
	case "restore":
		return fmt.Sprintf("dlqctl restore %s --to %s (the same flags again)", r.Source, r.Destination)
	case "redrive", "":
		return "dlqctl redrive resume " + r.ID
	}
	return ""
}
