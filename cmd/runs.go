package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RunsOptions are the inputs of `dlqctl runs`.
type RunsOptions struct {
	F *Factory
}

// NewCmdRuns builds `dlqctl runs`.
func NewCmdRuns(f *Factory, runF func(context.Context, *RunsOptions) error) *cobra.Command {
	opts := &RunsOptions{F: f}
	return &cobra.Command{
		Use:   "runs",
		Short: "List redrive and restore runs and their journals' counts",
		Long: withExitCodes(`List the runs recorded under --state-dir, newest first: id, start, kind
(redrive or restore), status, the DLQ (or archive) read, destination, how
many messages the journal records as sent and as deleted from the DLQ, and
how to finish the run. A run left "running" was killed (or is still
running); "interrupted", "partial" and killed runs are finished with
'dlqctl redrive resume RUN_ID' (a redrive; or 'dlqctl redrive resume --dlq
DLQ' for the newest of a DLQ), or by running the same 'dlqctl restore' again
(a restore: it finds its unfinished run and does not send anything twice).
A "canary-failed" or "guard-tripped" run stopped for a reason: triage first.

Archive runs are not journaled here: their checkpoints and manifests are in
S3 ('dlqctl archive verify s3://BUCKET/PREFIX/' lists and checks them).

MAYBE TWICE counts the copies the journal marks as possibly delivered
twice: a send retried after its answer was lost, or a message sent again by
a resume because the process before it died after sending it and before
recording it. "(+N unconfirmed)": a killed run's sends whose outcome was
never recorded; resuming it sends those still in the DLQ again and counts
them here (docs/redrive.md, "After a kill").

-o json adds "resume": the command that finishes the run ("" when there is
nothing to finish), "maybe_twice" and "unconfirmed".`),
		Example: `  dlqctl runs
  dlqctl runs -o json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runsRun(opts)
		},
	}
}

func runsRun(opts *RunsOptions) error {
	f := opts.F
	runs, err := redrive.ListRuns(f.StateDir())
	if err != nil {
		return err
	}
	out := make([]runRow, 0, len(runs))
	for _, r := range runs {
		out = append(out, runRow{RunInfo: r, Resume: resumeCommand(r)})
	}
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, out)
	case output.NDJSON:
		w := output.NewNDJSON(f.IO.Out)
		for _, r := range out {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(runs) == 0 {
		f.IO.Infof("no runs under %s", f.StateDir())
		return nil
	}
	t := output.NewTable(f.IO, "RUN", "STARTED", "KIND", "STATUS", "FROM", "DESTINATION", "SENT", "DELETED", "MAYBE TWICE", "NEXT")
	for _, r := range out {
		dlq := record.ARNName(r.Source, "sqs")
		if dlq == "" {
			dlq = r.Source
		}
		kind := orDash(r.Kind)
		if r.Transform != nil {
			kind += fmt.Sprintf(" (transform %.12s)", r.Transform.SHA256)
		}
		t.Row(r.ID, r.Created.Local().Format(time.DateTime), kind, r.Status, dlq, r.Destination, fmt.Sprint(r.Sent), fmt.Sprint(r.Deleted), maybeTwiceCell(r.RunInfo), orDash(r.Resume))
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

// runRow is a run as `runs` prints it.
type runRow struct {
	redrive.RunInfo
	// Resume is the command that finishes the run ("" when there is
	// nothing to finish or it stopped on a verdict).
	Resume string `json:"resume"`
}

// resumeCommand is how to finish an unfinished run: a redrive is resumed
// by id; a restore by running the same restore again (it finds its run).
func resumeCommand(r redrive.RunInfo) string {
	switch r.Status {
	case redrive.StatusRunning, redrive.StatusInterrupted, redrive.StatusPartial, redrive.StatusFailed:
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
