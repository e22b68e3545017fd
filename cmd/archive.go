package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// ArchiveOptions are the inputs of `dlqctl archive`.
type ArchiveOptions struct {
	// flags are the command's flags, to refuse those the queue's broker
	// cannot honour (refuseFlags).
	flags *pflag.FlagSet
	F     *Factory

	Queue       string
	To          string
	Dest        archive.Location
	Selection   SelectionFlags
	Max         int
	Delete      bool
	DryRun      bool
	PartSizeRaw string
	PartSize    int64
	PartRecords int
	SSE         string
	KMSKeyID    string
	Rate        float64
	Visibility  time.Duration
	Concurrency int
	// WaitInFlight waits at the end for messages in flight elsewhere.
	WaitInFlight bool
	// RateShareRaw is --rate-share I/N (cmd/flaggroups.go).
	RateShareRaw string
	// DeleteRecords (Kafka) deletes the records below dlqctl's committed
	// offsets after the run (DeleteRecords: irreversible).
	DeleteRecords bool
}

const archiveLong = `Archive messages of a queue (normally a DLQ; or a Kafka topic, kafka://HOST:PORT/TOPIC,
where --delete commits dlqctl's group past verified records and
--delete-records then deletes them from the topic) to S3 before anything is
discarded, and verify the archive.

Messages are streamed into parts: gzip-compressed NDJSON of message records
(the exact body, every attribute — binary ones as base64 — the system
attributes, the class, action and rule — built-in rules unless --rules —
and the error fingerprint; 'dlqctl help archive.md' has the record contract). A part
closes at --part-size (compressed) or --part-records, whichever comes first,
so the messages dlqctl holds stay far from SQS's 12 h visibility ceiling and
its in-flight limit. Keys (Hive-style partition folders that Athena, DuckDB
and Spark read as a table as they are; the manifest's leading "_" makes
them skip it — see 'dlqctl help archive-queries'):

  PREFIX/queue=<queue>/dt=<yyyy-mm-dd>/run=<run-id>/part-00001.ndjson.gz
  PREFIX/queue=<queue>/dt=<yyyy-mm-dd>/run=<run-id>/_manifest.json

With --delete, a checkpoint manifest (_manifest-checkpoint-NNNNN.json, all
parts verified so far) is written after each part and before any of its
messages is deleted: a run killed before its end is still read, verified and
restored through its newest checkpoint.

Every part is uploaded with a SHA-256 checksum (S3 refuses bytes that do not
match it) and If-None-Match: * (an existing object is never overwritten),
then read back with HeadObject: its stored SHA-256 and size must equal what
dlqctl computed. Only then, and only with --delete, are that part's
messages deleted from the queue; without --delete every message is released
(visibility 0) when the run ends. An upload or verification failure stops
the run with exit 4: that part's messages are released, nothing of it is
deleted. Messages not selected are released too. Each part's messages are
deleted as soon as that part is verified, so on a FIFO queue (where SQS
hands out nothing more of a group while one of its messages is held) the
run goes on until the queue is drained.

A run ends when SQS has nothing more to give it (an empty long poll), never
on the queue's approximate counts, which trail by up to a minute; when
they disagree at the end the summary notes it (counts_note), exit 0.
Messages a receive whose answer was lost may have taken, and those a
killed dlqctl process still hides (the hold ledger in --state-dir, same
host), are waited for until their visibility timeout ends (--wait-inflight,
on by default) and then archived; without --delete, a FIFO queue cannot be read past the first
message of each group, so such a run archives only those and ends partial
(exit 4), saying how many it could not read. A FIFO group the queue hands
out of order (after a receive whose answer was lost; moto does, AWS keeps
the order) ends the run partial (exit 4), naming the groups. On Kafka the run reads the
group's commits back at its end: it is complete only when every partition
the group gave it was read to the end taken at its start and committed past
every record it archived; a partition that moved to another process of the
group with records pending (or came late) ends it partial (exit 4), saying
how many records of which partitions are left. On RabbitMQ the run ends
when it holds nothing and the queue has no ready message (an exact count);
messages another application's consumer holds unacknowledged end it partial
(exit 4), naming how many. With --rate-share I/N the processes are competing
consumers that recognise each other by their consumer tags: what a peer
holds when one process ends is the peer's to archive (in_flight_at_peers,
exit 0). The manifest lists every
verified part (key, records, bytes, SHA-256, first/last message id), the
selection and whether messages were deleted; it is written also after a
failure or Ctrl-C.

--delete asks for confirmation on a terminal; scripts pass --yes. --dry-run
reads the queue without consuming it and prints how many messages, bytes
and parts a run would write (on RabbitMQ: a peek that holds what it reads
unacknowledged and returns it all at the end, at most 65535 messages). -o ndjson streams progress, part and summary
events; a progress bar is drawn on stderr when it is a terminal.

'dlqctl archive verify MANIFEST' re-reads an archive; 'dlqctl restore'
sends archived messages back to a queue. sample, group and classify read
an archive with --from: a run's folder or _manifest.json, a queue=<name>/
or dt=<day>/ prefix (every run under it), a part, or local copies. Runs
written by older dlqctl versions (PREFIX/<queue>/<yyyy>/<mm>/<dd>/<run-id>/
with manifest.json) read, verify and restore the same way.

` + SelectionHelp

// NewCmdArchive builds `dlqctl archive` and `archive verify`.
func NewCmdArchive(f *Factory, runF func(context.Context, *ArchiveOptions) error) *cobra.Command {
	opts := &ArchiveOptions{F: f}
	c := &cobra.Command{
		Use:   "archive DLQ --to s3://BUCKET/PREFIX [--filter EXPR | --class C] [--delete] [--dry-run] [--yes]",
		Short: "Archive messages to S3 (verified by SHA-256) before any discard",
		Long:  withExitCodes(archiveLong),
		Example: `  dlqctl archive orders-dlq --to s3://acme-dlq-archive/prod --dry-run
  dlqctl archive orders-dlq --to s3://acme-dlq-archive/prod
  dlqctl archive orders-dlq --to s3://acme-dlq-archive/prod --class permanent --delete --yes
  dlqctl archive orders-dlq --to s3://acme-dlq-archive/prod --sse aws:kms --kms-key-id alias/dlq --delete --yes
  dlqctl archive verify s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/`,
		Args: exactArgs(1, "one DLQ (name, URL or ARN)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Queue = args[0]
			opts.flags = c.Flags()
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return archiveRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.To, "to", "", "destination s3://BUCKET/PREFIX (required)")
	opts.Selection.AddFlags(fl)
	opts.Selection.AddLogsFlags(fl)
	fl.IntVar(&opts.Max, "max", 0, "archive at most N messages (0 = all)")
	fl.BoolVar(&opts.Delete, "delete", false, "delete each message from the queue once the part holding it is verified (Kafka: commit dlqctl's group past it)")
	fl.BoolVar(&opts.DeleteRecords, "delete-records", false, "Kafka: after the run, delete the topic's records below dlqctl's committed offsets (DeleteRecords, irreversible; needs --delete and --yes)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "change nothing; print how many messages, bytes and parts would be archived")
	fl.StringVar(&opts.PartSizeRaw, "part-size", "64MiB", "close a part at this compressed size (e.g. 16MiB, 1GiB; at most 5GiB)")
	fl.IntVar(&opts.PartRecords, "part-records", archive.DefaultPartRecords, "close a part at this many records")
	fl.StringVar(&opts.SSE, "sse", "", "server-side encryption: AES256, aws:kms or aws:kms:dsse (default: the bucket's)")
	fl.StringVar(&opts.KMSKeyID, "kms-key-id", "", "KMS key for --sse aws:kms")
	fl.Float64Var(&opts.Rate, "rate", 0, "receive at most this many messages per second (0 = unlimited)")
	fl.DurationVar(&opts.Visibility, "visibility", 60*time.Second, "how long held messages stay hidden between heartbeats (60s, where the other commands take 30s: an archived message stays held until the S3 part holding it is written and verified)")
	fl.IntVar(&opts.Concurrency, "concurrency", 4, "concurrent receivers (4, where redrive and restore take 8: every receiver's messages stay held until their S3 part is verified, so more receivers hold more messages in flight)")
	fl.BoolVar(&opts.WaitInFlight, "wait-inflight", true, waitInFlightHelp)
	fl.StringVar(&opts.RateShareRaw, "rate-share", "", rateShareHelp)
	c.AddCommand(newCmdArchiveVerify(f, nil))
	return c
}

func (o *ArchiveOptions) validate() error {
	if strings.TrimSpace(o.To) == "" {
		return errs.BadInputf("archive needs --to s3://BUCKET/PREFIX, the place the archive is written")
	}
	dest, err := archive.ParseS3URI(o.To)
	if err != nil {
		return errs.BadInputf("--to: %v", err)
	}
	o.Dest = dest
	size, err := archive.ParseSize(o.PartSizeRaw)
	if err != nil {
		return errs.BadInputf("--part-size %q: %v; use a size such as 16MiB or 1GiB", o.PartSizeRaw, err)
	}
	o.PartSize = size
	switch {
	case o.PartSize < 1<<10 || o.PartSize > archive.MaxPartSize:
		return errs.BadInputf("--part-size must be between 1KiB and 5GiB (got %s)", o.PartSizeRaw)
	case o.PartRecords < 1 || o.PartRecords > 100_000:
		return errs.BadInputf("--part-records must be between 1 and 100000 (got %d)", o.PartRecords)
	case o.Max < 0:
		return errs.BadInputf("--max cannot be negative (got %d)", o.Max)
	case o.Rate < 0:
		return errs.BadInputf("--rate must be positive (got %g); leave it out for no limit", o.Rate)
	case o.Visibility < 5*time.Second || o.Visibility > 12*time.Hour:
		return errs.BadInputf("--visibility must be between 5s and 12h (got %s)", o.Visibility)
	case o.Concurrency < 1 || o.Concurrency > 64:
		return errs.BadInputf("--concurrency must be between 1 and 64 (got %d)", o.Concurrency)
	}
	if err := (archive.Encryption{SSE: o.SSE, KMSKeyID: o.KMSKeyID}).Validate("--sse", "--kms-key-id"); err != nil {
		return err
	}
	if _, err := parseRateShare(o.RateShareRaw); err != nil {
		return err
	}
	_, err = o.Selection.Selector()
	return err
}

// archiveRun opens the queue and the bucket, refuses what the broker
// cannot honour, and runs archive.Archive, printing its plan or summary.
func archiveRun(ctx context.Context, opts *ArchiveOptions) error {
	f := opts.F
	if opts.DeleteRecords && (!opts.Delete || !f.Opts.Yes) {
		return errs.BadInputf("--delete-records deletes records from the topic for good: it needs --delete (so only verified records are below the committed offsets) and --yes")
	}
	ep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return err
	}
	defer broker.CloseEndpoint(ep)
	caps := ep.Capabilities()
	if err := refuseFlags(caps, opts.flags, false); err != nil {
		return err
	}
	// Every archived record carries its class, action and rule (the
	// built-in rules unless --rules), so the archive can be queried by
	// class (docs/archive-queries.md) without classifying again.
	sel, err := opts.Selection.selector(true)
	if err != nil {
		return err
	}
	if err := prepareLogs(ctx, f, ep.String(), sel, &opts.Selection.Logs); err != nil {
		return err
	}
	api, err := f.S3For(ctx, opts.Dest.Bucket)
	if err != nil {
		return err
	}
	req := archive.Request{DryRun: opts.DryRun, Options: archive.Options{
		Dest: opts.Dest, Selection: sel.Describe(), Max: opts.Max, Delete: opts.Delete,
		PartSize: opts.PartSize, PartRecords: opts.PartRecords, Visibility: opts.Visibility, Workers: opts.Concurrency,
		Encryption: archive.Encryption{SSE: opts.SSE, KMSKeyID: opts.KMSKeyID},
		Rate:       opts.Rate, ToolVersion: Version(),
	}}
	if sel != nil {
		watchFilterErrors(f, sel)
		req.Select = sel
	}
	req.Share, _ = parseRateShare(opts.RateShareRaw) // validated
	if opts.WaitInFlight {
		req.WaitInFlight = maxWaitInFlight // on a broker whose leases end (archive.Archive)
	}
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	out, runErr := archive.Archive(ctx, ep, api, req, archive.Hooks{
		Warnf: f.IO.Warnf, Verbosef: f.Verbosef,
		Confirm: func(ready int64) error {
			return confirm(f,
				fmt.Sprintf("Archive %s from %s (%d %s) to %s and %s once its part is verified?", limitedWhat(sel.Describe(), 0, opts.Max), ep.Name(), ready, report.WaitingWord(caps), opts.Dest, report.RemovalWords(caps)),
				fmt.Sprintf("archive --delete %s; pass --yes to confirm (see what would be archived with --dry-run)", report.RemovedWords(caps, ep.Name())),
				"archive --delete not confirmed; nothing was changed")
		},
		Scanned: func(seen int, total int64) {
			prog.Update(output.Stats{Op: "scan", Done: int64(seen), Total: total}, false)
		},
		Reporter: func(total int64) archive.Reporter {
			return &report.ArchiveReporter{IO: f.IO, Prog: prog, Start: time.Now(), Total: total, Verbosef: f.Verbosef}
		},
	})
	prog.Done()
	switch {
	case out == nil:
		return runErr
	case out.Plan != nil:
		return report.WriteArchivePlan(f.IO, prog, format, out.Plan, out.Options)
	}
	if err := report.WriteArchiveSummary(f.IO, prog, format, out.Result, runErr, caps); err != nil {
		return err
	}
	if runErr == nil && opts.DeleteRecords {
		lines, err := archive.DeleteRecords(ctx, ep)
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			f.IO.Infof("--delete-records: nothing below the committed offsets to delete")
		}
		for _, l := range lines {
			f.IO.Infof("--delete-records: %s", l)
		}
	}
	return archive.RunEndErr(runErr)
}
