package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
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
(exit 4), saying how many it could not read. On Kafka the run reads the
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
	size, err := parseSize(o.PartSizeRaw)
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
	switch o.SSE {
	case "", "AES256", "aws:kms", "aws:kms:dsse":
	default:
		return errs.BadInputf("--sse %q: use AES256, aws:kms or aws:kms:dsse", o.SSE)
	}
	if o.KMSKeyID != "" && !strings.HasPrefix(o.SSE, "aws:kms") {
		return errs.BadInputf("--kms-key-id needs --sse aws:kms (or aws:kms:dsse)")
	}
	if _, err := parseRateShare(o.RateShareRaw); err != nil {
		return err
	}
	_, err = o.Selection.Selector()
	return err
}

// parseSize reads 123, 64KiB, 64MiB, 1GiB, 10MB, 1GB (case-insensitive).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a size")
	}
	return int64(n * float64(mult)), nil
}

func archiveRun(ctx context.Context, opts *ArchiveOptions) error {
	f := opts.F
	if opts.DeleteRecords && (!opts.Delete || !f.Opts.Yes) {
		return errs.BadInputf("--delete-records deletes records from the topic for good: it needs --delete (so only verified records are below the committed offsets) and --yes")
	}
	ep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return err
	}
	defer closeEndpoint(ep)
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
	if err := archive.CheckBucket(ctx, api, opts.Dest.Bucket); err != nil {
		return err
	}
	depth, err := ep.Depth(ctx)
	if err != nil {
		return openErr(err)
	}
	if pw, ok := ep.(broker.PeekWarner); ok {
		for _, w := range pw.PeekWarnings() {
			if caps.Ordering == broker.OrderGroupLock && opts.Delete && strings.Contains(w, "is FIFO") {
				continue // --delete consumes what it archives; groups unlock part by part
			}
			f.IO.Warnf("%s", w)
		}
	}
	aopts := archive.Options{
		Dest: opts.Dest, Selection: sel.Describe(), Max: opts.Max, Delete: opts.Delete,
		PartSize: opts.PartSize, PartRecords: opts.PartRecords, Visibility: opts.Visibility, Workers: opts.Concurrency,
		Encryption:  archive.Encryption{SSE: opts.SSE, KMSKeyID: opts.KMSKeyID},
		ToolVersion: Version(),
	}
	hl, limited := ep.(broker.HeldLimiter)
	if limited {
		n, why := hl.HeldLimit(opts.Delete)
		aopts.MaxHeld = n
		switch {
		case opts.Delete && aopts.PartRecords > n:
			f.Verbosef("parts close at %d records (%s)", n, why)
			aopts.PartRecords = n
		case !opts.Delete && depth.Ready > int64(n):
			f.IO.Warnf("%s holds %d messages; without --delete an archive holds every message it reads until the end, and %s: the archive will be partial", ep.Name(), depth.Ready, why)
		}
	}
	if sel != nil {
		watchFilterErrors(f, sel)
		aopts.Select = sel
	}
	share, _ := parseRateShare(opts.RateShareRaw) // validated
	if share != nil {
		aopts.Rate, aopts.Peers = share.Rate(opts.Rate), share.N
		if caps.Sharing == broker.ShareCompeting {
			// The processes are competing consumers of the queue: the
			// source tags its reader as one of the share's, so at the end
			// what the peers hold is theirs and what other applications
			// hold is not.
			aopts.Share = broker.Share{I: share.I, N: share.N}
		}
	} else {
		aopts.Rate = opts.Rate
	}
	if opts.WaitInFlight && caps.Hold == broker.HoldLease {
		aopts.WaitInFlight = maxWaitInFlight
	}
	format, _ := f.Format()
	if opts.DryRun {
		// A peek: every message read is held to the end, then given back.
		popts := aopts
		if limited {
			popts.MaxHeld, _ = hl.HeldLimit(false)
		}
		return archivePlan(ctx, f, ep, depth.Ready, popts, format)
	}
	if opts.Delete {
		if err := confirm(f,
			fmt.Sprintf("Archive %s from %s (%d %s) to %s and %s once its part is verified?", limitedWhat(sel.Describe(), 0, opts.Max), ep.Name(), depth.Ready, waitingWord(caps), opts.Dest, removalWords(caps)),
			fmt.Sprintf("archive --delete %s; pass --yes to confirm (see what would be archived with --dry-run)", removedWords(caps, ep.Name())),
			"archive --delete not confirmed; nothing was changed"); err != nil {
			return err
		}
	}
	prog := output.NewProgress(f.IO, format)
	rep := &archiveReporter{f: f, prog: prog, start: time.Now(), total: depth.Ready}
	if opts.Max > 0 {
		rep.total = min(rep.total, int64(opts.Max))
	}
	aopts.Reporter = rep
	res, runErr := archive.Run(ctx, ep, api, aopts)
	prog.Done()
	if res == nil {
		return runEndErr(runErr)
	}
	if err := printArchiveSummary(f, prog, format, res, runErr); err != nil {
		return err
	}
	if runErr == nil && opts.DeleteRecords {
		rd, ok := ep.(broker.RecordDeleter)
		if !ok { // the refusal table keeps --delete-records to brokers that delete by offset
			return errs.BadInputf("--delete-records: %s cannot delete records by offset", caps.Label)
		}
		lines, err := rd.DeleteHandled(ctx)
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
	return runEndErr(runErr)
}

// waitingWord names what a broker's ready count counts, for prompts.
func waitingWord(caps broker.Capabilities) string {
	switch {
	case caps.Removal == broker.RemoveCommitOffset:
		return "pending"
	case caps.Hold == broker.HoldLease:
		return "visible"
	}
	return "ready"
}

// removalWords says how a handled message leaves the queue on this
// broker, for the archive --delete prompt ("... and <words> once its part
// is verified?").
func removalWords(caps broker.Capabilities) string {
	switch {
	case caps.Removal == broker.RemoveCommitOffset:
		return "commit dlqctl's consumer group past each record"
	case caps.Hold == broker.HoldLease:
		return "delete each from the queue"
	}
	return "acknowledge each"
}

// removedWords says what archive --delete changes on the broker, for the
// sentence that asks for --yes.
func removedWords(caps broker.Capabilities, name string) string {
	if caps.Removal == broker.RemoveCommitOffset {
		return "moves dlqctl's consumer group's committed offsets on " + name + " past what it archives"
	}
	return "removes archived messages from " + name
}

// openErr maps an error met while looking at the queue, before anything
// changed: bad input stays bad input; an unreachable broker, a refused
// login and a missing queue or topic are exit 2 on every broker.
func openErr(err error) error {
	if errs.Code(err) == errs.ExitUsage {
		return err
	}
	return broker.StartError(err)
}

// runEndErr maps the error that ended a run, after it may have changed
// something: bad input and a queue or topic that is gone are exit 2; a
// broker lost in the middle of a run is an error (1).
func runEndErr(err error) error {
	if err != nil && errors.Is(err, broker.ErrNotFound) && errs.Code(err) != errs.ExitUsage {
		return errs.BadInput(err)
	}
	return err
}

// archiveReporter renders archive progress: the shared progress bar /
// NDJSON progress events, plus one "part" event per verified part.
type archiveReporter struct {
	f     *Factory
	prog  *output.Progress
	start time.Time
	total int64
	last  archive.Stats
}

func (r *archiveReporter) stats(s archive.Stats) output.Stats {
	el := time.Since(r.start).Seconds()
	st := output.Stats{Op: "archive", Done: int64(s.Archived), Total: r.total, Skipped: int64(s.Received - s.Selected), Elapsed: el}
	if el > 0 {
		st.Rate = float64(s.Archived) / el
	}
	return st
}

func (r *archiveReporter) Progress(s archive.Stats) {
	r.last = s
	r.prog.Update(r.stats(s), false)
}

// ArchivePartEvent is the NDJSON event for a verified part.
type ArchivePartEvent struct {
	Type string `json:"type"` // "part"
	archive.Part
}

func (r *archiveReporter) PartDone(p archive.Part) {
	if r.prog.NDJSON() {
		_ = output.NewNDJSON(r.f.IO.Out).Write(ArchivePartEvent{Type: "part", Part: p})
		return
	}
	r.f.Verbosef("verified %s: %d records, %d bytes, sha256 %s", p.Key, p.Records, p.Bytes, p.SHA256)
}

func (r *archiveReporter) Warn(msg string) {
	r.prog.Done()
	r.f.IO.Warnf("%s", msg)
}

// ArchiveSummary is the JSON summary of a run (-o json, NDJSON summary).
type ArchiveSummary struct {
	Status     string                  `json:"status"`
	Manifest   string                  `json:"manifest,omitempty"` // s3:// URI
	Stats      archive.Stats           `json:"stats"`
	NotDeleted []archive.FailedMessage `json:"not_deleted,omitempty"`
	Error      string                  `json:"error,omitempty"`
	// CountsNote: the queue's approximate counts at the end, when they
	// disagreed with what the run saw (advisory).
	CountsNote string `json:"counts_note,omitempty"`
	// Share is this process's share of a shared run (--rate-share I/N);
	// InFlightAtPeers what its peers held when it ended (theirs).
	Share           string `json:"rate_share,omitempty"`
	InFlightAtPeers int    `json:"in_flight_at_peers,omitempty"`
	// FilterErrors: messages the --filter or a rule failed on; not
	// archived, they stay in the queue.
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
	Run          *archive.Manifest     `json:"run"`
}

func printArchiveSummary(f *Factory, prog *output.Progress, format output.Format, res *archive.Result, runErr error) error {
	m := res.Manifest
	status := "completed"
	switch {
	case runErr != nil && errs.Code(runErr) == errs.ExitInterrupted:
		status = "interrupted"
	case runErr != nil && errs.Code(runErr) == errs.ExitPartial:
		status = "partial" // exit 4: the report and the manifest's note say what is missing
	case runErr != nil:
		status = "failed"
	case !m.Complete:
		status = "stopped"
	}
	sum := ArchiveSummary{Status: status, Stats: res.Stats, NotDeleted: res.NotDeleted, Run: m, CountsNote: res.CountsNote,
		Share: res.Share, InFlightAtPeers: res.InFlightAtPeers, FilterErrors: res.FilterErrors}
	if errs.Code(runErr) != errs.ExitUsage {
		warnFilterErrors(f, res.FilterErrors, "stay in the queue")
	}
	if res.ManifestKey != "" {
		sum.Manifest = archive.Location{Bucket: m.Bucket, Key: res.ManifestKey}.String()
	}
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, sum)
	case output.NDJSON:
		return prog.Summary(sum)
	}
	t := output.NewTable(f.IO, "", "")
	t.Row("run", m.RunID)
	t.Row("status", status)
	t.Row("queue", m.Queue.Name)
	t.Row("selection", m.Selection)
	if sum.Manifest != "" {
		t.Row("manifest", sum.Manifest)
	} else if len(m.Parts) == 0 {
		t.Row("manifest", "none (nothing was archived)")
	}
	t.Row("archived", fmt.Sprintf("%d message(s) in %d verified part(s), %s compressed (%s NDJSON)",
		m.Totals.Records, m.Totals.Parts, humanBytes(m.Totals.Bytes), humanBytes(m.Totals.UncompressedBytes)))
	if m.Deleted {
		t.Row("deleted", fmt.Sprintf("%d from %s after verification", m.Totals.Deleted, m.Queue.Name))
	} else {
		t.Row("deleted", "none (without --delete every message was released)")
	}
	if n := res.Stats.Received - res.Stats.Selected; n > 0 {
		t.Row("not selected", fmt.Sprintf("%d, released", n))
	}
	if fe := res.FilterErrors; fe != nil {
		t.Row("filter errors", filterErrorsRow(fe, "released"))
	}
	if res.Stats.Duplicates > 0 {
		t.Row("duplicates", fmt.Sprintf("%d repeated deliveries ignored", res.Stats.Duplicates))
	}
	for _, nd := range res.NotDeleted {
		t.Row("not deleted", nd.MessageID+": "+nd.Reason)
	}
	if m.Note != "" {
		t.Row("note", m.Note)
	}
	if sum.CountsNote != "" {
		t.Row("counts", sum.CountsNote)
	}
	if res.Share != "" {
		peers := "nothing was in flight at its peers when it ended"
		if res.InFlightAtPeers > 0 {
			peers = fmt.Sprintf("%d message(s) were in flight at its peers when it ended (their runs archive them)", res.InFlightAtPeers)
		}
		t.Row("shared", fmt.Sprintf("process %s: %s; the shared archive is complete when every process exits 0", res.Share, peers))
	}
	return t.Render()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ArchivePlanOutput is the JSON of --dry-run.
type ArchivePlanOutput struct {
	*archive.Plan
	PartSize    int64 `json:"part_size"`
	PartRecords int   `json:"part_records"`
	// FilterErrors: messages the --filter or a rule failed on (would stay
	// in the queue).
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
}

func archivePlan(ctx context.Context, f *Factory, ep broker.Endpoint, total int64, aopts archive.Options, format output.Format) error {
	prog := output.NewProgress(f.IO, format)
	pl, err := archive.DryRun(ctx, ep, aopts, func(seen int) {
		prog.Update(output.Stats{Op: "scan", Done: int64(seen), Total: total}, false)
	})
	prog.Done()
	if errors.Is(err, broker.ErrPeekUnsafe) && errs.Code(err) != errs.ExitUsage {
		return errs.BadInput(err)
	}
	if err != nil {
		return err
	}
	return printArchivePlan(f, prog, format, pl, aopts)
}

// printArchivePlan prints an archive dry run's plan (every broker).
func printArchivePlan(f *Factory, prog *output.Progress, format output.Format, pl *archive.Plan, aopts archive.Options) error {
	out := ArchivePlanOutput{Plan: pl, PartSize: aopts.PartSize, PartRecords: aopts.PartRecords}
	if aopts.Select != nil {
		out.FilterErrors = aopts.Select.Errors()
		warnFilterErrors(f, out.FilterErrors, "would stay in the queue")
	}
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, out)
	case output.NDJSON:
		return prog.Summary(out)
	}
	t := output.NewTable(f.IO, "", "")
	t.Row("dry run", "nothing was changed")
	t.Row("queue", pl.Queue)
	t.Row("to", pl.Destination)
	t.Row("selection", pl.Selection)
	t.Row("would archive", fmt.Sprintf("%d of %d message(s) read", pl.Selected, pl.Scanned))
	if fe := out.FilterErrors; fe != nil {
		t.Row("filter errors", filterErrorsRow(fe, "would stay in the queue"))
	}
	t.Row("bytes", fmt.Sprintf("%s compressed (%s NDJSON)", humanBytes(pl.Bytes), humanBytes(pl.UncompressedBytes)))
	t.Row("parts", fmt.Sprintf("%d (at most %s or %d records each)", pl.Parts, humanBytes(aopts.PartSize), aopts.PartRecords))
	if pl.Delete {
		t.Row("then", fmt.Sprintf("delete each archived message from %s once its part is verified", pl.Queue))
	} else {
		t.Row("then", "release every message (no --delete)")
	}
	if pl.Note != "" {
		t.Row("note", pl.Note)
	}
	return t.Render()
}

// ---- archive verify ----

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
	in, err := archiveInput(ctx, f, opts.Manifest)
	if err != nil {
		return err
	}
	format, _ := f.Format()
	var nd *output.NDJSONWriter
	if format == output.NDJSON {
		nd = output.NewNDJSON(f.IO.Out)
	}
	var reps []*archive.VerifyReport
	for _, ref := range in.Refs {
		rep, err := archive.VerifyArchive(ctx, ref, func(pc archive.PartCheck) {
			if nd != nil {
				_ = nd.Write(struct {
					Type string `json:"type"`
					archive.PartCheck
				}{"part", pc})
			}
		})
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		if nd != nil {
			// One summary per run (each names its manifest).
			if err := nd.Write(struct {
				Type string `json:"type"`
				*archive.VerifyReport
			}{"summary", rep}); err != nil {
				return err
			}
		}
	}
	switch format {
	case output.JSON:
		var v any = reps[0]
		if len(reps) > 1 {
			v = ArchiveVerifyRuns{OK: allOK(reps), Runs: reps}
		}
		if err := output.WriteJSON(f.IO.Out, v); err != nil {
			return err
		}
	case output.NDJSON:
	default:
		t := output.NewTable(f.IO, "PART", "RECORDS", "BYTES", "SHA256", "STATUS")
		for _, rep := range reps {
			for _, pc := range rep.Parts {
				st := "ok"
				if !pc.OK {
					st = "FAIL: " + strings.Join(pc.Problems, "; ")
				}
				t.Row(pc.Key, strconv.Itoa(pc.Records), strconv.FormatInt(pc.Bytes, 10), output.Truncate(pc.SHA256, 16), st)
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, rep := range reps {
			for _, p := range rep.Problems {
				f.IO.Warnf("%s: %s", rep.Manifest, p)
			}
		}
	}
	parts, records := 0, 0
	var failed []string
	for i, rep := range reps {
		parts, records = parts+len(rep.Parts), records+rep.Records
		if !rep.OK {
			bad := 0
			for _, pc := range rep.Parts {
				if !pc.OK {
					bad++
				}
			}
			what := fmt.Sprintf("%d of %d part(s) do not match the manifest%s", bad, len(rep.Parts), map[bool]string{true: " and its totals are wrong", false: ""}[len(rep.Problems) > 0])
			if len(reps) == 1 {
				return errs.Verdictf("archive %s failed verification: %s", in.Refs[i].Name(), what)
			}
			failed = append(failed, in.Refs[i].Name()+": "+what)
		}
	}
	switch {
	case len(failed) > 0:
		return errs.Verdictf("%d of %d archive runs under %s failed verification: %s", len(failed), len(reps), opts.Manifest, strings.Join(failed, "; "))
	case len(reps) == 1:
		f.IO.Infof("archive ok: %d part(s), %d record(s), every SHA-256 matches", parts, records)
	default:
		f.IO.Infof("archive ok: %d runs, %d part(s), %d record(s), every SHA-256 matches", len(reps), parts, records)
	}
	return nil
}

// ArchiveVerifyRuns is the JSON of `archive verify` over a folder holding
// several runs (one run prints its VerifyReport alone).
type ArchiveVerifyRuns struct {
	OK   bool                    `json:"ok"`
	Runs []*archive.VerifyReport `json:"runs"`
}

func allOK(reps []*archive.VerifyReport) bool {
	for _, r := range reps {
		if !r.OK {
			return false
		}
	}
	return true
}

// archiveRef resolves an argument naming one archive run: an s3:// URI or
// local path of its manifest or its folder.
func archiveRef(ctx context.Context, f *Factory, s string) (archive.Ref, error) {
	var api archive.S3API
	if archive.IsS3URI(s) {
		loc, err := archive.ParseS3URI(s)
		if err != nil {
			return archive.Ref{}, err
		}
		c, err := f.S3For(ctx, loc.Bucket)
		if err != nil {
			return archive.Ref{}, err
		}
		api = c
	}
	return archive.ResolveRun(ctx, s, api)
}
