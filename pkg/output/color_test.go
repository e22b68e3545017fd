package output

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableColoursWhatPeopleScanFor: on a colour terminal the class,
// action and status cells are coloured and the columns still line up (the
// escape sequences take no width); piped, nothing is coloured.
func TestTableColoursWhatPeopleScanFor(t *testing.T) {
	render := func(color bool, tty bool) string {
		var out bytes.Buffer
		s := Test(nil, &out, &out, tty)
		s.Color = color
		tb := NewTable(s, "CLASS", "ACTION", "COUNT")
		tb.Row("transient", "redrive", "12")
		tb.Row("schema-mismatch", "redrive-to-recovery", "3")
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	plain, colored := render(false, true), render(true, true)
	if strings.Contains(plain, "\x1b[") {
		t.Fatalf("colour off but escapes written:\n%q", plain)
	}
	if !strings.Contains(colored, "\x1b[32mtransient\x1b[0m") || !strings.Contains(colored, "\x1b[35mschema-mismatch\x1b[0m") {
		t.Fatalf("class cells not coloured:\n%q", colored)
	}
	if stripANSI(colored) != plain {
		t.Fatalf("colour changed the layout:\nplain:\n%s\ncoloured (stripped):\n%s", plain, stripANSI(colored))
	}
	if piped := render(true, false); strings.Contains(piped, "\x1b[") {
		t.Fatalf("piped output coloured:\n%q", piped)
	}
}

// TestKeyValueSummaryColoursVerdicts: a run summary's status, canary
// verdict, guard and error rows are coloured; other rows are not.
func TestKeyValueSummaryColoursVerdicts(t *testing.T) {
	var out bytes.Buffer
	s := Test(nil, &out, &out, true)
	s.Color = true
	tb := NewTable(s, "", "")
	tb.Row("status", "guard-tripped")
	tb.Row("moved", "20 from a to b")
	tb.Row("canary", "PASS: 3 moved, none came back")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"\x1b[1;31mguard-tripped\x1b[0m", "\x1b[32mPASS: 3 moved, none came back\x1b[0m"} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %q in\n%q", want, got)
		}
	}
	if strings.Contains(got, "\x1b[0m20 from") || strings.Contains(got, "m20 from") {
		t.Fatalf("a plain row was coloured:\n%q", got)
	}
}

func TestWarningPrefixColouredOnlyOnAColourTerminal(t *testing.T) {
	var errOut bytes.Buffer
	s := Test(nil, &errOut, &errOut, true)
	s.Warnf("x %d", 1)
	s.ErrColor = true
	s.Warnf("y")
	if got := errOut.String(); got != "warning: x 1\n\x1b[33mwarning:\x1b[0m y\n" {
		t.Fatalf("got %q", got)
	}
}

func TestNoColorEnvironment(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("NO_COLOR", "")
	if !colorAllowed() {
		t.Fatal("an empty NO_COLOR must not turn colour off (no-color.org)")
	}
	t.Setenv("NO_COLOR", "1")
	if colorAllowed() {
		t.Fatal("NO_COLOR=1 must turn colour off")
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestDumbTerminalHasNoColour(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if colorAllowed() {
		t.Fatal("TERM=dumb must turn colour off")
	}
}
