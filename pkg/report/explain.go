package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ExplainReport is the JSON output of `classify --explain`.
type ExplainReport struct {
	MessageID string `json:"message_id"`
	*classify.Explanation
}

// WriteExplanation prints the text of `classify --explain` for rec (the
// message screen of `dlqctl ui` shows the same); redactor masks the log
// lines shown (nil: --no-redact).
func WriteExplanation(w io.Writer, rec record.Record, found *classify.Explanation, minConf float64, redactor *inspect.Redactor) {
	fmt.Fprintf(w, "message %s", rec.MessageID)
	var ctxParts []string
	if s := record.ARNName(rec.System.SourceQueueARN, "sqs"); s != "" {
		ctxParts = append(ctxParts, "from "+s)
	}
	if e := EventCell(&rec); e != "" {
		ctxParts = append(ctxParts, e)
	}
	if e := ErrorCell(&rec); e != "" {
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
	fmt.Fprintf(w, "confidence: %.2f%s\n", o.Confidence, ConfidenceNote(o, minConf))
	fmt.Fprintf(w, "=> class %s, action %s (rule %s)", o.Class, o.Action, o.Rule)
	if o.Note != "" {
		fmt.Fprintf(w, ": %s", o.Note)
	}
	fmt.Fprintln(w)
}

// ConfidenceNote says whether --class would select the decision.
func ConfidenceNote(o classify.Outcome, min float64) string {
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
