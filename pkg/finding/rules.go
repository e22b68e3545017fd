package finding

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
