package classify

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func TestLoadValidRulesFile(t *testing.T) {
	rs, err := Load(filepath.Join("testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs.Rules {
		names = append(names, r.Name)
	}
	want := "card-declined healthchecks redrive-loop body-not-json schema-mismatch conflicting-signals transient-failure business-rejection permanent-failure configuration-error"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("rule order = %q, want %q", got, want)
	}
	if rs.Rules[0].Line != 5 || rs.Rules[2].Line != 14 {
		t.Errorf("lines = %d, %d; want 5 (first rule) and 14 (the include)", rs.Rules[0].Line, rs.Rules[2].Line)
	}
	if rs.Default.Class != "unsorted" || rs.Default.Action != ActionInvestigate {
		t.Errorf("default = %+v", rs.Default)
	}
	if got := strings.Join(rs.Classes(), ","); got != "business,noise,redrive-loop,permanent,schema-mismatch,unknown,transient,unsorted" {
		t.Errorf("classes = %s", got)
	}
	// builtin.event_versions [1, 2] makes version 3 a schema mismatch.
	rec, parsed := decodedRecord(`{"eventId":"e1","eventType":"OrderCreated","eventVersion":3}`, nil)
	if o := rs.Classify(rec, parsed); o.Class != ClassSchemaMismatch || o.Rule != RuleSchemaMismatch {
		t.Errorf("version 3 with event_versions [1,2]: %+v", o)
	}
	rec, parsed = decodedRecord(`{"eventId":"e1","eventType":"HealthCheck","eventVersion":1}`, nil)
	if o := rs.Classify(rec, parsed); o.Class != "noise" || o.Action != ActionIgnore || rec.Rule != "healthchecks" {
		t.Errorf("healthcheck: %+v (record rule %q)", o, rec.Rule)
	}
	rec, parsed = decodedRecord(`{"eventId":"e1","eventType":"OrderCreated","eventVersion":2}`, nil)
	if o := rs.Classify(rec, parsed); o.Class != "unsorted" || o.Rule != DefaultRuleName {
		t.Errorf("no rule matches: %+v", o)
	}
}

func TestInvalidRulesFilesNameFileLineAndReason(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"bad-action.yaml", []string{"bad-action.yaml:9:", `rule "typo"`, `unknown action "redrve"`, "redrive-to-recovery"}},
		{"bad-expr.yaml", []string{"bad-expr.yaml:5:", `rule "broken"`, "does not compile"}},
		{"duplicate.yaml", []string{"duplicate.yaml:6:", `duplicate rule name "timeouts"`, "line 2"}},
		{"bad-yaml.yaml", []string{"bad-yaml.yaml:4:", "not valid YAML"}},
		{"dup-builtin.yaml", []string{"dup-builtin.yaml:6:", `duplicate rule name "transient-failure"`}},
		{"missing.yaml", []string{"cannot read rules file", "missing.yaml"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", c.file))
			if err == nil {
				t.Fatal("accepted an invalid rules file")
			}
			if errs.Code(err) != errs.ExitUsage {
				t.Errorf("exit code %d, want 2", errs.Code(err))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]string{
		"":                                       "empty",
		"- a\n- b\n":                             "must be a mapping",
		"rules: []\n":                            "`rules` is empty",
		"default: {class: x, action: redrive}\n": "no `rules:` list",
		"rules:\n  - name: a\n    when: 'true'\n    class: x\n":                                    `rule "a" has no ` + "`action`",
		"rules:\n  - name: a\n    class: x\n    action: archive\n":                                 `rule "a" has no ` + "`when`",
		"rules:\n  - when: 'true'\n    class: x\n    action: archive\n":                            "rule without a name",
		"rules:\n  - name: a\n    when: 'true'\n    class: x\n    action: archive\n    acton: x\n": `unknown rule field "acton"`,
		"rules:\n  - name: default\n    when: 'true'\n    class: x\n    action: archive\n":         "reserved",
		"rules:\n  - include: builtin/nope\n":                                                      "builtin/transient-failure",
		"rules:\n  - include: builtin\ndefault: {class: x, action: drop}\n":                        `unknown action "drop"`,
		"rules:\n  - include: builtin\nbuiltin: {event_versions: []}\n":                            "`event_versions` is empty",
		"rules:\n  - include: builtin\nextra: 1\n":                                                 `unknown key "extra"`,
		"rules:\n  - name: a\n    when: 'true'\n    class: has space\n    action: archive\n":       "class \"has space\"",
	}
	for src, want := range cases {
		_, err := Parse([]byte(src), "r.yaml")
		if err == nil {
			t.Errorf("accepted %q", src)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "r.yaml") {
			t.Errorf("Parse(%q) = %q, want it to start with the file and mention %q", src, err, want)
		}
	}
}

func TestIncludeOneBuiltinRule(t *testing.T) {
	rs, err := Parse([]byte("rules:\n  - include: builtin/body-not-json\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Rules) != 1 || rs.Rules[0].Name != RuleBodyNotJSON || !rs.Rules[0].Builtin {
		t.Fatalf("rules = %+v", rs.Rules)
	}
	rec, parsed := decodedRecord(`{"eventType":"X","payload":{`, nil)
	if o := rs.Classify(rec, parsed); o.Class != ClassPermanent || o.Action != ActionArchive {
		t.Errorf("JSON cut short: %+v", o)
	}
	rec, parsed = decodedRecord(`{"eventType":"X","failure_reason":"timeout"}`, nil)
	if o := rs.Classify(rec, parsed); o.Class != ClassUnknown || o.Rule != DefaultRuleName {
		t.Errorf("transient rule not included, want default unknown: %+v", o)
	}
}

// TestSourcesExpect: a rules file's sources: says what a consumer reads;
// a body of another encoding is then evidence (body-not-json), and only
// then.
func TestSourcesExpect(t *testing.T) {
	rs, err := Parse([]byte(`rules:
  - include: builtin
sources:
  - queue: orders
    expects: json
  - queue: "arn:aws:sqs:eu-west-1:111122223333:legacy-*"
    expects: [csv, xml]
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		source, body string
		class, rule  string
	}{
		{"orders", `<Order id="o-1"/>`, ClassPermanent, RuleBodyNotJSON},
		{"orders", `ORDER|o-1|5|EUR`, ClassPermanent, RuleBodyNotJSON},
		{"orders", `{"eventType":"OrderPlaced"}`, ClassUnknown, DefaultRuleName},
		{"legacy-billing", `ORDER|o-1|5|EUR`, ClassUnknown, DefaultRuleName},
		{"legacy-billing", `<Order id="o-1"/>`, ClassUnknown, DefaultRuleName},
		{"legacy-billing", `just words here`, ClassPermanent, RuleBodyNotJSON},
		{"payments", `<Order id="o-1"/>`, ClassUnknown, DefaultRuleName},
	}
	for _, c := range cases {
		rec, parsed := decodedRecord(c.body, nil)
		rec.System.SourceQueueARN = "arn:aws:sqs:eu-west-1:111122223333:" + c.source
		rec.Queue = "arn:aws:sqs:eu-west-1:111122223333:all-dlq"
		o := rs.Classify(rec, parsed)
		if o.Class != c.class || o.Rule != c.rule {
			t.Errorf("%s %q: got %s by %s, want %s by %s", c.source, c.body, o.Class, o.Rule, c.class, c.rule)
		}
	}
	rec, parsed := decodedRecord(`<Order id="o-1"/>`, nil)
	rec.System.SourceQueueARN = "arn:aws:sqs:eu-west-1:111122223333:orders"
	ex := rs.Explain(rec, parsed)
	if ex.Payload == nil || ex.Payload.Encoding != "xml" {
		t.Fatalf("explain payload = %+v, want xml", ex.Payload)
	}
	if why := ex.Steps[1].Why; !strings.Contains(why, "expects json") || !strings.Contains(why, "XML") {
		t.Errorf("body-not-json why = %q, want it to say the body is XML and the consumer expects json", why)
	}

	for src, want := range map[string]string{
		"rules:\n  - include: builtin\nsources: orders\n":                                          "must be a list",
		"rules:\n  - include: builtin\nsources:\n  - queue: orders\n":                              "has no `expects`",
		"rules:\n  - include: builtin\nsources:\n  - expects: json\n":                              "has no `queue`",
		"rules:\n  - include: builtin\nsources:\n  - queue: orders\n    expects: yaml\n":           "not a payload encoding",
		"rules:\n  - include: builtin\nsources:\n  - queue: orders\n    expects: json\n    x: 1\n": "unknown sources field",
		"rules:\n  - include: builtin\nsources:\n  - queue: '[orders'\n    expects: json\n":        "not a valid glob",
	} {
		_, err := Parse([]byte(src), "r.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error mentioning %q", src, err, want)
		}
	}
}

// TestNotJSONExplained: a body that is not JSON, with no sources entry,
// is unknown, and --explain says what it is and that nothing says its
// consumer expects JSON.
func TestNotJSONExplained(t *testing.T) {
	rec, parsed := decodedRecord(`<Order id="o-1"><Total>5</Total></Order>`, nil)
	ex := Builtin().Explain(rec, parsed)
	if ex.Outcome.Class != ClassUnknown {
		t.Fatalf("class %s, want unknown", ex.Outcome.Class)
	}
	why := ex.Steps[1].Why
	if !strings.Contains(why, "XML document (root element <Order>)") || !strings.Contains(why, "nothing says its consumer expects JSON") {
		t.Errorf("why = %q", why)
	}
}
