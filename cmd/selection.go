package cmd

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// SelectionFlags are the message-selection flags shared by classify,
// redrive and archive: --rules FILE, --class C[,C] and --filter EXPR.
type SelectionFlags struct {
	Filter  string
	Rules   string
	Classes []string
}

// SelectionHelp explains the selection flags for long help texts.
const SelectionHelp = `Selecting messages: --class C[,C] keeps messages the rules put in those
classes (the built-in rules unless --rules FILE is given; see 'dlqctl
classify --help' and docs/rules.md); --filter EXPR keeps messages for which
the jq expression is true (it also sees .class, .action and .rule).`

// AddFlags registers --filter, --rules and --class on fs.
func (s *SelectionFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Filter, "filter", "", "jq expression over the message record; keep messages where it is true (see 'dlqctl filters')")
	fs.StringVar(&s.Rules, "rules", "", "classification rules file (YAML, see docs/rules.md); default: the built-in rules")
	fs.StringSliceVar(&s.Classes, "class", nil, "keep only messages classified as these classes (comma-separated)")
}

// Selector compiles the flags: the rules file is loaded and validated, the
// filter compiled and every class checked against the rules. Errors are
// bad-input errors (exit 2). It never reads messages.
func (s *SelectionFlags) Selector() (*classify.Selector, error) { return s.selector(false) }

// selector is Selector; with classifyAlways the messages are classified
// (built-in rules unless --rules) even without --class.
func (s *SelectionFlags) selector(classifyAlways bool) (*classify.Selector, error) {
	filter, err := inspect.CompileFilter(s.Filter)
	if err != nil {
		return nil, err
	}
	var rules *classify.Rules
	if strings.TrimSpace(s.Rules) != "" {
		if rules, err = classify.Load(s.Rules); err != nil {
			return nil, err
		}
	} else if classifyAlways {
		rules = classify.Builtin()
	}
	return classify.NewSelector(rules, s.Classes, filter)
}

// Active reports whether any selection flag was given.
func (s *SelectionFlags) Active() bool {
	return strings.TrimSpace(s.Filter) != "" || strings.TrimSpace(s.Rules) != "" || len(s.Classes) > 0
}
