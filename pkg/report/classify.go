package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ClassSummary is one class/action row of `classify --summary`.
type ClassSummary struct {
	Class  string `json:"class"`
	Action string `json:"action"`
	*inspect.Group
	// Rules counts the messages per matching rule.
	Rules map[string]int `json:"rules"`
	Note  string         `json:"note,omitempty"`
}

// RowNote is a summary row's note: the note of the rule that decided most
// of its messages (ties: the rule name first in order). A row is not
// labelled with the note of a rule that decided none of its messages.
func RowNote(counts map[string]int, notes map[string]string) string {
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

// ClassTally counts the messages of each class and action per rule that
// decided them, for the RULES column and the note of each row.
type ClassTally struct {
	byRule map[[2]string]map[string]int
}

// NewClassTally returns an empty tally.
func NewClassTally() *ClassTally {
	return &ClassTally{byRule: map[[2]string]map[string]int{}}
}

// Add counts a classified record.
func (c *ClassTally) Add(rec *record.Record) {
	k := [2]string{rec.Class, rec.Action}
	if c.byRule[k] == nil {
		c.byRule[k] = map[string]int{}
	}
	c.byRule[k][rec.Rule]++
}

// Classes are the summary rows of groups (grouped by class,action), each
// with its rule counts and the note of the rule that decided most of it.
func (c *ClassTally) Classes(groups []*inspect.Group, rules *classify.Rules) []*ClassSummary {
	notes := map[string]string{}
	for _, r := range rules.Rules {
		if _, ok := notes[r.Name]; !ok && r.Note != "" {
			notes[r.Name] = r.Note
		}
	}
	if _, ok := notes[classify.DefaultRuleName]; !ok {
		notes[classify.DefaultRuleName] = rules.Default.Note
	}
	out := []*ClassSummary{}
	for _, grp := range groups {
		cls, act := grp.Values[0], grp.Values[1]
		counts := c.byRule[[2]string{cls, act}]
		out = append(out, &ClassSummary{Class: cls, Action: act, Group: grp, Rules: counts, Note: RowNote(counts, notes)})
	}
	return out
}

// WriteClassifySummary prints `classify --summary` in format; ages and
// expiries count from now.
func WriteClassifySummary(s *output.IOStreams, format output.Format, rep *ClassifyReport, now time.Time) error {
	if done, err := WriteStructured(s, format, rep, rep.Classes); done {
		return err
	}
	if len(rep.Classes) == 0 {
		s.Infof("no messages")
		return nil
	}
	estimated := false
	for _, c := range rep.Classes {
		estimated = estimated || c.Estimate != nil
	}
	headers := append(append([]string{"CLASS", "ACTION"}, countColumns(estimated)...), "RULES", "EXAMPLES")
	t := output.NewTable(s, headers...)
	for _, c := range rep.Classes {
		row := append(append([]string{c.Class, c.Action}, countCells(c.Group, estimated, now)...), RuleCounts(c.Rules), strings.Join(c.Examples, " "))
		t.Row(row...)
	}
	return t.Render()
}

// WriteClassifyList prints the table of `classify` (one row per message);
// recs are already redacted.
func WriteClassifyList(s *output.IOStreams, recs []record.Record) error {
	t := output.NewTable(s, "ID", "CLASS", "ACTION", "RULE", "SOURCE", "EVENT", "ERROR")
	for _, r := range recs {
		t.Row(r.MessageID, r.Class, r.Action, r.Rule, record.ARNName(r.System.SourceQueueARN, "sqs"), EventCell(&r),
			s.Cell(ErrorCell(&r), 60))
	}
	return t.Render()
}

// RuleCounts renders {"a":2,"b":1} as "a:2 b:1", largest first.
func RuleCounts(m map[string]int) string {
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
