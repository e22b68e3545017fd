// Package output renders dlqctl results: tables on a terminal (tab-separated
// and headerless when piped), JSON, NDJSON, and progress on stderr.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Format is an output format.
type Format string

// Formats.
const (
	Table  Format = "table"
	JSON   Format = "json"
	NDJSON Format = "ndjson"
)

// ParseFormat validates an -o value.
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(s)) {
	case Table, "":
		return Table, nil
	case JSON:
		return JSON, nil
	case NDJSON:
		return NDJSON, nil
	}
	return "", errs.BadInputf("unknown output format %q; use -o table, -o json or -o ndjson", s)
}

// IOStreams are the program's standard streams and what they are attached to.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	OutTTY bool
	ErrTTY bool
	InTTY  bool
	// Color and ErrColor: colour is on for standard output / standard
	// error (a terminal, NO_COLOR unset, TERM not dumb, no --no-color).
	Color    bool
	ErrColor bool
}

// System returns streams over the process's stdin/stdout/stderr.
func System() *IOStreams {
	isTTY := func(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: isTTY(os.Stdout), ErrTTY: isTTY(os.Stderr), InTTY: isTTY(os.Stdin)}
	s.Color = s.OutTTY && colorAllowed()
	s.ErrColor = s.ErrTTY && colorAllowed()
	return s
}

// Test returns streams over buffers; tty sets all TTY flags (colour stays
// off; set Color/ErrColor to test it).
func Test(in io.Reader, out, errOut io.Writer, tty bool) *IOStreams {
	return &IOStreams{In: in, Out: out, ErrOut: errOut, OutTTY: tty, ErrTTY: tty, InTTY: tty}
}

// Warnf prints a warning line to stderr.
func (s *IOStreams) Warnf(format string, a ...any) {
	fmt.Fprintf(s.ErrOut, s.PaintErr(Yellow, "warning:")+" "+format+"\n", a...)
}

// Infof prints an informational line to stderr.
func (s *IOStreams) Infof(format string, a ...any) {
	fmt.Fprintf(s.ErrOut, format+"\n", a...)
}

// WriteJSON writes v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// NDJSONWriter writes one compact JSON value per line; safe for concurrent use.
type NDJSONWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewNDJSON returns an NDJSON writer on w.
func NewNDJSON(w io.Writer) *NDJSONWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &NDJSONWriter{enc: enc}
}

// Write writes one value.
func (n *NDJSONWriter) Write(v any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.enc.Encode(v)
}

// TablePrinter prints rows as an aligned table on a terminal, or as
// tab-separated lines without a header when output is piped.
type TablePrinter struct {
	s       *IOStreams
	headers []string
	rows    [][]string
}

// NewTable starts a table with headers.
func NewTable(s *IOStreams, headers ...string) *TablePrinter {
	return &TablePrinter{s: s, headers: headers}
}

// Row adds a row.
func (t *TablePrinter) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Render writes the table.
func (t *TablePrinter) Render() error {
	if !t.s.OutTTY {
		for _, r := range t.rows {
			clean := make([]string, len(r))
			for i, c := range r {
				clean[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c)
			}
			if _, err := fmt.Fprintln(t.s.Out, strings.Join(clean, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	tbl := tablewriter.NewTable(t.s.Out,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	tbl.Header(t.headers)
	for _, r := range t.rows {
		if t.s.Color {
			painted := make([]string, len(r))
			for i, c := range r {
				painted[i] = Paint(true, cellStyle(t.headers, r, i), c)
			}
			r = painted
		}
		if err := tbl.Append(r); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// Cell is a table cell of at most n runes on a terminal (Truncate); piped,
// where the table is tab-separated for other tools, the whole value with
// its whitespace flattened (a tab or newline inside it would break the
// columns), so values cut to the same prefix stay distinct.
func (s *IOStreams) Cell(v string, n int) string {
	if s.OutTTY {
		return Truncate(v, n)
	}
	return strings.Join(strings.Fields(v), " ")
}

// Truncate shortens s to n runes (with an ellipsis), flattening whitespace.
func Truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}
