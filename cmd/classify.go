package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ClassifyOptions are the inputs of `dlqctl classify`.
type ClassifyOptions struct {
	F         *Factory
	Queue     string
	Read      ReadFlags
	Selection SelectionFlags
	Summary   bool
	Explain   string
	Redact    []string
	NoRedact  bool
	// Now is the reference time for ages (default: time.Now).
	Now time.Time
}

// NewCmdClassify builds `dlqctl classify`.
func NewCmdClassify(f *Factory, runF func(context.Context, *ClassifyOptions) error) *cobra.Command {
	opts := &ClassifyOptions{F: f}
	c := &cobra.Command{
		Use:   "classify QUEUE [--rules FILE] [--summary | --explain ID]",
		Short: "Sort messages into failure classes and say what to do with each",
		Long: withExitCodes(`Classify the messages of a dead-letter queue with ordered rules (first match
wins) into a class and an action: redrive, redrive-to-recovery, archive,
investigate or ignore. Nothing is consumed: messages are read and released
as with 'dlqctl group'.

Messages are decoded first: the DLQ format (Lambda async DLQ or
destination record, EventBridge, SNS, CloudEvents, MassTransit,
NServiceBus, Spring Kafka, Kafka Connect, Celery, Dramatiq, Rebus, Laravel,
Sidekiq, Faktory, ActiveJob, Hangfire, Azure Service Bus, Event Grid and
Pub/Sub dead letters, NATS JetStream advisories, enriched wrapper, generic
failure keys) gives failure.format, the failure evidence and the original
payload. Failure evidence is also found by its shape wherever it sits:
serialised error objects (database drivers, HTTP clients, AWS SDKs,
OpenTelemetry exception attributes), stack traces and error-level log
lines; inside the message's own data (a payment_failed webhook, an email
bounce) they are hints that never decide. Exception chains and groups
decide on their root cause (Java/Rust "Caused by", .NET "--->" and
AggregateException, Node [cause] and AggregateError, Python "from",
"During handling" and ExceptionGroup, Go %w); a gRPC status decides on
its description.
A plain message dead-lettered by an SQS redrive policy has no failure
context: SQS records no reason.

Without --rules the built-in rules apply, in this order:
  redrive-loop        carries the dlqctl-redrive marker (redriven before and
                      back again)                    -> redrive-loop/investigate
  broker-capacity     RabbitMQ dead-lettered it for a TTL (expired) or a
                      length limit (maxlen)          -> transient/redrive
  body-not-json       body starts like JSON and does not parse, or is not
                      what a rules file's sources: says its consumer
                      expects; no failure evidence names a cause (XML, CSV,
                      text, base64 or binary alone are not evidence)
                                                     -> permanent/archive
  schema-mismatch     failure names an unsupported version/schema, unknown
                      type or no handler; or, without failure evidence, an
                      event schema version not in 1, 2, 3 (configurable) or
                      an unknown schemaRef  -> schema-mismatch/redrive-to-recovery
  conflicting-signals strong transient and strong non-transient evidence
                                                     -> unknown/investigate
  transient-failure   network error, timeout, throttling/429, 5xx, gRPC
                      unavailable, deadlock, SQLSTATE 40001/08 -> transient/redrive
  business-rejection  insufficient funds, declined, already processed, order
                      not found                      -> business/investigate
  permanent-failure   parse/deserialization, validation, SQLSTATE 22/23,
                      HTTP 4xx other than 408/425/429 -> permanent/archive
  configuration-error access denied, missing resource, expired credentials
                                                     -> unknown/investigate
  default             (also no failure context)      -> unknown/investigate
Explicit failure evidence beats body and envelope heuristics; a version
counts only when the decoder vouches it is the event's schema version
(never EventBridge "version" or CloudEvents "specversion"). See
'dlqctl help triage' for the formats and families. A rules file (YAML,
'dlqctl help rules') lists its own rules and can include the built-ins
('- include: builtin'); .failure.format and .payload let a rule target one
format. It is checked before any message is read: an invalid file exits 2
naming file, line and reason.

Each decision has a confidence (0..1: 0.95 a chain's root cause, 0.9 an
exception type, code or status, 0.85 a specific phrase, 0.55 generic words
alone, 0.5 conflicting evidence; rules of a rules file 1). --class takes a
decision only at or above --min-confidence (default 0.6, chosen on the
corpus so that no dangerous confusion is selected); unknown is always
selectable. The record's "confidence" field carries it.

Output is one line (record) per message, --summary counts per class and
action with examples (and estimated totals when only a sample of a larger
queue was read), and --explain ID shows the format detected, each piece
of failure evidence (field -> text) with the family it names, the chain's
root cause when it decided, the confidence, and every rule evaluated for
one message and why the matching one matched.

Bodies are shown with secret-looking values masked (see 'dlqctl sample').

` + SelectionHelp + `

` + LogsHelp + ` --explain shows the log lines used.

Exit 4 with --all when the queue could not be read whole (FIFO groups
locked behind held messages, messages in flight elsewhere, the in-flight
limit): the result covers what was read and says what was not. Exit 2 on bad
rules or keys, no credentials or region, or AccessDenied on the queue
(naming the IAM action), or a --min-confidence outside 0..1; a --logs group
that may not be searched is exit 1.`),
		Example: `  dlqctl classify orders-dlq --summary
  dlqctl classify orders-dlq --summary --logs /aws/lambda/orders-consumer,/ecs/orders-worker
  dlqctl classify orders-dlq --all --class transient -o ndjson > transient.ndjson
  dlqctl classify orders-dlq --all --class transient --min-confidence 0.9 -o ndjson
  dlqctl classify orders-dlq --rules rules.yaml --explain 8d3c…
  dlqctl classify --from dlq.ndjson --rules rules.yaml --summary -o json`,
		Args: queueOrFromArgs(&opts.Read.From),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Queue = args[0]
			}
			if err := opts.Read.validate(c); err != nil {
				return err
			}
			opts.Explain = strings.TrimSpace(opts.Explain)
			if c.Flags().Changed("explain") && opts.Explain == "" {
				return errs.BadInputf("--explain needs a message id; find one with 'dlqctl sample' or 'dlqctl classify'")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return classifyRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&opts.Summary, "summary", false, "count messages per class and action instead of listing them")
	fl.StringVar(&opts.Explain, "explain", "", "show how the rules classify the message with this id")
	fl.StringSliceVar(&opts.Redact, "redact", nil, "extra keys or dotted body paths to mask (comma-separated)")
	fl.BoolVar(&opts.NoRedact, "no-redact", false, "show secret-looking values unmasked")
	c.MarkFlagsMutuallyExclusive("summary", "explain")
	opts.Read.addFlags(c)
	opts.Selection.AddFlags(c.Flags())
	opts.Selection.AddLogsFlags(c.Flags())
	return c
}

func classifyRun(ctx context.Context, opts *ClassifyOptions) error {
	sel, err := opts.Selection.selector(true)
	if err != nil {
		return err
	}
	watchFilterErrors(opts.F, sel)
	lk, err := newLogsLookup(ctx, opts.F, &opts.Selection.Logs)
	if err != nil {
		return err
	}
	if opts.Explain != "" {
		return explainRun(ctx, opts, sel.Rules(), lk)
	}
	if opts.Summary {
		return classifySummaryRun(ctx, opts, sel, lk)
	}
	return classifyListRun(ctx, opts, sel, lk)
}

func classifyListRun(ctx context.Context, opts *ClassifyOptions, sel *classify.Selector, lk *logsLookup) (retErr error) {
	f := opts.F
	var redactor *inspect.Redactor
	if !opts.NoRedact {
		redactor = inspect.NewRedactor(opts.Redact)
	}
	format, _ := f.Format()
	var nd *output.NDJSONWriter
	if format == output.NDJSON {
		nd = output.NewNDJSON(f.IO.Out)
	}
	var recs []record.Record
	matched := 0
	// Classification, redaction and (for NDJSON) encoding run on the
	// decoding goroutines; records are printed in input order.
	type listed struct {
		rec  record.Record
		line json.RawMessage
		err  error
	}
	rr, err := readRecords(ctx, f, opts.Queue, &opts.Read, lk, func(rec *record.Record, parsed any) any {
		ok, err := selectPrepared(sel, rec, parsed)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		l := &listed{rec: *rec}
		if redactor != nil {
			l.rec = redactor.Record(l.rec)
		}
		if nd != nil {
			l.line, l.err = l.rec.MarshalJSON()
		}
		return l
	}, func(_ *record.Record, _, prepared any) error {
		l, ok := prepared.(*listed)
		if !ok {
			return nil
		}
		matched++
		if nd != nil {
			if l.err != nil {
				return l.err
			}
			return nd.Write(l.line)
		}
		recs = append(recs, l.rec)
		return nil
	})
	if err != nil {
		return err
	}
	defer func() { retErr = rr.finish(retErr) }()
	if _, err := endSelection(f, sel, "are not listed"); err != nil {
		return err
	}
	f.IO.Infof("%s", describeRead(rr, matched, sel))
	switch format {
	case output.NDJSON:
		return nil
	case output.JSON:
		if recs == nil {
			recs = []record.Record{}
		}
		return output.WriteJSON(f.IO.Out, recs)
	}
	if len(recs) == 0 {
		f.IO.Infof("no messages")
		return nil
	}
	t := output.NewTable(f.IO, "ID", "CLASS", "ACTION", "RULE", "SOURCE", "EVENT", "ERROR")
	for _, r := range recs {
		t.Row(r.MessageID, r.Class, r.Action, r.Rule, record.ARNName(r.System.SourceQueueARN, "sqs"), eventCell(&r),
			output.Truncate(errorCell(&r), 60))
	}
	return t.Render()
}

func eventCell(r *record.Record) string {
	if r.Envelope == nil {
		return ""
	}
	s := r.Envelope.EventType
	if r.Envelope.EventVersion != nil {
		s += fmt.Sprintf(" v%v", r.Envelope.EventVersion)
	}
	return s
}

func errorCell(r *record.Record) string {
	if r.Failure == nil {
		return ""
	}
	if src := r.Failure.Source; src != nil && src.Note != "" && !r.Failure.HasContext() {
		return "(logs: " + src.Note + ")"
	}
	return strings.Trim(strings.TrimSpace(r.Failure.Type+": "+r.Failure.Reason), ": ")
}

// ClassSummary is one class/action row of `classify --summary`.
type ClassSummary struct {
	Class  string `json:"class"`
	Action string `json:"action"`
	*inspect.Group
	// Rules counts the messages per matching rule.
	Rules map[string]int `json:"rules"`
	Note  string         `json:"note,omitempty"`
}

// rowNote is a summary row's note: the note of the rule that decided most
// of its messages (ties: the rule name first in order). A row is not
// labelled with the note of a rule that decided none of its messages.
func rowNote(counts map[string]int, notes map[string]string) string {
	best, bestN := "", 0
	for rule, n := range counts {
		if notes[rule] == "" {
			continue
		}
		if n > bestN || n == bestN && rule < best {
			best, bestN = rule, n
		}
	}
	return notes[best]
}

// ClassifyReport is the JSON output of `classify --summary`.
type ClassifyReport struct {
	Queue     string          `json:"queue,omitempty"`
	Rules     string          `json:"rules"`
	Selection string          `json:"selection"`
	Read      int             `json:"read"`
	Matched   int             `json:"matched"`
	Complete  bool            `json:"complete"`
	Depth     int             `json:"depth,omitempty"`
	Note      string          `json:"note,omitempty"`
	Classes   []*ClassSummary `json:"classes"`
	// FilterErrors: messages the --filter or a rule failed on (not
	// counted in any class).
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
}

func classifySummaryRun(ctx context.Context, opts *ClassifyOptions, sel *classify.Selector, lk *logsLookup) (retErr error) {
	f := opts.F
	keys, err := inspect.ParseGroupKeys([]string{"class,action"})
	if err != nil {
		return err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	g := inspect.NewGrouper(keys, now)
	byRule := map[[2]string]map[string]int{}
	notes := map[string]string{}
	rr, err := readRecords(ctx, f, opts.Queue, &opts.Read, lk, func(rec *record.Record, parsed any) any {
		ok, err := selectPrepared(sel, rec, parsed) // on the decoding goroutines
		if err != nil {
			return err
		}
		return ok
	}, func(rec *record.Record, parsed, matched any) error {
		if matched != true {
			return nil
		}
		g.Add(rec, parsed)
		k := [2]string{rec.Class, rec.Action}
		if byRule[k] == nil {
			byRule[k] = map[string]int{}
		}
		byRule[k][rec.Rule]++
		return nil
	})
	if err != nil {
		return err
	}
	defer func() { retErr = rr.finish(retErr) }()
	fe, err := endSelection(f, sel, "are not counted in any class")
	if err != nil {
		return err
	}
	rules := sel.Rules()
	for _, r := range rules.Rules {
		if _, ok := notes[r.Name]; !ok && r.Note != "" {
			notes[r.Name] = r.Note
		}
	}
	if _, ok := notes[classify.DefaultRuleName]; !ok {
		notes[classify.DefaultRuleName] = rules.Default.Note
	}
	groups := g.Groups()
	if !rr.Complete && rr.Queue != nil {
		inspect.AddEstimates(groups, rr.Read, rr.Depth)
	}
	rep := &ClassifyReport{Rules: rules.Source, Selection: sel.Describe(), Read: rr.Read, Matched: g.Total(),
		Complete: rr.Complete, Depth: rr.Depth, Note: rr.Note, Classes: []*ClassSummary{}, FilterErrors: fe}
	if rr.Queue != nil {
		rep.Queue = rr.Queue.ID()
	}
	for _, grp := range groups {
		cls, act := grp.Values[0], grp.Values[1]
		counts := byRule[[2]string{cls, act}]
		rep.Classes = append(rep.Classes, &ClassSummary{Class: cls, Action: act, Group: grp, Rules: counts, Note: rowNote(counts, notes)})
	}
	f.IO.Infof("%s", describeRead(rr, g.Total(), sel))
	if done, err := writeStructured(f, rep, rep.Classes); done {
		return err
	}
	if len(rep.Classes) == 0 {
		f.IO.Infof("no messages")
		return nil
	}
	estimated := false
	for _, c := range rep.Classes {
		estimated = estimated || c.Estimate != nil
	}
	headers := []string{"CLASS", "ACTION", "COUNT", "SHARE"}
	if estimated {
		headers = append(headers, "EST. TOTAL (95%)")
	}
	headers = append(headers, "OLDEST", "EXPIRES", "RULES", "EXAMPLES")
	t := output.NewTable(f.IO, headers...)
	for _, c := range rep.Classes {
		row := []string{c.Class, c.Action, fmt.Sprint(c.Count), fmt.Sprintf("%.1f%%", 100*c.Share)}
		if estimated {
			row = append(row, estimateCell(c.Estimate))
		}
		row = append(row, ageCell(now, c.OldestSentAt), expiryCell(now, c.SoonestExpiry), ruleCounts(c.Rules), strings.Join(c.Examples, " "))
		t.Row(row...)
	}
	return t.Render()
}

// ruleCounts renders {"a":2,"b":1} as "a:2 b:1", largest first.
func ruleCounts(m map[string]int) string {
	type rc struct {
		name string
		n    int
	}
	var l []rc
	for k, v := range m {
		l = append(l, rc{k, v})
	}
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && (l[j].n > l[j-1].n || l[j].n == l[j-1].n && l[j].name < l[j-1].name); j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s:%d", x.name, x.n)
	}
	return strings.Join(parts, " ")
}

// ExplainReport is the JSON output of `classify --explain`.
type ExplainReport struct {
	MessageID string `json:"message_id"`
	*classify.Explanation
}

func explainRun(ctx context.Context, opts *ClassifyOptions, rules *classify.Rules, lk *logsLookup) (retErr error) {
	f := opts.F
	read := opts.Read
	if !read.sampleSet {
		read.All = true // look until the message is found
	}
	var found *classify.Explanation
	var rec record.Record
	var lookupErr error
	rr, err := readRecords(ctx, f, opts.Queue, &read, nil, nil, func(r *record.Record, parsed, _ any) error {
		if r.MessageID != opts.Explain {
			return nil
		}
		rec = *r
		if lookupErr = lk.one(&rec); lookupErr != nil {
			return errStop
		}
		found = rules.Explain(&rec, parsed)
		return errStop
	})
	lk.summary()
	if err == nil {
		err = lookupErr
	}
	if err != nil {
		return err
	}
	defer func() { retErr = rr.finish(retErr) }()
	if found == nil {
		where := "the input"
		if rr.Queue != nil {
			where = rr.Queue.Name()
		}
		hint := "check the id with 'dlqctl sample' or 'dlqctl classify'"
		if !rr.Complete {
			hint = "only part was read; try --all or a larger --sample"
		}
		return errs.BadInputf("message %s is not among the %d messages read from %s; %s", opts.Explain, rr.Read, where, hint)
	}
	format, _ := f.Format()
	if format != output.Table {
		return output.WriteJSON(f.IO.Out, ExplainReport{MessageID: rec.MessageID, Explanation: found})
	}
	var redactor *inspect.Redactor
	if !opts.NoRedact {
		redactor = inspect.NewRedactor(opts.Redact)
	}
	writeExplanation(f.IO.Out, rec, found, opts.Selection.MinConf(), redactor)
	return nil
}

// writeExplanation prints the text of `classify --explain` for rec (the
// message screen of `dlqctl ui` shows the same); redactor masks the log
// lines shown (nil: --no-redact).
func writeExplanation(w io.Writer, rec record.Record, found *classify.Explanation, minConf float64, redactor *inspect.Redactor) {
	fmt.Fprintf(w, "message %s", rec.MessageID)
	var ctxParts []string
	if s := record.ARNName(rec.System.SourceQueueARN, "sqs"); s != "" {
		ctxParts = append(ctxParts, "from "+s)
	}
	if e := eventCell(&rec); e != "" {
		ctxParts = append(ctxParts, e)
	}
	if e := errorCell(&rec); e != "" {
		ctxParts = append(ctxParts, output.Truncate(e, 80))
	}
	if len(ctxParts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(ctxParts, "; "))
	}
	fmt.Fprintln(w)
	writeAnalysis(w, found)
	shown := rec
	if redactor != nil {
		shown = redactor.Record(rec)
	}
	writeLogLines(w, &shown)
	fmt.Fprintf(w, "rules: %s\n", found.Source)
	for _, s := range found.Steps {
		mark := "no "
		if s.Matched {
			mark = "YES"
		}
		loc := ""
		if s.Line > 0 {
			loc = fmt.Sprintf(" (line %d)", s.Line)
		}
		why := s.Why
		if s.Error != "" {
			why = "error, counts as no match: " + s.Error
		}
		fmt.Fprintf(w, "  %s  %s%s: %s\n", mark, s.Rule, loc, why)
		if s.Matched {
			fmt.Fprintf(w, "       when: %s\n", s.When)
		}
	}
	o := found.Outcome
	if o.Rule == classify.DefaultRuleName {
		fmt.Fprintf(w, "  no rule matched: the default applies\n")
	}
	fmt.Fprintf(w, "confidence: %.2f%s\n", o.Confidence, confidenceNote(o, minConf))
	fmt.Fprintf(w, "=> class %s, action %s (rule %s)", o.Class, o.Action, o.Rule)
	if o.Note != "" {
		fmt.Fprintf(w, ": %s", o.Note)
	}
	fmt.Fprintln(w)
}

// confidenceNote says whether --class would select the decision.
func confidenceNote(o classify.Outcome, min float64) string {
	switch {
	case o.Class == classify.ClassUnknown:
		return " (unknown is always selectable)"
	case o.Confidence < min:
		return fmt.Sprintf(" — below --min-confidence %g: --class %s does not select it", min, o.Class)
	}
	return fmt.Sprintf(" — at or above --min-confidence %g", min)
}

// writeLogLines prints where failure context read from the consumer's
// logs came from and the log lines used (--logs).
func writeLogLines(w io.Writer, rec *record.Record) {
	if rec.Failure == nil || rec.Failure.Source == nil {
		return
	}
	src := rec.Failure.Source
	switch {
	case src.Note != "" && len(src.Lines) == 0:
		fmt.Fprintf(w, "logs: %s (searched %s)\n", src.Note, strings.Join(src.LogGroups, ", "))
		return
	case src.Note != "":
		fmt.Fprintf(w, "logs: %s; the lines that mention it:\n", src.Note)
	default:
		via := ""
		if src.RequestID != "" {
			via = fmt.Sprintf(", through Lambda request %s", src.RequestID)
		}
		fmt.Fprintf(w, "logs: %s, stream %s, at %s%s; lines used:\n", src.LogGroup, src.LogStream, src.Timestamp.UTC().Format(time.RFC3339Nano), via)
	}
	for _, l := range src.Lines {
		msg := strings.ReplaceAll(strings.TrimSpace(l.Message), "\n", "\n      ")
		fmt.Fprintf(w, "  %s %s  %s\n", l.Timestamp.UTC().Format("15:04:05.000"), l.LogStream, output.Truncate(msg, 400))
	}
}

// writeAnalysis prints what the decoders and the failure families found:
// the format, each piece of evidence (field -> text) and the family.
func writeAnalysis(w io.Writer, ex *classify.Explanation) {
	switch {
	case ex.Format != "" && ex.FormatTitle != "":
		fmt.Fprintf(w, "format: %s — %s\n", ex.Format, ex.FormatTitle)
	case ex.Format != "":
		fmt.Fprintf(w, "format: %s\n", ex.Format)
	default:
		fmt.Fprintf(w, "format: none recognised (a plain message)\n")
	}
	if p := ex.Payload; p != nil {
		declared := ""
		if p.Declared != "" {
			declared = fmt.Sprintf(" (content type declared: %s)", p.Declared)
		}
		fmt.Fprintf(w, "payload: %s — %s%s\n", p.Encoding, p.Description, declared)
	}
	v := ex.Verdict
	if ex.NoContext != "" || v == nil || len(v.Readings) == 0 {
		fmt.Fprintf(w, "evidence: none — %s\n", ex.NoContext)
		return
	}
	fmt.Fprintf(w, "evidence:\n")
	for _, r := range v.Readings {
		reading := "names no failure family"
		if r.Family != "" {
			strength := "strong"
			if !r.Strong {
				strength = "weak"
			}
			reading = fmt.Sprintf("%s/%s (%q, %s)", r.Family, r.Group, r.Signal, strength)
		}
		kind := r.Kind
		if r.Weak {
			kind += ", by its look"
		}
		fmt.Fprintf(w, "  %s [%s] → %q: %s\n", r.Field, kind, output.Truncate(r.Text, 100), reading)
	}
	hints := false
	for _, r := range v.Readings {
		hints = hints || r.Weak && r.Family != ""
	}
	switch {
	case v.Family == "" && hints:
		fmt.Fprintf(w, "family: none — only hints found by their look in the message's own data name one, and hints never decide\n")
	case v.Family == "":
		fmt.Fprintf(w, "family: none — no evidence names a transient, permanent, schema, business or configuration failure\n")
	case v.Family == classify.FamilyConflict:
		fmt.Fprintf(w, "family: conflict — transient (%s %q) and %s (%s %q) are both named specifically (confidence %.2f)\n",
			v.Decisive.Field, v.Decisive.Signal, v.Against.Family, v.Against.Field, v.Against.Signal, v.Confidence)
	default:
		root := ""
		if v.Decisive.Kind == record.EvidenceRootCause {
			root = ", the chain's root cause"
		}
		fmt.Fprintf(w, "family: %s, decided by %s (%q%s; confidence %.2f)\n", v.Family, v.Decisive.Field, v.Decisive.Signal, root, v.Confidence)
	}
}
