// Package findingtest checks, in a broker package's tests, that the audit
// rules (finding.Rule) and doctor checks (broker.DoctorCheckDoc) the
// package declares are exactly the checks its code reports, so that
// 'dlqctl audit --help' and 'dlqctl doctor --help' can neither miss a check
// nor list one that no longer exists.
package findingtest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/finding"
)

// checkID matches the ways a package names a finding's check in its code:
// a Check field, the id passed to a finding constructor, or a Check…
// constant.
var checkID = regexp.MustCompile(`(?:Check:\s*|finding\([^,()]+,\s*|\bCheck\w*\s*=\s*)"([a-z0-9]+(?:-[a-z0-9]+)+)"`)

// Emitted lists the check ids named in the non-test Go files of dir.
func Emitted(t testing.TB, dir string) []string { return named(t, dir, checkID) }

// named lists the first submatches of re in the non-test Go files of dir.
func named(t testing.TB, dir string, re *regexp.Regexp) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			seen[string(m[1])] = true
		}
	}
	var out []string
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Declared fails t unless rules name exactly the checks the code of dir
// reports, each once, with a severity and a summary.
func Declared(t *testing.T, dir string, rules []finding.Rule) {
	t.Helper()
	declared := map[string]bool{}
	for _, r := range rules {
		if declared[r.Check] {
			t.Errorf("rule %s is declared twice", r.Check)
		}
		declared[r.Check] = true
		if r.Severity.Rank() == 0 && r.Severity != finding.SevInfo || strings.TrimSpace(r.Summary) == "" {
			t.Errorf("rule %s: severity %q, summary %q; want a severity and a summary", r.Check, r.Severity, r.Summary)
		}
	}
	same(t, "audit", declared, Emitted(t, dir))
}

// DoctorDeclared fails t unless docs name exactly the doctor checks the
// code of dir names: its check-name constants, "BROKER what" (prefix
// "rabbitmq", "kafka").
func DoctorDeclared(t *testing.T, dir, prefix string, docs []broker.DoctorCheckDoc) {
	t.Helper()
	declared := map[string]bool{}
	for _, d := range docs {
		if declared[d.Name] || strings.TrimSpace(d.What) == "" {
			t.Errorf("doctor check %q: declared twice or without what it checks", d.Name)
		}
		declared[d.Name] = true
	}
	same(t, "doctor", declared, named(t, dir, regexp.MustCompile(`\bk?check\w*\s*=\s*"(`+regexp.QuoteMeta(prefix)+` [a-z -]+)"`)))
}

func same(t *testing.T, command string, declared map[string]bool, emitted []string) {
	t.Helper()
	if len(emitted) == 0 {
		t.Fatalf("no check names found: the pattern no longer matches how the code names them")
	}
	for _, id := range emitted {
		if !declared[id] {
			t.Errorf("the code reports check %q, which is not declared ('dlqctl %s --help' would not list it)", id, command)
		}
		delete(declared, id)
	}
	for id := range declared {
		t.Errorf("check %q is declared but the code never reports it", id)
	}
}
