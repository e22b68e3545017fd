package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func parseSelection(t *testing.T, args ...string) *SelectionFlags {
	t.Helper()
	var s SelectionFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	s.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestSelectionFlagsBuildSelector(t *testing.T) {
	s := parseSelection(t, "--class", "transient,permanent", "--class", "business", "--filter", ".system.receive_count > 2")
	if !s.Active() {
		t.Fatal("flags given but not active")
	}
	sel, err := s.Selector()
	if err != nil {
		t.Fatal(err)
	}
	got := sel.Describe()
	if !strings.Contains(got, "classes transient,permanent,business (built-in rules)") || !strings.Contains(got, "filter .system.receive_count > 2") {
		t.Errorf("Describe = %q", got)
	}
	none := parseSelection(t)
	if none.Active() {
		t.Error("no flags but active")
	}
	sel, err = none.Selector()
	if err != nil || sel.Describe() != "all messages" {
		t.Errorf("no flags: %v %q", err, sel.Describe())
	}
}

func TestSelectionFlagsBadInput(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - name: a\n    when: 'true'\n    class: mine\n    action: archive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--filter", ".a =="}, "invalid expression"},
		{[]string{"--class", "nope"}, `unknown class "nope"`},
		{[]string{"--rules", rules, "--class", "transient"}, "rules.yaml assign: mine, unknown"},
		{[]string{"--rules", filepath.Join(dir, "missing.yaml")}, "cannot read rules file"},
	}
	for _, c := range cases {
		s := parseSelection(t, c.args...)
		_, err := s.Selector()
		if err == nil || errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v (code %d), want exit 2 mentioning %q", c.args, err, errs.Code(err), c.want)
		}
	}
	s := parseSelection(t, "--rules", rules, "--class", "mine")
	if _, err := s.Selector(); err != nil {
		t.Errorf("class from the rules file rejected: %v", err)
	}
}
