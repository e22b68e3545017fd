package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/logs"
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

func TestLogsFlags(t *testing.T) {
	var l LogsFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	l.AddFlags(fs)
	if err := fs.Parse([]string{"--logs", "/aws/lambda/a, /ecs/b", "--logs", "/aws/lambda/a", "--logs-window", "2024-05-01T00:00:00Z.."}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(logs.SplitGroups(l.Groups), "|"); got != "/aws/lambda/a|/ecs/b" {
		t.Errorf("groups %q, want each group once, in order", got)
	}
	if err := l.Validate(); err != nil {
		t.Errorf("valid flags rejected: %v", err)
	}
	for _, bad := range []LogsFlags{
		{Groups: []string{"arn:aws:logs:us-east-1:1:log-group:x"}},
		{Groups: []string{"/x"}, Window: "last tuesday"},
		{Window: "6h"},
		{Refresh: true},
	} {
		err := bad.Validate()
		if err == nil || errs.Code(err) != errs.ExitUsage {
			t.Errorf("%+v: %v, want a bad-input error (exit 2)", bad, err)
		}
	}
	// Unset --logs leaves the selection's JSON (and so run fingerprints)
	// as it was before --logs existed.
	b, _ := json.Marshal(SelectionFlags{Classes: []string{"transient"}})
	if strings.Contains(string(b), "logs") {
		t.Errorf("selection JSON without --logs mentions logs: %s", b)
	}
}
