package finding

import (
	"strings"
)

// Rule is one audit rule as the broker package that checks it declares
// it: its stable id (Finding.Check), the severity it reports (the most
// severe, for a rule that reports two) and what it finds, in one line.
// 'dlqctl audit --help' lists each broker's rules from these tables, so the
// help names exactly the checks the code makes.
type Rule struct {
	Severity Severity
	Check    string
	Summary  string
}

// RuleTable renders rules for a command's help: one rule a line, severity
// and id in aligned columns, a summary longer than width wrapped under its
// own start.
func RuleTable(rules []Rule, width int) string {
	idw := 0
	for _, r := range rules {
		idw = max(idw, len(r.Check))
	}
	var b strings.Builder
	indent := strings.Repeat(" ", 2+5+2+idw+2)
	for i, r := range rules {
		if i > 0 {
			b.WriteByte('\n')
		}
		line := "  " + pad(string(r.Severity), 5) + "  " + pad(r.Check, idw) + "  "
		col := len(line)
		for j, w := range strings.Fields(r.Summary) {
			if j > 0 && col+1+len(w) > width {
				line += "\n" + indent
				col = len(indent)
			} else if j > 0 {
				line += " "
				col++
			}
			line += w
			col += len(w)
		}
		b.WriteString(line)
	}
	return b.String()
}

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
