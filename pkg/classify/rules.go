// Package classify sorts dead-letter messages into failure classes with an
// ordered list of rules (first match wins) and decides what should happen to
// each: redrive, redrive to a recovery queue, archive, investigate or ignore.
//
// Rules come from a YAML file (see docs/rules.md) or from the built-in
// rules, which follow the failure taxonomy operators use. The Selector built
// from --rules/--class/--filter is shared by classify, redrive and archive.
package classify

import (
	"fmt"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Actions a rule can prescribe.
const (
	ActionRedrive           = "redrive"
	ActionRedriveToRecovery = "redrive-to-recovery"
	ActionArchive           = "archive"
	ActionInvestigate       = "investigate"
	ActionIgnore            = "ignore"
)

// Actions lists the valid actions in documentation order.
var Actions = []string{ActionRedrive, ActionRedriveToRecovery, ActionArchive, ActionInvestigate, ActionIgnore}

func validAction(a string) bool {
	for _, v := range Actions {
		if a == v {
			return true
		}
	}
	return false
}

// Rule is one classification rule.
type Rule struct {
	Name   string `json:"name"`
	When   string `json:"when"`
	Class  string `json:"class"`
	Action string `json:"action"`
	Note   string `json:"note,omitempty"`
	// Line is the rule's line in its rules file (0 for built-in rules).
	Line int `json:"line,omitempty"`
	// Builtin is true for the built-in rules (also when included from a file).
	Builtin bool `json:"builtin,omitempty"`

	m matcher
	// conf is how sure a match of this rule is (nil: 1, a rule's own
	// expression says exactly what its author wants).
	conf func(x *subject) float64
}

// confidence is how sure a match of r is for x.
func (r *Rule) confidence(x *subject) float64 {
	if r.conf == nil {
		return 1
	}
	return r.conf(x)
}

// DefaultConfidence is the confidence of the default outcome: no rule
// recognised the message, so no evidence supports its class.
const DefaultConfidence = 0.5

// matcher decides whether a rule applies; why explains a match (or, for an
// evaluation error, err says what went wrong).
type matcher interface {
	match(x *subject) (ok bool, why string, err error)
}

// subject is one message under classification. The jq input is built at
// most once, and only when an expression needs it.
type subject struct {
	rec    *record.Record
	parsed any
	in     map[string]any
	v      *Verdict
	// explaining: the reasons are shown (Explain), so matchers may spend
	// time on describing them; Classify only needs the answer.
	explaining bool
	// err is the first rule that raised an error on the message.
	err *EvalError
}

// verdictWhy explains v when the reasons are shown, else returns ""
// (Classify discards the reasons; building them cost as much as reading
// the evidence).
func (x *subject) verdictWhy(v *Verdict) string {
	if !x.explaining {
		return ""
	}
	return v.why()
}

func (x *subject) input() map[string]any {
	if x.in == nil {
		x.in = inspect.Input(x.rec, x.parsed)
	}
	return x.in
}

// setOutcome records a classification on the record (and on the jq input
// when it was already built, so later expressions see it).
func (x *subject) setOutcome(o Outcome) {
	x.rec.Class, x.rec.Action, x.rec.Rule, x.rec.Confidence = o.Class, o.Action, o.Rule, o.Confidence
	if x.in != nil {
		x.in["class"], x.in["action"], x.in["rule"], x.in["confidence"] = o.Class, o.Action, o.Rule, o.Confidence
	}
}

// exprMatcher is a rule whose `when` is a jq expression.
type exprMatcher struct{ e *inspect.Expr }

func (m exprMatcher) match(x *subject) (bool, string, error) {
	ok, err := m.e.Match(x.input())
	if err != nil {
		return false, "", err
	}
	if !x.explaining {
		return ok, "", nil
	}
	if ok {
		return true, fmt.Sprintf("`%s` is true", m.e.String()), nil
	}
	return false, fmt.Sprintf("`%s` is false", m.e.String()), nil
}

// Outcome is the result of classifying one message.
type Outcome struct {
	Class  string `json:"class"`
	Action string `json:"action"`
	// Rule is the name of the matching rule, or "default".
	Rule string `json:"rule"`
	Note string `json:"note,omitempty"`
	// Confidence is how sure the decision is, 0 to 1 (see
	// docs/triage.md "Confidence").
	Confidence float64 `json:"confidence"`
}

// DefaultRuleName is the Rule of an Outcome no rule matched.
const DefaultRuleName = "default"

// Rules is an ordered rule set: the first matching rule wins; Default
// applies when none does.
type Rules struct {
	// Source is the rules file, or "built-in rules".
	Source  string
	Rules   []*Rule
	Default Outcome
	// DefaultLine is the line of the default block (0 when not in a file).
	DefaultLine int
}

// Classify evaluates the rules for rec, sets rec.Class, rec.Action and
// rec.Rule, and returns the outcome. parsed is the parsed body (see
// inspect.Decode). Expressions failing at run time count as no match.
func (rs *Rules) Classify(rec *record.Record, parsed any) Outcome {
	x := &subject{rec: rec, parsed: parsed}
	return rs.classify(x)
}

func (rs *Rules) classify(x *subject) Outcome {
	for _, r := range rs.Rules {
		ok, _, err := r.m.match(x)
		if err != nil && x.err == nil {
			x.err = &EvalError{MessageID: x.rec.MessageID, What: rs.describeRule(r), Expr: r.When, Rule: true, Err: err}
		}
		if ok && err == nil {
			o := Outcome{Class: r.Class, Action: r.Action, Rule: r.Name, Note: r.Note, Confidence: r.confidence(x)}
			x.setOutcome(o)
			return o
		}
	}
	o := rs.Default
	o.Rule, o.Confidence = DefaultRuleName, DefaultConfidence
	x.setOutcome(o)
	return o
}

// describeRule names r in messages: rule "NAME" (FILE:LINE).
func (rs *Rules) describeRule(r *Rule) string {
	if r.Line > 0 {
		return fmt.Sprintf("rule %q (%s:%d)", r.Name, rs.Source, r.Line)
	}
	return fmt.Sprintf("rule %q (%s)", r.Name, rs.Source)
}

// Step is one rule evaluated while explaining a classification.
type Step struct {
	Rule    string `json:"rule"`
	When    string `json:"when"`
	Line    int    `json:"line,omitempty"`
	Builtin bool   `json:"builtin,omitempty"`
	Matched bool   `json:"matched"`
	// Why says why the rule matched or did not.
	Why string `json:"why,omitempty"`
	// Error is set when the expression failed for this message (counts as
	// no match).
	Error string `json:"error,omitempty"`
}

// Explanation is the trace of one classification.
type Explanation struct {
	Source string `json:"rules"`
	// Format is the DLQ format recognised (failure.format; "" for a plain
	// message), FormatTitle what that format is.
	Format      string `json:"format,omitempty"`
	FormatTitle string `json:"format_title,omitempty"`
	// Payload is what the body is: its payload_encoding and a description.
	Payload *inspect.PayloadInfo `json:"payload,omitempty"`
	// Verdict is what the failure evidence says, read by the built-in
	// failure families (also when a rules file decides).
	Verdict *Verdict `json:"verdict,omitempty"`
	// NoContext explains a message that carries no failure context.
	NoContext string  `json:"no_context,omitempty"`
	Steps     []Step  `json:"steps"`
	Outcome   Outcome `json:"outcome"`
}

// NoContextNote is what --explain says about a message without failure
// context.
const NoContextNote = "SQS recorded no reason: a message dead-lettered by a redrive policy carries no failure context (the reason is in the consumer's logs); only body evidence can classify it"

// logsSearched returns the source of a failure whose logs were searched
// and said nothing (--logs), or nil.
func logsSearched(rec *record.Record) *record.FailureSource {
	if rec.Failure == nil || rec.Failure.Source == nil || rec.Failure.Source.Note == "" {
		return nil
	}
	return rec.Failure.Source
}

// Explain classifies rec like Classify and returns every rule evaluated on
// the way, with the reason each matched or not.
func (rs *Rules) Explain(rec *record.Record, parsed any) *Explanation {
	x := &subject{rec: rec, parsed: parsed, explaining: true}
	ex := &Explanation{Source: rs.Source, Verdict: x.verdict()}
	p := inspect.DescribePayload(rec)
	ex.Payload = &p
	if f := rec.Failure; f != nil {
		ex.Format, ex.FormatTitle = f.Format, inspect.FormatTitle(f.Format)
	}
	if !rec.Failure.HasContext() {
		ex.NoContext = NoContextNote
		if src := logsSearched(rec); src != nil {
			ex.NoContext = fmt.Sprintf("%s (searched CloudWatch Logs %s): SQS recorded no reason and the consumer's logs give none; only body evidence can classify it", src.Note, strings.Join(src.LogGroups, ", "))
		}
	}
	for _, r := range rs.Rules {
		ok, why, err := r.m.match(x)
		st := Step{Rule: r.Name, When: r.When, Line: r.Line, Builtin: r.Builtin, Matched: ok && err == nil, Why: why}
		if err != nil {
			st.Error = err.Error()
		}
		ex.Steps = append(ex.Steps, st)
		if st.Matched {
			ex.Outcome = Outcome{Class: r.Class, Action: r.Action, Rule: r.Name, Note: r.Note, Confidence: r.confidence(x)}
			x.setOutcome(ex.Outcome)
			return ex
		}
	}
	ex.Outcome = rs.Default
	ex.Outcome.Rule, ex.Outcome.Confidence = DefaultRuleName, DefaultConfidence
	x.setOutcome(ex.Outcome)
	return ex
}

// Classes returns the classes the rules can assign (rules first, then the
// default), each once, in order.
func (rs *Rules) Classes() []string {
	var out []string
	seen := map[string]bool{}
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, r := range rs.Rules {
		add(r.Class)
	}
	add(rs.Default.Class)
	return out
}

// HasClass reports whether some rule (or the default) assigns class c.
func (rs *Rules) HasClass(c string) bool {
	for _, k := range rs.Classes() {
		if k == c {
			return true
		}
	}
	return false
}

// validName reports whether s is a usable rule or class name: letters,
// digits, '-', '_', '.', '/' and ':'.
func validName(s string) bool {
	if s == "" || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '-', r == '_', r == '.', r == '/', r == ':':
		default:
			return false
		}
	}
	return true
}
