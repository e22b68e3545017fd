package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// newCmdRedriveResume is 'dlqctl redrive resume': a run's options are read
// back from its journal and parsed as the redrive command parses its flags.
func newCmdRedriveResume(f *Factory, runF func(context.Context, *RedriveOptions) error) *cobra.Command {
	var dlqRef string
	c := &cobra.Command{
		Use:   "resume RUN_ID | --dlq DLQ",
		Short: "Finish a redrive run that was interrupted or killed",
		Long: withExitCodes(`Continue a run from its journal: messages the run already sent are deleted
from the DLQ without being sent again, the rest are moved with the run's
original options. After a crash, resume first waits for the messages the
run held to become visible again. 'dlqctl runs' lists run ids.

--dlq DLQ resumes the newest unfinished redrive run (running — left by a
killed process —, interrupted or partial) of that DLQ, never one of another
DLQ and never a canary-failed or guard-tripped one (those stopped for a
reason); with none, it says so and exits 0. The journals are read from
--state-dir: use the same (persistent) directory as the run.`),
		Example: `  dlqctl runs
  dlqctl redrive resume 20261130T031500-ab12cd --yes
  dlqctl redrive resume --dlq orders-dlq --yes --state-dir /var/lib/dlqctl`,
		Args: func(c *cobra.Command, args []string) error {
			if (len(args) == 1) == (dlqRef != "") || len(args) > 1 {
				return errs.BadInputf("redrive resume expects one RUN_ID or --dlq DLQ (not both); see 'dlqctl runs'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if (len(args) == 1 && isKafkaRef(args[0])) || isKafkaRef(dlqRef) {
				return errs.BadInputf("a Kafka redrive resumes by running the same redrive command again: its consumer group's committed offsets and its run journal carry it on")
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			} else {
				var err error
				if id, err = newestUnfinishedRedrive(c.Context(), f, dlqRef); err != nil || id == "" {
					return err
				}
			}
			j, err := redrive.OpenJournal(f.StateDir(), id)
			if err != nil {
				return err
			}
			meta := j.Meta()
			j.Close()
			if meta.Kind != "redrive" {
				return errs.BadInputf("run %s is a %s run; resume it with 'dlqctl %s'", meta.ID, meta.Kind, meta.Kind)
			}
			if meta.Status == redrive.StatusCompleted {
				f.IO.Infof("run %s already completed; nothing to do", meta.ID)
				return nil
			}
			opts := &RedriveOptions{}
			if err := json.Unmarshal(meta.Options, opts); err != nil {
				return fmt.Errorf("run %s has no usable options in its journal: %w", meta.ID, err)
			}
			opts.ResumeID = meta.ID
			opts.DLQ = meta.SourceURL
			if err := opts.parseRefs(); err != nil {
				return err
			}
			if err := opts.Transform.parse(); err != nil {
				return err
			}
			if err := opts.derive(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return redriveRun(c.Context(), f, opts)
		},
	}
	c.Flags().StringVar(&dlqRef, "dlq", "", "resume the newest unfinished redrive run of this DLQ (name, URL or ARN)")
	return c
}
