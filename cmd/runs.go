package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/output"
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
		Short: "List redrive runs and their journals' counts",
		Long: withExitCodes(`List the runs recorded under --state-dir, newest first: id, start, status,
DLQ, destination, and how many messages the journal records as sent and as
deleted from the DLQ. A run left "running" was killed; "interrupted" and
"partial" runs can be finished with 'dlqctl redrive resume RUN_ID'.`),
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
	if runs == nil {
		runs = []redrive.RunInfo{}
	}
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, runs)
	case output.NDJSON:
		w := output.NewNDJSON(f.IO.Out)
		for _, r := range runs {
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
	t := output.NewTable(f.IO, "RUN", "STARTED", "STATUS", "DLQ", "DESTINATION", "SENT", "DELETED")
	for _, r := range runs {
		dlq := sqs.NameFromARN(r.Source)
		if dlq == "" {
			dlq = r.Source
		}
		t.Row(r.ID, r.Created.Local().Format(time.DateTime), r.Status, dlq, r.Destination, fmt.Sprint(r.Sent), fmt.Sprint(r.Deleted))
	}
	return t.Render()
}
