package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestClassifySeededIncidentWithBuiltinRules(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	byID := truth.ByMessageID()
	for _, q := range []seed.Queue{truth.DLQ, truth.FIFODLQ} {
		r := clitest.Run(t, env, "", "classify", q.Name, "--all", "-o", "ndjson")
		if r.Code != 0 {
			t.Fatalf("%s: exit %d: %s", q.Name, r.Code, r.Stderr)
		}
		recs := readNDJSONRecords(t, r.Stdout)
		if len(recs) != len(truth.InQueue(q.Name)) {
			t.Fatalf("%s: %d records, want %d", q.Name, len(recs), len(truth.InQueue(q.Name)))
		}
		for _, rec := range recs {
			id, _ := rec["message_id"].(string)
			m, ok := byID[id]
			if !ok {
				t.Fatalf("unknown message %s", id)
			}
			want := clitest.ExpectedClass(m)
			if rec["class"] != want {
				t.Errorf("%s %s (%s %q): class %v by rule %v, want %s", q.Name, m.Kind, m.FailureType, m.FailureReason, rec["class"], rec["rule"], want)
			}
			if rec["action"] == nil || rec["rule"] == nil {
				t.Errorf("record %s lacks action or rule", id)
			}
			// Records are printed with secrets masked.
			for _, s := range m.Secrets {
				if strings.Contains(rec["body"].(string), s) {
					t.Errorf("secret %q printed unmasked", s)
				}
			}
		}
		assertUntouched(t, env.SQS(t), q.URL, len(truth.InQueue(q.Name)))
	}
	// The headline cases of the issue, spelled out.
	r := clitest.Run(t, env, "", "classify", truth.DLQ.Name, "--all", "-o", "json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	classes := map[string]map[string]bool{}
	for _, rec := range recs {
		m := byID[rec["message_id"].(string)]
		key := string(m.Kind)
		if m.FailureType == "DatabaseTimeout" && m.Kind == seed.KindEnriched {
			key = "enriched-db-timeout"
		}
		if m.EventVersion == 9 {
			key = "unsupported-version"
		}
		if classes[key] == nil {
			classes[key] = map[string]bool{}
		}
		classes[key][rec["class"].(string)+"/"+rec["action"].(string)] = true
	}
	for key, want := range map[string]string{
		"malformed": "permanent/archive",
		// Text is not evidence of a bad message (issue 20: it was
		// permanent/archive).
		"plaintext":           "unknown/investigate",
		"enriched-db-timeout": "transient/redrive",
		"unsupported-version": "schema-mismatch/redrive-to-recovery",
	} {
		if len(classes[key]) != 1 || !classes[key][want] {
			t.Errorf("%s messages classified %v, want all %s", key, classes[key], want)
		}
	}
}

func TestClassifySummaryCountsPerClass(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	r := clitest.Run(t, env, "", "classify", truth.DLQ.Name, "--all", "--summary", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var rep cmd.ClassifyReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		want[clitest.ExpectedClass(m)]++
	}
	got := map[string]int{}
	total := 0
	for _, c := range rep.Classes {
		got[c.Class] = c.Count
		total += c.Count
		ruleTotal := 0
		for _, n := range c.Rules {
			ruleTotal += n
		}
		if ruleTotal != c.Count || len(c.Examples) == 0 || c.Note == "" {
			t.Errorf("class %s: rules %v, examples %v, note %q", c.Class, c.Rules, c.Examples, c.Note)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("class %s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if total != len(truth.InQueue(truth.DLQ.Name)) || rep.Rules != "built-in rules" || !rep.Complete {
		t.Errorf("summary total %d, rules %q, complete %v", total, rep.Rules, rep.Complete)
	}
}

func TestClassifyExplain(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	var timeout seed.Seeded
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		if m.FailureType == "DatabaseTimeout" && m.Kind == seed.KindEnriched {
			timeout = m
			break
		}
	}
	r := clitest.Run(t, env, "", "classify", truth.DLQ.Name, "--explain", timeout.MessageID)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{
		"message " + timeout.MessageID,
		"format: enriched", `body.failure_type [type] → "DatabaseTimeout": transient/timeout`,
		"no   redrive-loop", "no   broker-capacity", "no   body-not-json", "no   schema-mismatch: the failure context names a transient failure first",
		"no   conflicting-signals",
		"YES  transient-failure: body.failure_type \"DatabaseTimeout\" names a transient failure",
		"=> class transient, action redrive (rule transient-failure)",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("explain output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "business-rejection") {
		t.Errorf("rules after the match were shown as evaluated:\n%s", r.Stdout)
	}
	j := clitest.Run(t, env, "", "classify", truth.DLQ.Name, "--explain", timeout.MessageID, "-o", "json")
	var rep cmd.ExplainReport
	if err := json.Unmarshal([]byte(j.Stdout), &rep); err != nil || rep.Outcome.Class != classify.ClassTransient || len(rep.Steps) != 6 || rep.Format != "enriched" {
		t.Errorf("explain -o json: %v %+v", err, rep)
	}
	missing := clitest.Run(t, env, "", "classify", truth.DLQ.Name, "--explain", "no-such-id")
	if missing.Code != errs.ExitUsage || !strings.Contains(missing.Stderr, "no-such-id is not among the") {
		t.Errorf("unknown id: exit %d, stderr %q", missing.Code, missing.Stderr)
	}
	assertUntouched(t, env.SQS(t), truth.DLQ.URL, len(truth.InQueue(truth.DLQ.Name)))
}

func TestClassifyWithRulesFileAndSelection(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(`rules:
  - name: payments-business
    when: '.system.source_queue == "`+truth.Payments.Name+`" and .failure.type == "BusinessRuleViolation"'
    class: payments-business
    action: ignore
    note: payments team replays these by hand
  - include: builtin
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, env, "", "classify", truth.DLQ.Name, "--all", "--rules", rules, "--class", "payments-business,transient",
		"--filter", `.class != "transient" or (.envelope.event_type == "PaymentCaptured")`, "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	want := 0
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		switch {
		case m.SourceName == truth.Payments.Name && m.FailureType == "BusinessRuleViolation":
			want++
		case m.Class == seed.ClassTransient && m.EventType == "PaymentCaptured":
			want++
		}
	}
	recs := readNDJSONRecords(t, r.Stdout)
	if len(recs) != want {
		t.Fatalf("%d records selected, want %d", len(recs), want)
	}
	for _, rec := range recs {
		if rec["class"] == "payments-business" && rec["action"] != "ignore" {
			t.Errorf("record %v", rec)
		}
	}
	if !strings.Contains(r.Stderr, "matched classes payments-business,transient ("+rules+"); filter") {
		t.Errorf("stderr does not describe the selection: %q", r.Stderr)
	}
}

func TestClassifyInvalidRulesRejectedBeforeReading(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string][]string{
		write("action.yaml", "rules:\n  - name: a\n    when: 'true'\n    class: x\n    action: replay\n"):                                 {"action.yaml:5:", `unknown action "replay"`},
		write("expr.yaml", "rules:\n  - name: a\n    when: '.failure.reason | test('\n    class: x\n    action: archive\n"):               {"expr.yaml:3:", "does not compile"},
		write("dup.yaml", "rules:\n  - include: builtin\n  - name: body-not-json\n    when: 'true'\n    class: x\n    action: archive\n"): {"dup.yaml:3:", "duplicate rule name"},
		write("yaml.yaml", "rules:\n  - name: [a\n"): {"yaml.yaml:", "not valid YAML"},
	}
	for path, wants := range cases {
		// A queue that does not exist: the rules error must come first.
		r := clitest.Run(t, env, "", "classify", truth.Prefix+"-no-such-queue", "--rules", path)
		if r.Code != errs.ExitUsage || r.Stdout != "" {
			t.Errorf("%s: exit %d, stdout %q", path, r.Code, r.Stdout)
		}
		for _, w := range wants {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", filepath.Base(path), r.Stderr, w)
			}
		}
		if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("more than one line on stderr: %q", r.Stderr)
		}
	}
}

func TestClassifyFlagParsing(t *testing.T) {
	var got *cmd.ClassifyOptions
	f := &cmd.Factory{IO: output.Test(nil, &strings.Builder{}, &strings.Builder{}, false)}
	c := cmd.NewCmdClassify(f, func(_ context.Context, o *cmd.ClassifyOptions) error { got = o; return nil })
	c.SetArgs([]string{"dlq", "--rules", "r.yaml", "--class", "a,b", "--filter", ".x", "--summary", "--sample", "50", "--visibility", "1m"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Queue != "dlq" || got.Selection.Rules != "r.yaml" || strings.Join(got.Selection.Classes, "|") != "a|b" ||
		got.Selection.Filter != ".x" || !got.Summary || got.Read.Sample != 50 || got.Read.Visibility != time.Minute || got.Read.All {
		t.Errorf("options %+v", got)
	}
	c = cmd.NewCmdClassify(f, func(context.Context, *cmd.ClassifyOptions) error { return nil })
	c.SetArgs([]string{"dlq", "--summary", "--explain", "x"})
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.Execute(); err == nil {
		t.Error("--summary with --explain accepted")
	}
}

// TestClassifyMinConfidence: every classified record carries its
// confidence; --class transient takes a decision named by a chain's root
// cause and leaves one named by a generic word alone (below the default
// 0.6) until --min-confidence lowers the bar; --explain shows the root
// cause that decided and the confidence; a threshold outside 0..1 is bad
// input, rejected before anything is read.
func TestClassifyMinConfidence(t *testing.T) {
	recs := []record.Record{
		{MessageID: "weak", Body: `{"orderId":"o-1","failure_reason":"timeout"}`},
		{MessageID: "root", Body: `{"orderId":"o-2","error":"TypeError: fetch failed\n    at node:internal/deps/undici/undici:13185:13 {\n  [cause]: ConnectTimeoutError: Connect Timeout Error (attempted address: psp.example:443, timeout: 10000ms)\n}"}`},
		{MessageID: "grpc", Body: `{"orderId":"o-3","error":"rpc error: code = ResourceExhausted desc = grpc: received message larger than max (5242880 vs. 4194304)"}`},
	}
	var b strings.Builder
	for _, r := range recs {
		line, err := inspect.MarshalRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), "in.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	classes := func(args ...string) map[string]string {
		t.Helper()
		r := clitest.Run(t, testenv.Env{}, "", append([]string{"classify", "--from", file, "-o", "ndjson"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
		}
		out := map[string]string{}
		for _, rec := range readNDJSONRecords(t, r.Stdout) {
			c, ok := rec["confidence"].(float64)
			if !ok || c <= 0 || c > 1 {
				t.Errorf("%v: %v has confidence %v", args, rec["message_id"], rec["confidence"])
			}
			out[rec["message_id"].(string)] = fmt.Sprintf("%v %.2f", rec["class"], c)
		}
		return out
	}
	all := classes()
	if all["weak"] != "transient 0.55" || all["root"] != "transient 0.85" || all["grpc"] != "permanent 0.85" {
		t.Errorf("classes and confidences: %v", all)
	}
	if got := classes("--class", "transient"); len(got) != 1 || got["root"] == "" {
		t.Errorf("--class transient at the default threshold selected %v, want only the root-cause decision", got)
	}
	if got := classes("--class", "transient", "--min-confidence", "0.5"); len(got) != 2 {
		t.Errorf("--min-confidence 0.5 selected %v, want both transient decisions", got)
	}
	ex := clitest.Run(t, testenv.Env{}, "", "classify", "--from", file, "--explain", "grpc")
	for _, want := range []string{"[root_cause]", "the chain's root cause", "confidence: 0.85", "=> class permanent, action archive (rule permanent-failure)"} {
		if !strings.Contains(ex.Stdout, want) {
			t.Errorf("--explain lacks %q:\n%s", want, ex.Stdout)
		}
	}
	bad := clitest.Run(t, testenv.Env{}, "", "classify", "--from", file, "--class", "transient", "--min-confidence", "1.5")
	if bad.Code != 2 || !strings.Contains(bad.Stderr, "--min-confidence 1.5 is outside 0..1") || bad.Stdout != "" {
		t.Errorf("--min-confidence 1.5: exit %d, stdout %q, stderr %q", bad.Code, bad.Stdout, bad.Stderr)
	}
}
