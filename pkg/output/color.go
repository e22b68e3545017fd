package output

import (
	"os"
	"strings"
)

// Colour: on a terminal dlqctl colours what people scan for — classes and
// actions, PASS/FAIL verdicts, run and check statuses, guard trips, errors
// and warnings. It is off when the stream is not a terminal, when NO_COLOR
// is set to any non-empty value (https://no-color.org), when TERM=dumb, and with
// --no-color. Colour never changes the text: piped output, JSON and NDJSON
// are byte-for-byte what they are without it.

// Style is an ANSI SGR sequence.
type Style string

// Styles used by dlqctl.
const (
	Plain   Style = ""
	Red     Style = "31"
	Green   Style = "32"
	Yellow  Style = "33"
	Blue    Style = "34"
	Magenta Style = "35"
	Cyan    Style = "36"
	Dim     Style = "2"
	BoldRed Style = "1;31"
	BoldGrn Style = "1;32"
)

// colorAllowed is the environment's say: NO_COLOR unset and TERM not dumb.
func colorAllowed() bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// Paint wraps s in st when on is true.
func Paint(on bool, st Style, s string) string {
	if !on || st == Plain || s == "" {
		return s
	}
	return "\x1b[" + string(st) + "m" + s + "\x1b[0m"
}

// Paint colours s for standard output (when colour is on there).
func (s *IOStreams) Paint(st Style, text string) string { return Paint(s.Color, st, text) }

// PaintErr colours s for standard error (when colour is on there).
func (s *IOStreams) PaintErr(st Style, text string) string { return Paint(s.ErrColor, st, text) }

// ClassStyle is the colour of a failure class.
func ClassStyle(class string) Style {
	switch class {
	case "transient":
		return Green
	case "permanent", "redrive-loop":
		return Red
	case "schema-mismatch":
		return Magenta
	case "business":
		return Yellow
	case "unknown", "unclassified":
		return Dim
	}
	return Cyan // classes of a rules file
}

// ActionStyle is the colour of a rule's action.
func ActionStyle(action string) Style {
	switch action {
	case "redrive":
		return Green
	case "redrive-to-recovery":
		return Cyan
	case "archive":
		return Yellow
	case "investigate":
		return Magenta
	case "ignore":
		return Dim
	}
	return Plain
}

// StatusStyle is the colour of a run, check or part status, or of a
// verdict word.
func StatusStyle(status string) Style {
	word := strings.ToLower(strings.TrimSpace(status))
	if i := strings.IndexAny(word, ":( "); i > 0 {
		word = word[:i]
	}
	switch word {
	case "completed", "ok", "pass", "passed", "verified", "complete":
		return Green
	case "partial", "paused", "warn", "warning", "interrupted", "dry-run", "unknown":
		return Yellow
	case "failed", "fail", "guard-tripped", "canary-failed", "breach", "error", "tripped", "alert":
		return BoldRed
	case "running":
		return Cyan
	}
	return Plain
}

// SeverityStyle is the colour of an audit finding's severity (error, warn,
// info, in any case).
func SeverityStyle(sev string) Style {
	switch strings.ToLower(sev) {
	case "error":
		return BoldRed
	case "warn":
		return Yellow
	case "info":
		return Dim
	}
	return Plain
}

// cellStyle decides a table cell's colour from its column's header, or,
// in a two-column key/value table (empty headers), from the row's key.
func cellStyle(headers, row []string, col int) Style {
	if col < len(headers) && headers[col] != "" {
		switch headers[col] {
		case "CLASS":
			return ClassStyle(row[col])
		case "ACTION":
			return ActionStyle(row[col])
		case "STATUS", "VERDICT":
			return StatusStyle(row[col])
		case "SEVERITY":
			return SeverityStyle(row[col])
		}
		return Plain
	}
	if col != 1 || len(row) < 2 {
		return Plain
	}
	switch strings.TrimSpace(row[0]) {
	case "status", "canary", "verdict", "result":
		return StatusStyle(row[1])
	case "guard", "error", "failed":
		return BoldRed
	case "unknown", "pending", "warning":
		return Yellow
	}
	return Plain
}
