package classify

import (
	"fmt"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Selector decides which messages a command works on: optionally classify
// each message with rules, keep only some classes, and keep only messages
// passing a filter expression (which sees .class, .action and .rule). It is
// what --rules, --class and --filter build for classify, redrive and
// archive. A nil *Selector matches everything.
type Selector struct {
	rules    *Rules
	classes  []string
	classSet map[string]bool
	filter   *inspect.Filter
	enrich   func(rec *record.Record)
	// errs counts the messages the filter or a rule failed on.
	errs    evalTally
	minConf float64
}

// NewSelector builds a selector. rules may be nil; when classes are given
// without rules the built-in rules are used. Every class must be one the
// rules can assign (a bad-input error names the valid ones otherwise).
func NewSelector(rules *Rules, classes []string, filter *inspect.Filter) (*Selector, error) {
	s := &Selector{rules: rules, filter: filter, minConf: DefaultMinConfidence}
	var cls []string
	for _, c := range classes {
		for _, part := range strings.Split(c, ",") {
			if part = strings.TrimSpace(part); part != "" {
				cls = append(cls, part)
			}
		}
	}
	if len(cls) > 0 {
		if s.rules == nil {
			s.rules = Builtin()
		}
		s.classSet = map[string]bool{}
		for _, c := range cls {
			if !s.rules.HasClass(c) {
				return nil, errs.BadInputf("unknown class %q for --class; the %s assign: %s", c, s.rules.Source, strings.Join(s.rules.Classes(), ", "))
			}
			if !s.classSet[c] {
				s.classSet[c] = true
				s.classes = append(s.classes, c)
			}
		}
	}
	return s, nil
}

// SetMinConfidence sets the confidence below which --class does not select
// a decision (default DefaultMinConfidence; unknown is always selectable:
// it moves nothing without a look). It is a bad-input error outside 0..1.
func (s *Selector) SetMinConfidence(c float64) error {
	if c < 0 || c > 1 || c != c {
		return errs.BadInputf("--min-confidence %v is outside 0..1; use e.g. 0.8 to select only decisions named by specific evidence", c)
	}
	if s != nil {
		s.minConf = c
	}
	return nil
}

// MinConfidence returns the selector's confidence threshold for --class.
func (s *Selector) MinConfidence() float64 {
	if s == nil {
		return 0
	}
	return s.minConf
}

// Rules returns the rules the selector classifies with (nil when it does
// not classify).
func (s *Selector) Rules() *Rules {
	if s == nil {
		return nil
	}
	return s.rules
}

// Classifies reports whether Match sets rec.Class/Action/Rule.
func (s *Selector) Classifies() bool { return s != nil && s.rules != nil }

// Select classifies rec (sets rec.Class/Action/Rule when rules are in use)
// and reports whether it passes --class and --filter. Select is safe for
// concurrent use (on different records).
//
// When the filter or a rule raises an error on rec (`.body | tonumber` on
// a text body), rec is not selected and err is its *EvalError; the
// message is counted (Errors). When the selection has failed on the first
// RefuseAfter messages with none evaluated cleanly, err is instead the
// refusal (a bad-input error, IsRefusal): the caller stops before
// anything moves. From then on no message is selected, so a refused run
// has selected nothing. A rule that fails falls through to the next rule,
// as before, so rec still carries a class.
func (s *Selector) Select(rec *record.Record, parsed any) (bool, error) {
	if s == nil {
		return true, nil
	}
	if s.enrich != nil {
		s.enrich(rec)
	}
	x := &subject{rec: rec, parsed: parsed}
	selected := true
	if s.rules != nil {
		s.rules.classify(x)
		if x.err != nil {
			return false, s.errs.failed(x.err)
		}
		// --class takes a decision only at or above --min-confidence
		// (unknown is always selectable).
		selected = s.classSet == nil || s.classSet[rec.Class] && (rec.Class == ClassUnknown || rec.Confidence >= s.minConf)
	}
	if selected && s.filter != nil {
		ok, err := s.filter.Match(x.input())
		if err != nil {
			return false, s.errs.failed(&EvalError{MessageID: rec.MessageID, What: fmt.Sprintf("--filter '%s'", s.filter.String()), Expr: s.filter.String(), Err: err})
		}
		selected = ok
	}
	if err := s.errs.clean(); err != nil {
		return false, err
	}
	return selected, nil
}

// Refusal returns the refusal (a bad-input error) when the selection
// failed on every message it evaluated — one or more, with none evaluated
// cleanly — and nil otherwise. Call it when a run ends: a run that read
// fewer than RefuseAfter messages is refused only then.
func (s *Selector) Refusal() error {
	if s == nil {
		return nil
	}
	return s.errs.refused()
}

// Errors returns the messages the filter or a rule failed on (nil when
// none).
func (s *Selector) Errors() *inspect.FilterErrors {
	if s == nil {
		return nil
	}
	return s.errs.summary()
}

// OnError sets a function told about the first VerboseErrors evaluation
// errors (-v prints them); it must be safe for concurrent use.
func (s *Selector) OnError(fn func(EvalError)) {
	if s != nil {
		s.errs.mu.Lock()
		s.errs.onError = fn
		s.errs.mu.Unlock()
	}
}

// Describe returns a one-line human description of the selection ("all
// messages", "class transient (built-in rules); filter ...") for plans and
// manifests.
func (s *Selector) Describe() string {
	if s == nil || (s.classSet == nil && s.filter == nil && s.rules == nil) {
		return "all messages"
	}
	var parts []string
	switch {
	case len(s.classes) > 0:
		label := "class"
		if len(s.classes) > 1 {
			label = "classes"
		}
		conf := ""
		if s.minConf != DefaultMinConfidence {
			conf = fmt.Sprintf(", confidence >= %g", s.minConf)
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s%s)", label, strings.Join(s.classes, ","), s.rules.Source, conf))
	case s.rules != nil:
		parts = append(parts, fmt.Sprintf("all classes (%s)", s.rules.Source))
	}
	if s.filter != nil {
		parts = append(parts, fmt.Sprintf("filter %s", s.filter.String()))
	}
	return strings.Join(parts, "; ")
}

// MatchesAll reports whether Match passes every record without looking at
// it (no rules, classes, filter or enrichment): a caller may then skip
// decoding records for it.
func (s *Selector) MatchesAll() bool {
	return s == nil || (s.rules == nil && s.classSet == nil && s.filter == nil && s.enrich == nil)
}

// Filters reports whether the selector has a --filter expression.
func (s *Selector) Filters() bool { return s != nil && s.filter != nil }

// SetEnrich sets a function that adds failure context to a record before
// Match classifies and filters it (--logs: failure context from the
// consumer's CloudWatch Logs). It must be safe for concurrent use.
func (s *Selector) SetEnrich(fn func(rec *record.Record)) {
	if s != nil {
		s.enrich = fn
	}
}
