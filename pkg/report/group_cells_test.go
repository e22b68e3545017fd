package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// Piped, the group table is tab-separated for other tools: a long key is
// printed whole (two keys that share their first 72 characters stay
// apart), its tabs and newlines flattened. On a terminal it is cut to fit.
func TestGroupKeysArePrintedWholeWhenPiped(t *testing.T) {
	prefix := "org.springframework.dao.DataIntegrityViolationException: could not execute statement; SQL [n/a]; constraint "
	rep := &GroupReport{By: []string{"error"}, Groups: []*inspect.Group{
		{Values: []string{prefix + "[orders_pkey]"}, Count: 2, Examples: []string{"m1"}},
		{Values: []string{prefix + "[orders_customer_fk]\tand more"}, Count: 1, Examples: []string{"m2"}},
	}}
	for _, tty := range []bool{false, true} {
		var out bytes.Buffer
		s := output.Test(nil, &out, &bytes.Buffer{}, tty)
		if err := WriteGroups(s, output.Table, rep, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		whole := strings.Contains(got, prefix+"[orders_pkey]") && strings.Contains(got, prefix+"[orders_customer_fk] and more")
		if whole == tty {
			t.Errorf("terminal %v: keys whole %v, want %v:\n%s", tty, whole, !tty, got)
		}
		if !tty {
			for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
				if f := strings.Split(l, "\t"); !strings.HasPrefix(f[0], "org.springframework") || len(f) < 3 {
					t.Errorf("piped row %q: the key's tab split it", l)
				}
			}
		}
	}
}
