package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// kafkaReplayNote is said on every Kafka redrive: a replay appends.
const kafkaReplayNote = "replayed records are appended: they land after newer records with the same key, so consumers of the destination see them out of their original order"

// KafkaRedriveReport is the result of a Kafka redrive: the run result of
// docs/schema/run-result.schema.json plus Kafka's own fields.
type KafkaRedriveReport struct {
	Type      string `json:"type,omitempty"` // "summary" in NDJSON
	Run       string `json:"run_id"`
	DLQ       string `json:"dlq"`
	Group     string `json:"group"`
	To        string `json:"to"`
	Selection string `json:"selection"`
	Status    string `json:"status"`
	Read      int    `json:"received"`
	Moved     int    `json:"moved"`
	Resumed   int    `json:"resumed"`
	// SentNotDeleted: copies produced whose commit could not be recorded
	// (a later run sends them again: possible duplicates).
	SentNotDeleted int            `json:"sent_not_deleted"`
	Failed         int            `json:"failed"`
	UnknownOutcome int            `json:"unknown_outcome"`
	Returned       int            `json:"returned"`
	Skipped        map[string]int `json:"skipped"`
	Unmarked       int            `json:"unmarked"`
	ByDest         map[string]int `json:"by_destination"`
	Complete       bool           `json:"complete"`
	Interrupted    bool           `json:"interrupted"`
	StoppedAtMax   bool           `json:"stopped_at_max,omitempty"`
	Duplicates     int            `json:"duplicates"`
	// MaybeTwice and MaybeTwiceResent (run-result): records a killed run
	// (kill -9, OOM, a lost host) produced and died before committing,
	// produced again by this run — the destination may hold two copies.
	// MaybeTwiceMessages names (up to 1000 of) them: id TOPIC-P@O, orig
	// the copy's marker orig (the consumer's deduplication key), the
	// destination topic, cause "resent". Never set with --exactly-once
	// when the killed run produced in a transaction: see AbortedResent.
	MaybeTwice         int                    `json:"maybe_twice,omitempty"`
	MaybeTwiceResent   int                    `json:"maybe_twice_resent,omitempty"`
	MaybeTwiceMessages []redrive.TwiceMessage `json:"maybe_twice_messages,omitempty"`
	// AbortedResent: records a killed --exactly-once run produced in the
	// transaction it never committed, produced again by this run: that
	// transaction was aborted (this run's producer fenced it), so
	// read_committed consumers never saw the first copies.
	AbortedResent int `json:"aborted_resent,omitempty"`
	// KilledRuns names the killed runs whose records this run produced
	// again.
	KilledRuns []string `json:"killed_runs,omitempty"`
	Elapsed    float64  `json:"elapsed_seconds"`
	Rate       float64  `json:"rate"`
	// Left counts records this run read and left pending (not selected,
	// skipped, past --max or the canary, failed).
	Left    int              `json:"left_pending"`
	Pending int64            `json:"pending_after"`
	Canary  *KafkaCanary     `json:"canary,omitempty"`
	Guard   *KafkaGuard      `json:"guard,omitempty"`
	Note    string           `json:"note"`
	Stats   kafka.DrainStats `json:"kafka"`
	// FilterErrors: records the --filter or a rule failed on (left
	// pending, skipped "filter error").
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
}

// KafkaCanary is a canary's verdict (run-result's verdict).
type KafkaCanary struct {
	Pass     bool    `json:"pass"`
	Moved    int     `json:"moved"`
	Returned int     `json:"returned"`
	Watched  float64 `json:"watched_seconds"`
	// Window is the watch the canary was given and WindowReason how it
	// was derived (redrive.DecideWindow).
	Window       float64 `json:"window_seconds"`
	WindowReason string  `json:"window_reason"`
	Detail       string  `json:"detail"`
}

// KafkaGuard is a tripped --max-dest-lag guard (run-result's guard).
type KafkaGuard struct {
	Name   string  `json:"name"`
	State  string  `json:"state"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Detail string  `json:"detail"`
}

// KafkaRedrivePlan is a Kafka redrive's dry run (dry-run-plan.schema.json).
type KafkaRedrivePlan struct {
	Type      string                    `json:"type,omitempty"`
	DLQ       string                    `json:"dlq"`
	Group     string                    `json:"group"`
	Scanned   int                       `json:"scanned"`
	WouldMove int                       `json:"would_move"`
	ByDest    map[string]map[string]int `json:"by_destination"`
	Skipped   map[string]int            `json:"skipped"`
	Unmarked  int                       `json:"unmarked"`
	Estimated float64                   `json:"estimated_seconds,omitempty"`
	Complete  bool                      `json:"complete"`
	Note      string                    `json:"note"`
	To        string                    `json:"to"`
	Selection string                    `json:"selection"`
	Rate      float64                   `json:"rate,omitempty"`
	// FilterErrors: records the --filter or a rule failed on.
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
}

// whyRefused is decide's answer once the selection refused the run (it
// failed on every record read): nothing more is replayed.
const whyRefused = "refused"

var errKafkaGuard = errors.New("guard tripped")

// kafkaRedriveRun is redrive for a kafka:// dead-letter topic. The group's
// committed offsets are the journal: running the same command again
// resumes (there is no run journal to name).
func kafkaRedriveRun(ctx context.Context, opts *RedriveOptions) error {
	f := opts.F
	guards, err := parseDestLag(opts.Kafka.MaxDestLag)
	if err != nil {
		return err
	}
	ep, err := f.KafkaEndpoint(ctx, opts.DLQ)
	if err != nil {
		return err
	}
	defer ep.Close()
	plan, err := ep.Plan(ctx)
	if err != nil {
		return kafkaErr(err)
	}
	sel, err := opts.Selection.Selector()
	if err != nil {
		return err
	}
	watchFilterErrors(f, sel)
	// Destination: the original topic from each record's headers, or one topic.
	destEP := ep
	to := ""
	if !strings.EqualFold(opts.To, "source") {
		if !isKafkaRef(opts.To) {
			return errs.BadInputf("--to %s is not a Kafka topic; a Kafka dead-letter topic is redriven to --to source or --to kafka://HOST:PORT/TOPIC", opts.To)
		}
		if destEP, err = f.KafkaEndpoint(ctx, opts.To); err != nil {
			return err
		}
		defer destEP.Close()
		if _, err := destEP.Target(ctx); err != nil {
			return kafkaErr(err)
		}
		if destEP.ID() == ep.ID() {
			return errs.BadInputf("--to %s is the dead-letter topic itself; pass --to source or another topic", opts.To)
		}
		to = destEP.Name()
	}
	destAdm, err := destEP.Admin()
	if err != nil {
		return kafkaErr(err)
	}
	router := kafka.NewRouter(destAdm, to)
	runID := kafkaRunID()
	limit := opts.CanaryFlags.limit(opts.Max)

	// decide classifies a record (selection, loop limit, route) and
	// returns its destination or why it stays pending.
	// Without a selection every record is picked: its record (body hash,
	// attributes, decoded envelope) is not built, which is most of a
	// replay's per-record work.
	matchAll := sel.MatchesAll()
	decide := func(m *kafka.Message) (dest, class, why string) {
		if !matchAll {
			rec := kafka.ToRecord(m, ep.ID(), time.Now())
			parsed := inspect.Decode(rec)
			ok, err := sel.Select(rec, parsed)
			switch {
			case classify.IsRefusal(err):
				return "", "", whyRefused
			case err != nil:
				return "", "", redrive.SkipFilterError
			case !ok:
				return "", "", "not selected"
			}
			class = rec.Class
		}
		if mk := maxRedrivesMarker(m, opts.MaxRedrives); mk != nil {
			return "", "", fmt.Sprintf("redriven %d times before (--max-redrives)", mk.Count)
		}
		t, err := router.Route(ctx, m)
		if err != nil {
			switch {
			case errors.Is(err, kafka.ErrNoOrigin):
				return "", "", "no original-topic header (use --to)"
			case strings.Contains(err.Error(), "does not exist"):
				return "", "", "destination topic missing"
			}
			return "", "", "route: " + err.Error()
		}
		if class == "" {
			class = "all"
		}
		return t, class, ""
	}

	if opts.DryRun {
		return kafkaRedriveDryRun(ctx, f, opts, ep, plan, sel, decide, limit)
	}

	// The canary's watch is decided before anything moves: a window
	// Kafka cannot know refuses --canary without --verify-for (exit 2).
	var window redrive.Window
	if opts.Canary > 0 {
		var dests []broker.Destination
		if to != "" {
			dests = []broker.Destination{{Key: to, Label: destEP.ID(), Target: to}}
		}
		if window, err = opts.CanaryFlags.canaryWindow(ctx, f, ep, dests); err != nil {
			return kafkaErr(err)
		}
	}
	what := fmt.Sprintf("%d pending record(s) of %s (group %s) to %s", plan.Pending(), ep, ep.Group(), describeTo(opts.To))
	if err := confirm(f, "Redrive "+limitedWhat(what, opts.Canary, opts.Max)+"?",
		"redrive changes the group's committed offsets and produces to the destination; pass --yes to run it from a script (or --dry-run first)",
		"redrive cancelled; nothing was changed"); err != nil {
		return err
	}
	f.IO.Infof("note: %s", kafkaReplayNote)

	popt := kafka.ProducerOptions{}
	if opts.Kafka.ExactlyOnce {
		if strings.Join(destEP.Address().Brokers, ",") != strings.Join(ep.Address().Brokers, ",") {
			return errs.BadInputf("--exactly-once needs the destination on the dead-letter topic's cluster (one transaction covers the copies and the offsets); drop it or --to a topic on %s", strings.Join(ep.Address().Brokers, ","))
		}
		// One transactional id per group: a run started after a killed one
		// fences it (its open transaction is aborted).
		popt.TransactionalID = "dlqctl-" + ep.Group()
	}
	prod, err := kafka.OpenProducer(destEP.Address(), destEP.Conn(), popt)
	if err != nil {
		return kafkaErr(err)
	}
	defer prod.Close()
	var txn *kafka.Producer
	if opts.Kafka.ExactlyOnce {
		txn = prod
	}

	rep := &KafkaRedriveReport{Run: runID, DLQ: ep.String(), Group: ep.Group(), To: opts.To, Selection: sel.Describe(),
		Skipped: map[string]int{}, ByDest: map[string]int{}, Note: kafkaReplayNote}
	pacer := newKafkaPacer(opts, guards, destAdm)
	batch := 500
	if r := pacer.minRate(); r > 0 {
		batch = max(1, min(500, int(r)))
	}
	format, _ := f.Format()
	nd := output.NewNDJSON(f.IO.Out)
	prog := output.NewProgress(f.IO, format)
	dlqEnd := map[int32]int64{}
	for _, pr := range plan.Partitions {
		dlqEnd[pr.Partition] = pr.End
	}
	start := time.Now()
	// Drain calls Select and OnRecord one at a time from its own
	// goroutine: the counts need no lock. A handled record went where the
	// router sent it: --to, or the original topic in its headers (what
	// Route returned for it in decide).
	destOf := func(m *kafka.Message) string {
		if to != "" {
			return to
		}
		return m.Origin.Topic
	}
	// Per-record counting by destination goes through one counter while
	// the destination repeats (a dead-letter topic has one or a few).
	byDest := map[string]*int{}
	lastDest, lastN := "", (*int)(nil)
	countDest := func(d string) {
		if lastN == nil || d != lastDest {
			if lastN = byDest[d]; lastN == nil {
				lastN = new(int)
				byDest[d] = lastN
			}
			lastDest = d
		}
		*lastN++
	}
	sink := kafka.ReplaySink(prod, router, runID)
	ledgerDir, ledgerTell, ledgerWarn := ep.MemberLedger()
	// A refusal of the selection stops the drain before the batch it came
	// in is produced (that batch selected nothing).
	dctx, stopDrain := context.WithCancel(ctx)
	defer stopDrain()
	refused := false
	st, runErr := kafka.Drain(dctx, kafka.DrainOptions{
		Source: ep.Address(), Conn: ep.Conn(), Group: ep.Group(), Batch: batch, Limit: limit, Txn: txn,
		StateDir: ledgerDir, Tell: ledgerTell, Warn: ledgerWarn, RunID: runID,
		OnResent: func(m *kafka.Message, killed kafka.KilledRun) {
			if !slices.Contains(rep.KilledRuns, killed.ID) {
				rep.KilledRuns = append(rep.KilledRuns, killed.ID)
			}
			if killed.Txn {
				rep.AbortedResent++
				return
			}
			rep.MaybeTwiceResent++
			if len(rep.MaybeTwiceMessages) < maxTwiceListed {
				id := m.ID() // the copy's marker orig: the same id
				rep.MaybeTwiceMessages = append(rep.MaybeTwiceMessages, redrive.TwiceMessage{ID: id, Orig: id, Destination: destOf(m), Cause: redrive.CauseResent})
			}
		},
		Select: func(m *kafka.Message) kafka.Decision {
			if _, _, why := decide(m); why != "" {
				if why == whyRefused {
					refused = true
					stopDrain()
					return kafka.Leave
				}
				if why != "not selected" {
					rep.Skipped[why]++
				}
				return kafka.Leave
			}
			return kafka.Handle
		},
		Sink: sink,
		Wait: pacer.wait,
		OnBatch: func(s kafka.DrainStats) {
			el := time.Since(start).Seconds()
			prog.Update(output.Stats{Op: "redrive", Done: int64(s.Handled), Total: plan.Pending(), Skipped: int64(s.Left), Failed: int64(s.Failed)}, false)
			if format == output.NDJSON {
				_ = nd.Write(map[string]any{"type": "progress", "op": "redrive", "done": s.Handled, "total": plan.Pending(),
					"skipped": s.Left, "failed": s.Failed, "rate": float64(s.Handled) / max(el, 0.001), "elapsed_seconds": el})
			}
		},
		OnRecord: func(m *kafka.Message, outcome string, err error) {
			switch outcome {
			case kafka.OutcomeFailed:
				f.IO.Warnf("%s: not replayed, stays pending: %v", m.ID(), err)
			case kafka.OutcomeHandled:
				countDest(destOf(m))
			}
		},
	})
	prog.Done()
	for d, n := range byDest {
		rep.ByDest[d] = *n
	}
	rep.FilterErrors = sel.Errors()
	var refusal error
	if refused || runErr == nil {
		refusal = sel.Refusal()
	}
	rep.Stats = st
	rep.Elapsed = time.Since(start).Seconds()
	if rep.Elapsed > 0 {
		rep.Rate = float64(st.Handled) / rep.Elapsed
	}
	rep.Read, rep.Moved, rep.Failed, rep.Left = st.Read, st.Handled, st.Failed, st.Left+st.Failed
	if n := st.Left - sumSkipped(rep.Skipped); limit > 0 && st.Handled >= limit && n > 0 {
		rep.StoppedAtMax = true
	}
	rep.MaybeTwice = rep.MaybeTwiceResent
	rep.SentNotDeleted = st.JournalFull + st.Unacked + st.Uncommitted
	rep.Duplicates = rep.SentNotDeleted
	if p, err := ep.Plan(context.WithoutCancel(ctx)); err == nil {
		rep.Pending = p.Pending()
	}
	switch {
	case refusal != nil:
		rep.Status = "failed"
	case errors.Is(runErr, errKafkaGuard):
		rep.Status = "guard"
		rep.Guard = pacer.trippedGuard
	case runErr != nil && ctx.Err() != nil:
		rep.Status, rep.Interrupted = "interrupted", true
	case runErr != nil:
		rep.Status = "failed"
	case st.Failed > 0 || st.LeftToOthers > 0 || st.Unfinished > 0:
		rep.Status = "partial"
	default:
		rep.Status = "completed"
		rep.Complete = rep.Pending == 0
	}
	if runErr == nil && opts.Canary > 0 {
		rep.Canary = kafkaWatchCanary(ctx, f, opts, ep, dlqEnd, runID, st.Handled, window)
		rep.Returned = rep.Canary.Returned
		if !rep.Canary.Pass {
			rep.Status = "canary-failed"
		}
	}
	if err := printKafkaRedrive(f, rep); err != nil {
		return err
	}
	kafkaCrashNote(f, rep)
	if refusal != nil {
		return refusal
	}
	warnFilterErrors(f, rep.FilterErrors, "stay pending")
	switch rep.Status {
	case "guard":
		return errs.Verdictf("guard tripped: %s; the %d records moved are committed, run the same command again to continue", rep.Guard.Detail, rep.Moved)
	case "canary-failed":
		return errs.Verdictf("canary failed: %s", rep.Canary.Detail)
	case "interrupted":
		return runErr
	case "failed":
		return kafkaRunErr(runErr)
	case "partial":
		if st.Unfinished > 0 {
			return errs.Partialf("%d record(s) of partitions this run was assigned are still pending in %s: read back at the end, group %s's commit does not cover them (a partition came late or moved to another member); run the same command again", st.Unfinished, ep.Name(), ep.Group())
		}
		if st.LeftToOthers > 0 {
			return errs.Partialf("%d record(s) are pending in partitions other members of group %s still held when this run ended; run the same command again once they are done", st.LeftToOthers, ep.Group())
		}
		return errs.Partialf("%d record(s) could not be replayed and stay pending in %s (see the warnings above)", st.Failed, ep.Name())
	}
	return nil
}

// maxRedrivesMarker returns m's replay marker when it says the record was
// redriven max times or more (max 0: no limit, and the headers are not
// searched).
func maxRedrivesMarker(m *kafka.Message, max int) *record.Marker {
	if max <= 0 {
		return nil
	}
	if mk := kafka.ReplayMarker(m.Headers); mk != nil && mk.Count >= max {
		return mk
	}
	return nil
}

func describeTo(to string) string {
	if strings.EqualFold(to, "source") {
		return "the original topics named in their headers"
	}
	return to
}

func sumSkipped(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func kafkaRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// kafkaRedriveDryRun reads the pending records without committing and
// prints what a run would do.
func kafkaRedriveDryRun(ctx context.Context, f *Factory, opts *RedriveOptions, ep *kafka.Endpoint, plan *kafka.Plan, sel *classify.Selector,
	decide func(*kafka.Message) (dest, class, why string), limit int) error {
	pl := &KafkaRedrivePlan{DLQ: ep.String(), Group: ep.Group(), To: opts.To, Selection: sel.Describe(), Rate: opts.Rate,
		ByDest: map[string]map[string]int{}, Skipped: map[string]int{}, Note: kafkaReplayNote}
	st, err := kafka.Peek(ctx, ep.Address(), ep.Conn(), plan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		pl.Scanned++
		if limit > 0 && pl.WouldMove >= limit {
			pl.Skipped[fmt.Sprintf("past --max/--canary %d", limit)]++
			return nil
		}
		dest, class, why := decide(m)
		switch {
		case why == whyRefused:
			return sel.Refusal()
		case why == "not selected":
		case why != "":
			pl.Skipped[why]++
		default:
			if pl.ByDest[dest] == nil {
				pl.ByDest[dest] = map[string]int{}
			}
			pl.ByDest[dest][class]++
			pl.WouldMove++
		}
		return nil
	})
	if errs.Code(err) == errs.ExitUsage {
		return err // the selection's refusal
	}
	if err != nil {
		return kafkaErr(err)
	}
	if pl.FilterErrors, err = endSelection(f, sel, "would stay pending"); err != nil {
		return err
	}
	pl.Complete = len(st.Truncated) == 0
	if r := opts.Rate; r > 0 {
		pl.Estimated = float64(pl.WouldMove) / r
	}
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, pl)
	case output.NDJSON:
		p := *pl
		p.Type = "summary"
		return output.NewNDJSON(f.IO.Out).Write(p)
	}
	t := output.NewTable(f.IO, "FIELD", "VALUE")
	t.Row("dry run", pl.DLQ)
	t.Row("group", pl.Group)
	t.Row("to", describeTo(pl.To))
	t.Row("selection", pl.Selection)
	t.Row("scanned", strconv.Itoa(pl.Scanned))
	t.Row("would move", strconv.Itoa(pl.WouldMove))
	for _, d := range sortedKeys(pl.ByDest) {
		for _, c := range sortedKeys(pl.ByDest[d]) {
			t.Row("  to "+d+" ("+c+")", strconv.Itoa(pl.ByDest[d][c]))
		}
	}
	for _, r := range sortedKeys(pl.Skipped) {
		t.Row("  skipped: "+r, strconv.Itoa(pl.Skipped[r]))
	}
	if pl.Estimated > 0 {
		t.Row("estimate", (time.Duration(pl.Estimated * float64(time.Second))).Round(time.Second).String())
	}
	t.Row("note", pl.Note)
	return t.Render()
}

func printKafkaRedrive(f *Factory, rep *KafkaRedriveReport) error {
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, rep)
	case output.NDJSON:
		r := *rep
		r.Type = "summary"
		return output.NewNDJSON(f.IO.Out).Write(r)
	}
	t := output.NewTable(f.IO, "FIELD", "VALUE")
	t.Row("run", rep.Run)
	t.Row("status", rep.Status)
	t.Row("topic", rep.DLQ)
	t.Row("group", rep.Group)
	t.Row("to", describeTo(rep.To))
	t.Row("selection", rep.Selection)
	t.Row("read", strconv.Itoa(rep.Read))
	t.Row("moved", strconv.Itoa(rep.Moved))
	for _, d := range sortedKeys(rep.ByDest) {
		t.Row("  to "+d, strconv.Itoa(rep.ByDest[d]))
	}
	t.Row("left pending", strconv.Itoa(rep.Left))
	for _, r := range sortedKeys(rep.Skipped) {
		t.Row("  "+r, strconv.Itoa(rep.Skipped[r]))
	}
	t.Row("failed", strconv.Itoa(rep.Failed))
	if fe := rep.FilterErrors; fe != nil {
		t.Row("filter errors", filterErrorsRow(fe, "left pending"))
	}
	t.Row("pending after", strconv.FormatInt(rep.Pending, 10))
	if rep.SentNotDeleted > 0 {
		t.Row("possible duplicates", strconv.Itoa(rep.SentNotDeleted))
	}
	if rep.MaybeTwiceResent > 0 {
		t.Row("maybe twice", kafkaResentNote(rep.MaybeTwiceResent))
	}
	if rep.AbortedResent > 0 {
		t.Row("after aborted transaction", kafkaAbortedNote(rep.AbortedResent))
	}
	if c := rep.Canary; c != nil {
		t.Row("canary", c.Detail)
	}
	if g := rep.Guard; g != nil {
		t.Row("guard", g.Detail)
	}
	t.Row("note", rep.Note)
	return t.Render()
}

// maxTwiceListed bounds maybe_twice_messages (as on the other brokers).
const maxTwiceListed = 1000

// kafkaCrashNote says on stderr, whatever the output format, which records
// a killed run had produced past the group's commit and this run produced
// again: possibly twice, or — the killed run was transactional — after
// its transaction was aborted.
func kafkaCrashNote(f *Factory, rep *KafkaRedriveReport) {
	runs := strings.Join(rep.KilledRuns, ", ")
	if rep.MaybeTwiceResent > 0 {
		f.IO.Infof("resumed run %s: %s", runs, kafkaResentNote(rep.MaybeTwiceResent))
	}
	if rep.AbortedResent > 0 {
		f.IO.Infof("resumed run %s: %s", runs, kafkaAbortedNote(rep.AbortedResent))
	}
}

// kafkaResentNote is resentNote for Kafka: the killed run's records were
// produced before its commit, and produced again.
func kafkaResentNote(n int) string {
	return fmt.Sprintf("%d message(s) may have been delivered twice: the process died after sending them and before recording it (it produced them and was killed before the group's commit moved past them); give the list (-o json maybe_twice_messages: TOPIC-PARTITION@OFFSET, the orig of each copy's %s marker) to the destination consumer's owner ('dlqctl help redrive.md': after a kill)", n, kafka.MarkerHeader)
}

// kafkaAbortedNote says that n records of a killed --exactly-once run were
// produced again after its transaction was aborted: no duplicates for
// read_committed consumers.
func kafkaAbortedNote(n int) string {
	return fmt.Sprintf("the killed run's transaction was aborted, so read_committed consumers of the destination never saw the %d record(s) it was producing (in the transaction it never committed); they are produced again now, once (read_uncommitted consumers may have seen both)", n)
}

// kafkaWatchCanary watches the dead-letter topic past its start-time ends
// for the canary window: a record carrying this run's marker is a canary
// copy that failed again and came back.
func kafkaWatchCanary(ctx context.Context, f *Factory, opts *RedriveOptions, ep *kafka.Endpoint, ends map[int32]int64, runID string, moved int, window redrive.Window) *KafkaCanary {
	c := &KafkaCanary{Moved: moved, Pass: true, Window: window.For.Seconds(), WindowReason: window.Reason}
	if moved == 0 {
		c.Pass = false
		c.Detail = "inconclusive: the canary moved nothing"
		return c
	}
	f.IO.Infof("canary: %d record(s) replayed; watching %s for %s for them to come back", moved, ep.Name(), window.For)
	start := time.Now()
	deadline := start.Add(window.For)
	seen := map[string]bool{}
	for {
		plan, err := ep.Plan(ctx)
		if err == nil {
			for i := range plan.Partitions {
				pr := &plan.Partitions[i]
				pr.Start = pr.LogStart
				if e, ok := ends[pr.Partition]; ok && e > pr.Start {
					pr.Start = e
				}
				pr.HandledAbove = 0
			}
			plan.Journals = nil
			_, _ = kafka.Peek(ctx, ep.Address(), ep.Conn(), plan, kafka.PeekOptions{Idle: 5 * time.Second}, func(m *kafka.Message) error {
				if mk := kafka.ReplayMarker(m.Headers); mk != nil && mk.RunID == runID {
					seen[mk.OriginalID] = true
				}
				return nil
			})
		}
		c.Returned = len(seen)
		c.Watched = time.Since(start).Seconds()
		if c.Returned > 0 {
			c.Pass = false
			c.Detail = fmt.Sprintf("FAIL: %d of %d replayed records came back to %s", c.Returned, moved, ep.Name())
			return c
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			c.Detail = fmt.Sprintf("PASS: none of %d replayed records came back to %s within %s (window: %s)", moved, ep.Name(), window.For, window.Reason)
			if ctx.Err() != nil {
				c.Pass = false
				c.Detail = "inconclusive: interrupted while watching"
			}
			return c
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(opts.VerifyPoll, time.Until(deadline)+time.Millisecond)):
		}
	}
}
