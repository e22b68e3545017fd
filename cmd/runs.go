package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/report"
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
(redrive or restore), status, the DLQ (or archive) read, destination, the
journal's counts of messages sent and deleted from the DLQ, and how to finish
the run. A run left "running" was killed (or is still running); "interrupted",
"partial" and killed runs are finished with 'dlqctl redrive resume RUN_ID' (a
redrive; 'dlqctl redrive resume --dlq DLQ' for the newest of a DLQ), or by
running the same 'dlqctl restore' again (a restore: it finds its unfinished
run and does not send anything twice). A "canary-failed" or "guard-tripped"
run stopped for a reason: triage first. A "failed" run moved nothing (its
--filter, --rules or --transform failed on every message): fix the command
and run it again.

Archive runs are not journaled here: their checkpoints and manifests are in
S3 ('dlqctl archive verify s3://BUCKET/PREFIX/' lists and checks them).

MAYBE TWICE counts the copies the journal marks as possibly delivered twice:
a send retried after its answer was lost, or a message sent again by a resume
because the process before it died after sending it and before recording it.
"(+N unconfirmed)": a killed run's sends whose outcome it never recorded; a
resume sends those still in the DLQ again (docs/redrive.md, "After a kill").

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
	runs, err := redrive.ListRuns(opts.F.StateDir())
	if err != nil {
		return err
	}
	format, _ := opts.F.Format()
	return report.WriteRuns(opts.F.IO, format, report.RunRows(runs), opts.F.StateDir())
}
