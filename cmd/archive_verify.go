package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// ArchiveVerifyOptions are the inputs of `dlqctl archive verify`.
type ArchiveVerifyOptions struct {
	F        *Factory
	Manifest string
}

func newCmdArchiveVerify(f *Factory, runF func(context.Context, *ArchiveVerifyOptions) error) *cobra.Command {
	opts := &ArchiveVerifyOptions{F: f}
	return &cobra.Command{
		Use:   "verify MANIFEST",
		Short: "Re-read an archive and check every part against its manifest",
		Long: withExitCodes(`Re-read every part of an archive run and check it: size and SHA-256 equal
the manifest's, the part is valid gzip, every line parses as a message record
whose body matches its body_sha256, and the record count and first/last
message ids equal the manifest's. Exit 0 when everything matches, 3 with the
list of what is wrong otherwise.

MANIFEST names a run: s3://BUCKET/…/run=<id>/_manifest.json or the run's
folder s3://BUCKET/…/run=<id>/, or a local copy (the manifest, or the
folder with the run's parts downloaded next to it). A folder or prefix
holding several runs (…/queue=<name>/, …/dt=<day>/, PREFIX/) verifies every
run under it: -o json prints {"ok", "runs": [one report per run]}, -o ndjson
one summary event per run. A run written by an older dlqctl
(…/<yyyy>/<mm>/<dd>/<run-id>/manifest.json) verifies the same way.`),
		Example: `  dlqctl archive verify s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/
  dlqctl archive verify s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/_manifest.json
  dlqctl archive verify s3://acme-dlq-archive/prod/queue=orders-dlq/      # every run of the queue
  dlqctl archive verify ./restore-me/ -o json`,
		Args: exactArgs(1, "one archive run or folder of runs (s3://BUCKET/…/run=<id>/, its _manifest.json, a queue=/dt= prefix, or a local copy)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Manifest = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return archiveVerifyRun(c.Context(), opts)
		},
	}
}

func archiveVerifyRun(ctx context.Context, opts *ArchiveVerifyOptions) error {
	f := opts.F
	in, err := f.reader().Archive(ctx, opts.Manifest)
	if err != nil {
		return err
	}
	format, _ := f.Format()
	var nd *report.NDJSONVerify
	if format == output.NDJSON {
		nd = report.NewNDJSONVerify(f.IO)
	}
	reps := make([]*archive.VerifyReport, 0, len(in.Refs))
	names := make([]string, 0, len(in.Refs))
	for _, ref := range in.Refs {
		rep, err := archive.VerifyArchive(ctx, ref, func(pc archive.PartCheck) {
			if nd != nil {
				nd.Part(pc)
			}
		})
		if err != nil {
			return err
		}
		reps, names = append(reps, rep), append(names, ref.Name())
		if nd != nil {
			if err := nd.Run(rep); err != nil {
				return err
			}
		}
	}
	return report.WriteArchiveVerify(f.IO, format, reps, names, opts.Manifest)
}
