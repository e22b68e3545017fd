// Package findingtest checks, in a broker package's tests, that the audit
// rules the package declares (finding.Rule) are exactly the checks its code
// reports, so that 'dlqctl audit --help' can neither miss a check nor list
// one that no longer exists.
package findingtest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/finding"
)

// checkID matches the ways a package names a finding's check in its code:
// a Check field, the id passed to a finding constructor, or a Check…
// constant.
var checkID = regexp.MustCompile(`(?:Check:\s*|finding\([^,()]+,\s*|\bCheck\w*\s*=\s*)"([a-z0-9]+(?:-[a-z0-9]+)+)"`)

// Emitted lists the check ids named in the non-test Go files of dir.
func Emitted(t testing.TB, dir string) []string {
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
		for _, m := range checkID.FindAllSubmatch(src, -1) {
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
	emitted := Emitted(t, dir)
	if len(emitted) == 0 {
		t.Fatalf("no check ids found in %s: the pattern no longer matches how the code names them", dir)
	}
	for _, id := range emitted {
		if !declared[id] {
			t.Errorf("the code reports check %s, which the rules do not declare ('dlqctl audit --help' would not list it)", id)
		}
		delete(declared, id)
	}
	for id := range declared {
		t.Errorf("rule %s is declared but the code never reports it", id)
	}
}
