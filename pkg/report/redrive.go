package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RedriveSummary is the JSON summary of a redrive (-o json, and the NDJSON
// summary event).
type RedriveSummary struct {
	*redrive.Result
	Status string           `json:"status"`
	DLQ    string           `json:"dlq"`
	To     string           `json:"to"`
	Canary *redrive.Verdict `json:"canary,omitempty"`
	// PendingAfter is what the DLQ still holds for the run's reader after
	// the run, on brokers whose counts are exact (RabbitMQ: its ready
	// messages; Kafka: the group's pending records); absent elsewhere.
	PendingAfter *int64 `json:"pending_after,omitempty"`
}

// Verdict is the canary verdict (nil without a canary).
func (s RedriveSummary) Verdict() *redrive.Verdict { return s.Canary }

// RedrivePlanOutput is the JSON of redrive --dry-run.
type RedrivePlanOutput struct {
	redrive.Plan
	DLQ       string    `json:"dlq"`
	To        string    `json:"to"`
	Selection string    `json:"selection"`
	Rate      float64   `json:"rate,omitempty"`
	Ramp      []float64 `json:"ramp,omitempty"`
	// FilterErrors: messages the --filter or a rule failed on (skipped
	// "filter error").
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
}

// WriteRedrivePlan prints a redrive dry run in format; on a table, after
// the sentence that nothing was changed (readBack, when set, says how the
// messages were given back, with %s for the DLQ's name): the transform's
// diffs, where each class would go, what would be skipped and why, the
// estimate (unpaced: what to say without --rate or --ramp), copies that
// would go without the marker, and a read that was not whole.
func WriteRedrivePlan(s *output.IOStreams, prog *output.Progress, format output.Format, out RedrivePlanOutput, readBack, unpaced string) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, out)
	case output.NDJSON:
		return prog.Summary(out)
	}
	if readBack != "" {
		s.Infof("dry run: nothing was changed (%s)", fmt.Sprintf(readBack, out.DLQ))
	} else {
		s.Infof("dry run: nothing was changed")
	}
	plan := out.Plan
	WriteTransformPlan(s, plan.Transform)
	t := output.NewTable(s, "DESTINATION", "CLASS", "MESSAGES")
	for _, d := range slices.Sorted(maps.Keys(plan.ByDestination)) {
		for _, cl := range slices.Sorted(maps.Keys(plan.ByDestination[d])) {
			t.Row(d, cl, fmt.Sprint(plan.ByDestination[d][cl]))
		}
	}
	for _, r := range slices.Sorted(maps.Keys(plan.Skipped)) {
		t.Row("(skipped)", r, fmt.Sprint(plan.Skipped[r]))
	}
	if err := t.Render(); err != nil {
		return err
	}
	est := unpaced
	if plan.EstimatedSeconds > 0 {
		est = "about " + output.Duration(time.Duration(plan.EstimatedSeconds*float64(time.Second)))
	}
	s.Infof("would move %d of %d scanned messages from %s to %s (%s); estimated duration: %s", plan.WouldMove, plan.Scanned, out.DLQ, out.To, out.Selection, est)
	if plan.ClassesFrom != "" && plan.WouldMove > 0 {
		s.Infof("CLASS is what the %s say; nothing is selected by it: --class transient (or another class) moves only those", plan.ClassesFrom)
	}
	if plan.Unmarked > 0 {
		s.Infof("%d message(s) would move without the %s marker: they already carry 10 attributes, or go to an origin that takes none (a Lambda invocation); the journal records them", plan.Unmarked, record.MarkerAttribute)
	}
	if plan.Note != "" && !plan.Complete {
		s.Warnf("%s", plan.Note)
	}
	return nil
}

// WriteRedriveSummary prints a redrive's summary, on every broker in its
// own words: JSON, the NDJSON summary event, or a table.
func WriteRedriveSummary(s *output.IOStreams, prog *output.Progress, format output.Format, sum RedriveSummary, w broker.Words) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, sum)
	case output.NDJSON:
		return prog.Summary(sum)
	}
	res := sum.Result
	t := output.NewTable(s, "", "")
	runRows(t, res, sum.Status, "moved", sum.DLQ, sum.To)
	for _, d := range slices.Sorted(maps.Keys(res.ByDestination)) {
		t.Row("  to "+d, strconv.Itoa(res.ByDestination[d]))
	}
	if res.Resumed > 0 {
		t.Row("resumed", fmt.Sprintf("%d %s", res.Resumed, w.ResumedRow))
	}
	skippedRows(t, res)
	if res.Unmarked > 0 {
		t.Row("unmarked", fmt.Sprintf("%d moved without the %s attribute (10 attributes already, or a Lambda invocation, which carries none); the journal records them", res.Unmarked, record.MarkerAttribute))
	}
	if res.Failed > 0 {
		t.Row("failed", fmt.Sprintf("%d refused by the destination; still in the DLQ", res.Failed))
	}
	if res.Unknown > 0 {
		t.Row("unknown", fmt.Sprintf("%d whose %s outcome is unknown; still in the DLQ", res.Unknown, w.Send))
	}
	if res.SentNotDeleted > 0 {
		t.Row("pending", fmt.Sprintf("%d %s but not yet %s from the DLQ; re-run to finish", res.SentNotDeleted, w.Sent, w.Removed))
	}
	if sum.PendingAfter != nil {
		t.Row("pending after", strconv.FormatInt(*sum.PendingAfter, 10))
	}
	if res.AbortedResent > 0 {
		t.Row("after aborted transaction", AbortedNote(res.AbortedResent))
	}
	sharedRows(t, res)
	if c := res.Counts; c != nil {
		t.Row("counts", c.Note)
	}
	TransformRows(t, res.Transform)
	return OutcomeRows(t, res, sum.Verdict())
}

// runRows are the first rows of every pipeline summary (redrive,
// restore): the run, its status and how many it moved (verb) from where
// to where, at what rate.
func runRows(t *output.TablePrinter, res *redrive.Result, status, verb, from, to string) {
	t.Row("run", res.RunID)
	if res.StoppedAtMax && status == redrive.StatusCompleted {
		// --max or --canary: what was asked is done, not the queue.
		status += " (stopped at the requested maximum; the rest was left where it is)"
	}
	t.Row("status", status)
	t.Row(verb, fmt.Sprintf("%d from %s to %s in %s (%.1f/s)", res.Moved, from, to, output.Duration(time.Duration(res.ElapsedSeconds*float64(time.Second))), res.Rate))
}

// skippedRows lists what a run skipped, by reason.
func skippedRows(t *output.TablePrinter, res *redrive.Result) {
	for _, r := range slices.Sorted(maps.Keys(res.Skipped)) {
		t.Row("skipped", fmt.Sprintf("%d %s", res.Skipped[r], r))
	}
}

// sharedRows says, for a process of a shared run, which share it was and
// what its peers still held when it ended.
func sharedRows(t *output.TablePrinter, res *redrive.Result) {
	if res.Share == "" {
		return
	}
	peers := "nothing was in flight at its peers when it ended"
	if res.InFlightAtPeers > 0 || res.LockedByPeers > 0 {
		peers = fmt.Sprintf("%d message(s) were in flight at its peers when it ended (their runs account for them)", res.InFlightAtPeers)
		if res.LockedByPeers > 0 {
			peers += fmt.Sprintf(", %d more wait behind their FIFO groups", res.LockedByPeers)
		}
	}
	t.Row("shared", fmt.Sprintf("process %s: %s; the shared run is complete when every process exits 0", res.Share, peers))
}

// OutcomeRows adds the rows every pipeline summary (redrive, restore) ends
// with — copies maybe delivered twice, filter errors, a tripped guard, the
// canary verdict, errors — and renders the table.
func OutcomeRows(t *output.TablePrinter, res *redrive.Result, v *redrive.Verdict) error {
	if n := res.MaybeTwice - res.MaybeTwiceResent; n > 0 {
		t.Row("maybe twice", MaybeTwiceNote(n))
	}
	if res.MaybeTwiceResent > 0 {
		t.Row("maybe twice", ResentNote(res.MaybeTwiceResent))
	}
	if res.UnconfirmedGone > 0 {
		t.Row("unconfirmed", GoneNote(res.UnconfirmedGone))
	}
	if fe := res.FilterErrors; fe != nil {
		t.Row("filter errors", FilterErrorsRow(fe, "left where they are"))
	}
	if res.Guard != nil {
		t.Row("guard", fmt.Sprintf("%s tripped: %s", res.Guard.Name, res.Guard.Detail))
	}
	if v != nil {
		verdict := "PASS"
		if !v.Pass {
			verdict = "FAIL"
		}
		t.Row("canary", verdict+": "+v.Detail)
	}
	for _, e := range res.Errors {
		t.Row("error", e)
	}
	return t.Render()
}

// CrashDuplicates says, on stderr whatever the output format, which copies
// a resumed run may have delivered twice because the process before it
// died mid-send, and which of those sends it counts as done.
func CrashDuplicates(s *output.IOStreams, res *redrive.Result) {
	if res == nil {
		return
	}
	killed := res.RunID
	if len(res.KilledRuns) > 0 {
		killed = strings.Join(res.KilledRuns, ", ")
	}
	if res.MaybeTwiceResent > 0 {
		s.Infof("resumed run %s: %s", killed, ResentNote(res.MaybeTwiceResent))
	}
	if res.MaybeTwiceEarlier > 0 {
		s.Infof("resumed run %s: %s", res.RunID, EarlierNote(res.MaybeTwiceEarlier))
	}
	if res.AbortedResent > 0 {
		s.Infof("resumed run %s: %s", killed, AbortedNote(res.AbortedResent))
	}
	if res.UnconfirmedGone > 0 {
		s.Infof("resumed run %s: %s", res.RunID, GoneNote(res.UnconfirmedGone))
	}
}

// MaybeTwiceNote says that n copies may have been delivered twice.
func MaybeTwiceNote(n int) string {
	return fmt.Sprintf("%d message(s) may have been delivered twice: the send's answer was lost and the SDK sent it again; the destination's consumer should handle them idempotently (-o json lists them as maybe_twice_ids; the run's journal marks them maybe_twice)", n)
}

// ResentNote says that n copies were sent again after a crash.
func ResentNote(n int) string {
	return fmt.Sprintf("%d message(s) may have been delivered twice: the process died after sending them and before recording it; give the list (-o json maybe_twice_messages, or the journal's sent records marked \"resent\") to the destination consumer's owner ('dlqctl help redrive.md': after a kill)", n)
}

// EarlierNote says that an earlier, killed attempt of the run recorded n
// copies as possibly delivered twice and never reported them.
func EarlierNote(n int) string {
	return fmt.Sprintf("%d message(s) may have been delivered twice by an earlier attempt of this run, which was killed before its report (the SDK retried their send after a lost answer, or the attempt sent them again after a kill); give the list (-o json maybe_twice_messages, or the journal's sent records marked maybe_twice) to the destination consumer's owner", n)
}

// GoneNote says that n unconfirmed sends were no longer in the source.
func GoneNote(n int) string {
	return fmt.Sprintf("%d message(s) the process was sending when it died were no longer in the source: counted as sent, their copy most likely arrived once (-o json unconfirmed_gone_messages)", n)
}

// AbortedNote says that n messages of a killed transactional run were
// published again after its transaction was aborted: no duplicates for
// read_committed consumers.
func AbortedNote(n int) string {
	return fmt.Sprintf("the killed run's transaction was aborted, so read_committed consumers of the destination never saw the %d message(s) it was publishing (in the transaction it never committed); they are published again now, once (read_uncommitted consumers may have seen both)", n)
}

// WriteTransformPlan prints a dry run's before/after diffs and counts
// (stdout: the diff is the dry run's data; colour on a terminal).
func WriteTransformPlan(s *output.IOStreams, tp *redrive.TransformPlan) {
	if tp == nil {
		return
	}
	w := s.Out
	for _, x := range tp.Samples {
		if x.Error != "" {
			fmt.Fprintf(w, "%s %s\n", s.Paint(output.BoldRed, "failed"), x.MessageID)
			fmt.Fprintf(w, "  %s\n", s.Paint(output.Red, x.Error))
			continue
		}
		fmt.Fprintf(w, "%s %s\n", s.Paint(output.Yellow, "changed"), x.MessageID)
		for _, c := range x.Changes {
			if len(c.Before) > 0 {
				fmt.Fprintf(w, "%s\n", s.Paint(output.Red, "  - "+c.Path+": "+string(c.Before)))
			}
			if len(c.After) > 0 {
				fmt.Fprintf(w, "%s\n", s.Paint(output.Green, "  + "+c.Path+": "+string(c.After)))
			}
		}
	}
	fmt.Fprintf(w, "transform: %d changed, %d unchanged, %d failed (expression sha256 %s)\n", tp.Changed, tp.Unchanged, tp.Failed, tp.SHA256[:12])
	for _, e := range tp.Errors {
		fmt.Fprintf(w, "  failed: %d %s (first: message %s: %s)\n", e.Count, e.Reason, e.FirstID, e.FirstError)
	}
}

// TransformRows adds a transforming run's rows to its summary table.
func TransformRows(t *output.TablePrinter, tr *redrive.TransformResult) {
	if tr == nil {
		return
	}
	t.Row("transform", fmt.Sprintf("%d changed, %d unchanged, %d failed (left in the DLQ); expression sha256 %s", tr.Changed, tr.Unchanged, tr.Failed, tr.SHA256))
	for _, e := range tr.Errors {
		t.Row("  failed", fmt.Sprintf("%d %s (first: message %s: %s)", e.Count, e.Reason, e.FirstID, e.FirstError))
	}
	if o := tr.Originals; o != nil {
		where := o.Manifest
		if where == "" {
			where = o.Location + " (no manifest yet: re-run to write it)"
		}
		t.Row("originals", fmt.Sprintf("%d original(s) in %d verified part(s): %s ('dlqctl restore' it to undo)", o.Records, o.Parts, where))
	}
}

// NativeTask prints the end of a broker's own move (redrive --engine
// native) in format.
func NativeTask(s *output.IOStreams, prog *output.Progress, format output.Format, task *broker.NativeTask) {
	switch format {
	case output.JSON:
		_ = output.WriteJSON(s.Out, task)
	case output.NDJSON:
		_ = prog.Summary(task)
	default:
		s.Infof("move task %s: %s, %d moved", dash(task.Handle), task.Status, task.Moved)
	}
}

// WriteNativeTasks lists a DLQ's native move tasks (redrive status) in
// format; name is the DLQ's.
func WriteNativeTasks(s *output.IOStreams, format output.Format, tasks []broker.NativeTask, name string) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, tasks)
	case output.NDJSON:
		w := output.NewNDJSON(s.Out)
		for _, t := range tasks {
			if err := w.Write(t); err != nil {
				return err
			}
		}
		return nil
	}
	if len(tasks) == 0 {
		s.Infof("no move tasks for %s", name)
		return nil
	}
	t := output.NewTable(s, "STATUS", "MOVED", "TO MOVE", "RATE", "DESTINATION", "STARTED", "FAILURE")
	for _, k := range tasks {
		dest := record.ARNName(k.Destination, "sqs")
		if dest == "" {
			dest = "source"
		}
		rate := "-"
		if k.Rate > 0 {
			rate = fmt.Sprintf("%d/s", k.Rate)
		}
		t.Row(k.Status, fmt.Sprint(k.Moved), fmt.Sprint(k.ToMove), rate, dest, k.Started.Format(time.RFC3339), dash(k.Failure))
	}
	return t.Render()
}
