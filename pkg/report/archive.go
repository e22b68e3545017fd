package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// ArchiveReporter renders archive progress: the shared progress bar /
// NDJSON progress events, plus one "part" event per verified part.
type ArchiveReporter struct {
	IO    *output.IOStreams
	Prog  *output.Progress
	Start time.Time
	Total int64
	// Verbosef prints a line on stderr with -v (nothing otherwise).
	Verbosef func(format string, a ...any)
	last     archive.Stats
}

func (r *ArchiveReporter) stats(s archive.Stats) output.Stats {
	el := time.Since(r.Start).Seconds()
	st := output.Stats{Op: "archive", Done: int64(s.Archived), Total: r.Total, Skipped: int64(s.Received - s.Selected), Elapsed: el}
	if el > 0 {
		st.Rate = float64(s.Archived) / el
	}
	return st
}

// Progress draws the progress bar or writes a progress event.
func (r *ArchiveReporter) Progress(s archive.Stats) {
	r.last = s
	r.Prog.Update(r.stats(s), false)
}

// ArchivePartEvent is the NDJSON event for a verified part.
type ArchivePartEvent struct {
	Type string `json:"type"` // "part"
	archive.Part
}

// PartDone writes a part event (-o ndjson) or, with -v, a line on stderr.
func (r *ArchiveReporter) PartDone(p archive.Part) {
	if r.Prog.NDJSON() {
		_ = output.NewNDJSON(r.IO.Out).Write(ArchivePartEvent{Type: "part", Part: p})
		return
	}
	r.Verbosef("verified %s: %d records, %d bytes, sha256 %s", p.Key, p.Records, p.Bytes, p.SHA256)
}

// Warn clears the progress bar and says msg on stderr.
func (r *ArchiveReporter) Warn(msg string) {
	r.Prog.Done()
	r.IO.Warnf("%s", msg)
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

// ArchiveStatus is a run's status word from its manifest and the error
// that ended it.
func ArchiveStatus(m *archive.Manifest, runErr error) string {
	switch {
	case runErr != nil && errs.Code(runErr) == errs.ExitInterrupted:
		return "interrupted"
	case runErr != nil && errs.Code(runErr) == errs.ExitPartial:
		return "partial" // exit 4: the report and the manifest's note say what is missing
	case runErr != nil:
		return "failed"
	case !m.Complete:
		return "stopped"
	}
	return "completed"
}

// WriteArchiveSummary prints the end of an archive run in format.
// caps are the archived queue's broker's: a topic's records are not
// deleted, its consumer group commits past them.
func WriteArchiveSummary(s *output.IOStreams, prog *output.Progress, format output.Format, res *archive.Result, runErr error, caps broker.Capabilities) error {
	m := res.Manifest
	status := ArchiveStatus(m, runErr)
	sum := ArchiveSummary{Status: status, Stats: res.Stats, NotDeleted: res.NotDeleted, Run: m, CountsNote: res.CountsNote,
		Share: res.Share, InFlightAtPeers: res.InFlightAtPeers, FilterErrors: res.FilterErrors}
	if errs.Code(runErr) != errs.ExitUsage {
		WarnFilterErrors(s, res.FilterErrors, "stay in the queue")
	}
	if res.ManifestKey != "" {
		sum.Manifest = archive.Location{Bucket: m.Bucket, Key: res.ManifestKey}.String()
	}
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, sum)
	case output.NDJSON:
		return prog.Summary(sum)
	}
	t := output.NewTable(s, "", "")
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
		m.Totals.Records, m.Totals.Parts, HumanBytes(m.Totals.Bytes), HumanBytes(m.Totals.UncompressedBytes)))
	removed, left, none := caps.Words().Removed, "released", "none (without --delete every message was released)"
	byOffset := caps.Removal == broker.RemoveCommitOffset
	if byOffset {
		left, none = "left pending", "none (without --delete nothing is committed: every record stays pending)"
	}
	switch {
	case m.Deleted && byOffset:
		t.Row(removed, fmt.Sprintf("%d from %s after verification: dlqctl's consumer group committed past them; the records stay in the topic until its retention (or --delete-records) deletes them", m.Totals.Deleted, m.Queue.Name))
	case m.Deleted:
		t.Row(removed, fmt.Sprintf("%d from %s after verification", m.Totals.Deleted, m.Queue.Name))
	default:
		t.Row(removed, none)
	}
	if n := res.Stats.NotSelected; n > 0 {
		t.Row("not selected", fmt.Sprintf("%d, %s", n, left))
	}
	if n := res.Stats.Released; n > 0 {
		// Receives, not messages: workers still reading when the run
		// stopped can read a message given back by another again (a FIFO
		// queue's 9 messages gave 24 such receives at --max 3).
		why := "when the run stopped"
		if res.StoppedAtMax {
			why = "after --max was reached"
		}
		t.Row("not archived", fmt.Sprintf("%d read(s) %s (a message read again counts again), %s", n, why, left))
	}
	if fe := res.FilterErrors; fe != nil {
		t.Row("filter errors", FilterErrorsRow(fe, left))
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

// HumanBytes writes n in B, KiB, MiB or GiB with one decimal.
func HumanBytes(n int64) string {
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

// WriteArchivePlan prints an archive dry run's plan (every broker).
func WriteArchivePlan(s *output.IOStreams, prog *output.Progress, format output.Format, pl *archive.Plan, aopts archive.Options) error {
	out := ArchivePlanOutput{Plan: pl, PartSize: aopts.PartSize, PartRecords: aopts.PartRecords}
	if aopts.Select != nil {
		out.FilterErrors = aopts.Select.Errors()
		WarnFilterErrors(s, out.FilterErrors, "would stay in the queue")
	}
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, out)
	case output.NDJSON:
		return prog.Summary(out)
	}
	t := output.NewTable(s, "", "")
	t.Row("dry run", "nothing was changed")
	t.Row("queue", pl.Queue)
	t.Row("to", pl.Destination)
	t.Row("selection", pl.Selection)
	t.Row("would archive", fmt.Sprintf("%d of %d message(s) read", pl.Selected, pl.Scanned))
	if fe := out.FilterErrors; fe != nil {
		t.Row("filter errors", FilterErrorsRow(fe, "would stay in the queue"))
	}
	t.Row("bytes", fmt.Sprintf("%s compressed (%s NDJSON)", HumanBytes(pl.Bytes), HumanBytes(pl.UncompressedBytes)))
	t.Row("parts", fmt.Sprintf("%d (at most %s or %d records each)", pl.Parts, HumanBytes(aopts.PartSize), aopts.PartRecords))
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

// ArchiveVerifyRuns is the JSON of `archive verify` over a folder holding
// several runs (one run prints its VerifyReport alone).
type ArchiveVerifyRuns struct {
	OK   bool                    `json:"ok"`
	Runs []*archive.VerifyReport `json:"runs"`
}

// AllOK reports whether every run verified.
func AllOK(reps []*archive.VerifyReport) bool {
	for _, r := range reps {
		if !r.OK {
			return false
		}
	}
	return true
}

// NDJSONVerify writes `archive verify -o ndjson`'s events: a "part" event
// per part checked and a "summary" event per run.
type NDJSONVerify struct{ w *output.NDJSONWriter }

// NewNDJSONVerify writes verify events to s.Out.
func NewNDJSONVerify(s *output.IOStreams) *NDJSONVerify {
	return &NDJSONVerify{w: output.NewNDJSON(s.Out)}
}

// Part writes the event of one checked part.
func (n *NDJSONVerify) Part(pc archive.PartCheck) {
	_ = n.w.Write(struct {
		Type string `json:"type"`
		archive.PartCheck
	}{"part", pc})
}

// Run writes the summary event of one run (each names its manifest).
func (n *NDJSONVerify) Run(rep *archive.VerifyReport) error {
	return n.w.Write(struct {
		Type string `json:"type"`
		*archive.VerifyReport
	}{"summary", rep})
}

// WriteArchiveVerify prints the reports of `archive verify` (-o table or
// json; -o ndjson was written as the runs went) and returns the verdict:
// a verdict error (exit 3) naming what failed, else nil after saying on
// stderr what was checked. names are the runs' names, arg the argument
// that named them.
func WriteArchiveVerify(s *output.IOStreams, format output.Format, reps []*archive.VerifyReport, names []string, arg string) error {
	switch format {
	case output.JSON:
		var v any = reps[0]
		if len(reps) > 1 {
			v = ArchiveVerifyRuns{OK: AllOK(reps), Runs: reps}
		}
		if err := output.WriteJSON(s.Out, v); err != nil {
			return err
		}
	case output.NDJSON:
	default:
		t := output.NewTable(s, "PART", "RECORDS", "BYTES", "SHA256", "STATUS")
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
				s.Warnf("%s: %s", rep.Manifest, p)
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
				return errs.Verdictf("archive %s failed verification: %s", names[i], what)
			}
			failed = append(failed, names[i]+": "+what)
		}
	}
	switch {
	case len(failed) > 0:
		return errs.Verdictf("%d of %d archive runs under %s failed verification: %s", len(failed), len(reps), arg, strings.Join(failed, "; "))
	case len(reps) == 1:
		s.Infof("archive ok: %d part(s), %d record(s), every SHA-256 matches", parts, records)
	default:
		s.Infof("archive ok: %d runs, %d part(s), %d record(s), every SHA-256 matches", len(reps), parts, records)
	}
	return nil
}

// WaitingWord names what a broker's ready count counts, for prompts.
func WaitingWord(caps broker.Capabilities) string {
	switch {
	case caps.Removal == broker.RemoveCommitOffset:
		return "pending"
	case caps.Hold == broker.HoldLease:
		return "visible"
	}
	return "ready"
}

// RemovalWords says how a handled message leaves the queue on this
// broker, for the archive --delete prompt ("... and <words> once its part
// is verified?").
func RemovalWords(caps broker.Capabilities) string {
	switch {
	case caps.Removal == broker.RemoveCommitOffset:
		return "commit dlqctl's consumer group past each record"
	case caps.Hold == broker.HoldLease:
		return "delete each from the queue"
	}
	return "acknowledge each"
}

// RemovedWords says what archive --delete changes on the broker, for the
// sentence that asks for --yes.
func RemovedWords(caps broker.Capabilities, name string) string {
	if caps.Removal == broker.RemoveCommitOffset {
		return "moves dlqctl's consumer group's committed offsets on " + name + " past what it archives"
	}
	return "removes archived messages from " + name
}
