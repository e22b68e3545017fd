package classify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestCompile(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - name: a\n    when: 'true'\n    class: mine\n    action: archive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Filter: ".a =="}, "invalid expression"},
		{Spec{Classes: []string{"nope"}}, `unknown class "nope"`},
		{Spec{Rules: rules, Classes: []string{"transient"}}, "rules.yaml assign: mine, unknown"},
		{Spec{Rules: filepath.Join(dir, "missing.yaml")}, "cannot read rules file"},
		{Spec{MinConfidence: 2}, "--min-confidence: "},
	} {
		_, err := Compile(c.spec)
		if err == nil || errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v (exit %d), want exit 2 mentioning %q", c.spec, err, errs.Code(err), c.want)
		}
	}
	for spec, want := range map[*Spec]string{
		{}:             "all messages",
		{Always: true}: "all classes (built-in rules)",
		{Rules: rules, Classes: []string{"mine"}, MinConfidence: DefaultMinConfidence}: "class mine (",
		{Classes: []string{"transient"}, Filter: ".system.receive_count > 2"}:          "filter .system.receive_count > 2",
	} {
		sel, err := Compile(*spec)
		if err != nil {
			t.Errorf("%+v: %v", *spec, err)
			continue
		}
		if got := sel.Describe(); !strings.Contains(got, want) {
			t.Errorf("%+v: Describe %q, want it to contain %q", *spec, got, want)
		}
	}
}

func TestParseMinConfidence(t *testing.T) {
	if x, err := ParseMinConfidence(" 0.9 "); err != nil || x != 0.9 {
		t.Errorf("0.9: %v %v", x, err)
	}
	for _, bad := range []string{"2", "-0.1", "high"} {
		if _, err := ParseMinConfidence(bad); err == nil || err.Error() != "--min-confidence "+bad+" is outside 0..1: pass a number from 0 to 1 (e.g. 0.9)" {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestKeepStopsOnlyOnTheRefusal: a filter error on one message leaves it
// out and the read goes on; once the selection has failed on the first
// RefuseAfter messages, Keep returns the refusal (exit 2).
func TestKeepStopsOnlyOnTheRefusal(t *testing.T) {
	sel, err := Compile(Spec{Filter: ".body | tonumber > 1"})
	if err != nil {
		t.Fatal(err)
	}
	num := &record.Record{MessageID: "n", Body: "5"}
	if ok, err := sel.Keep(num, nil); !ok || err != nil {
		t.Fatalf("a number body: %v %v", ok, err)
	}
	if ok, err := sel.Keep(&record.Record{MessageID: "t", Body: "text"}, nil); ok || err != nil {
		t.Errorf("one text body after a clean one: kept %v, err %v; want left out, no error", ok, err)
	}
	all, _ := Compile(Spec{Filter: ".body | tonumber > 1"})
	var last error
	for i := 0; i < RefuseAfter && last == nil; i++ {
		_, last = all.Keep(&record.Record{MessageID: "t", Body: "text"}, nil)
	}
	if !IsRefusal(last) {
		t.Errorf("after %d failures: %v, want the refusal", RefuseAfter, last)
	}
	var none *Selector
	if ok, err := none.Keep(num, nil); !ok || err != nil {
		t.Errorf("no selection: %v %v", ok, err)
	}
}
