package classify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Spec is a selection as the command line gives it: --filter, --rules,
// --class and --min-confidence.
type Spec struct {
	Filter  string
	Rules   string
	Classes []string
	// MinConfidence is the --min-confidence in effect.
	MinConfidence float64
	// Always classifies the messages (with the built-in rules unless
	// Rules is given) even without Classes.
	Always bool
}

// Compile builds the selector of spec: the rules file is loaded and
// validated, the filter compiled and every class checked against the
// rules. Errors are bad-input errors (exit 2). It never reads messages.
func Compile(spec Spec) (*Selector, error) {
	filter, err := inspect.CompileFilter(spec.Filter)
	if err != nil {
		return nil, err
	}
	var rules *Rules
	if strings.TrimSpace(spec.Rules) != "" {
		if rules, err = Load(spec.Rules); err != nil {
			return nil, err
		}
	} else if spec.Always {
		rules = Builtin()
	}
	sel, err := NewSelector(rules, spec.Classes, filter)
	if err != nil {
		return nil, err
	}
	if err := sel.SetMinConfidence(spec.MinConfidence); err != nil {
		return nil, errs.BadInputf("--min-confidence: %v", err)
	}
	return sel, nil
}

// ParseMinConfidence reads a --min-confidence: a number from 0 to 1.
func ParseMinConfidence(raw string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || x < 0 || x > 1 {
		return 0, fmt.Errorf("--min-confidence %s is outside 0..1: pass a number from 0 to 1 (e.g. 0.9)", strings.TrimSpace(raw))
	}
	return x, nil
}

// Keep is Select for a read-only command's records (on the decoding
// goroutines): the selection's refusal as an error value (the read stops
// with it), else whether rec is selected; an error on one message only
// leaves it out (it is counted).
func (s *Selector) Keep(rec *record.Record, parsed any) (bool, error) {
	ok, err := s.Select(rec, parsed)
	if IsRefusal(err) {
		return false, err
	}
	return ok, nil
}
