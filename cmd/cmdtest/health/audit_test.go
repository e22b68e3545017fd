package health

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// runCLITTY is clitest.Run with terminal streams.
func runCLITTY(t *testing.T, env testenv.Env, args ...string) clitest.Result {
	t.Helper()
	clitest.SetStackEnv(t, env)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := cmd.Run(ctx, output.Test(strings.NewReader(""), &out, &errOut, true), args)
	return clitest.Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

func TestAuditFlagsParseIntoOptions(t *testing.T) {
	var got *cmd.AuditOptions
	f := &cmd.Factory{IO: output.Test(nil, &bytes.Buffer{}, &bytes.Buffer{}, false)}
	c := cmd.NewCmdAudit(f, func(_ context.Context, o *cmd.AuditOptions) error { got = o; return nil })
	c.SetArgs([]string{"orders", "payments-dlq", "--investigation-window", "10d12h", "--fail-on", "warn", "--sample", "0"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.InvestigationWindow != 252*time.Hour || got.FailOn != health.SevWarn || got.Sample != 0 || len(got.Queues) != 2 {
		t.Fatalf("options = %+v", got)
	}

	for _, args := range [][]string{
		{"audit", "--fail-on", "fatal"},
		{"audit", "orders", "--prefix", "ord"},
		{"audit", "--investigation-window", "20d"},
		{"audit", "--investigation-window", "7x"},
		{"audit", "--sample", "-1"},
		{"audit", "--visibility", "1s"},
	} {
		res := clitest.Run(t, testenv.Env{}, "", args...)
		if res.Code != 2 || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 || !strings.HasPrefix(res.Stderr, "dlqctl: ") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, res.Code, res.Stderr)
		}
	}
}

func TestAuditSeededMisconfigurations(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	prefix := testenv.UniqueName(t, "aud")
	m, err := seed.Misconfigured(t.Context(), c, seed.MisconfigOptions{Prefix: prefix, Expiring: 3})
	if m != nil {
		t.Cleanup(func() { _ = m.DeleteQueues(context.Background(), c) })
	}
	if err != nil {
		t.Fatal(err)
	}

	t.Run("each mistake produces its finding and nothing else", func(t *testing.T) {
		res := clitest.Run(t, env, "", "audit", "--prefix", prefix, "--sample", "10", "--visibility", "5s", "-o", "json")
		if res.Code != 3 || !strings.Contains(res.Stderr, "audit failed") {
			t.Fatalf("exit %d, stderr %q; want 3", res.Code, res.Stderr)
		}
		var rep health.AuditReport
		if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
			t.Fatalf("json: %v\n%s", err, res.Stdout)
		}
		key := func(check, sev, q string) string { return sev + " " + check + " " + q }
		var want, got []string
		for _, e := range m.Expected() {
			want = append(want, key(e.Check, e.Severity, e.Queue))
		}
		byKey := map[string]health.Finding{}
		for _, f := range rep.Findings {
			k := key(f.Check, string(f.Severity), f.Queue)
			got = append(got, k)
			byKey[k] = f
			if f.Problem == "" || f.Why == "" || f.Fix.Text == "" || f.Fix.Queue == "" {
				t.Errorf("finding without problem, reason or fix: %+v", f)
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Fatalf("findings differ from the seeded mistakes\nwant:\n%s\ngot:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		short := byKey[key("dlq-retention-short", "error", prefix+"-short-dlq")]
		if short.Fix.Attribute != "MessageRetentionPeriod" || short.Fix.Value != "950400" || short.Fix.Terraform != "message_retention_seconds = 950400" {
			t.Errorf("retention fix: %+v", short.Fix)
		}
		exp := byKey[key("messages-expiring", "error", prefix+"-expiring-dlq")]
		if !exp.Sampled || !strings.Contains(exp.Problem, "3 of 3 sampled messages expire within 1d") || exp.Fix.Command != "dlqctl archive "+prefix+"-expiring-dlq" {
			t.Errorf("expiry finding: %+v", exp)
		}
		// The sample released everything it read.
		if vis, inflight := clitest.SettledDepth(t, c, urlOf(m, prefix+"-expiring-dlq")); vis != 3 || inflight != 0 {
			t.Errorf("after the audit the expiring DLQ has %d visible, %d in flight; want 3, 0", vis, inflight)
		}

		// Piped table: one tab-separated line per finding with the fix.
		tbl := clitest.Run(t, env, "", "audit", "--prefix", prefix, "--sample", "0")
		lines := strings.Split(strings.TrimSpace(tbl.Stdout), "\n")
		if tbl.Code != 3 || len(lines) != len(want)-1 { // no expiry finding with --sample 0
			t.Fatalf("table: exit %d, %d lines, want %d:\n%s", tbl.Code, len(lines), len(want)-1, tbl.Stdout)
		}
		if f := strings.Split(lines[0], "\t"); len(f) != 8 || f[0] != "error" {
			t.Errorf("first line is not an error with 8 fields: %q", lines[0])
		}
		if !strings.Contains(tbl.Stderr, "error(s)") {
			t.Errorf("no summary on stderr: %q", tbl.Stderr)
		}
	})

	t.Run("a clean setup produces none", func(t *testing.T) {
		args := []string{"audit", "--fail-on", "info", "--sample", "10", "--visibility", "5s"}
		for _, q := range m.Clean {
			args = append(args, q.Name)
		}
		res := clitest.Run(t, env, "", args...)
		if res.Code != 0 || res.Stdout != "" || !strings.Contains(res.Stderr, "audited 4 queue(s): no findings") {
			t.Fatalf("exit %d stdout %q stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		js := clitest.Run(t, env, "", append(args, "-o", "json")...)
		var rep health.AuditReport
		if err := json.Unmarshal([]byte(js.Stdout), &rep); err != nil || len(rep.Findings) != 0 || len(rep.Queues) != 4 {
			t.Fatalf("json %s (%v)", js.Stdout, err)
		}
	})

	t.Run("warnings fail only with --fail-on warn", func(t *testing.T) {
		// A named source brings in its DLQ and the DLQ's other sources:
		// only warnings and one info among them.
		res := clitest.Run(t, env, "", "audit", prefix+"-mrc-low", "--sample", "0")
		if res.Code != 0 || !strings.Contains(res.Stdout, "max-receive-low") || !strings.Contains(res.Stdout, prefix+"-vis-tiny") {
			t.Fatalf("exit %d stdout %q stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if strict := clitest.Run(t, env, "", "audit", prefix+"-mrc-low", "--sample", "0", "--fail-on", "warn"); strict.Code != 3 {
			t.Fatalf("--fail-on warn: exit %d, want 3", strict.Code)
		}
	})

	t.Run("terminal output shows each fix", func(t *testing.T) {
		res := runCLITTY(t, env, "audit", prefix+"-short-src", "--sample", "0")
		for _, want := range []string{
			"ERROR  " + prefix + "-short-dlq  dlq-retention-short  (" + prefix + "-short-src)",
			"fix: SetQueueAttributes MessageRetentionPeriod=950400 on " + prefix + "-short-dlq",
			"terraform: message_retention_seconds = 950400",
		} {
			if !strings.Contains(res.Stdout, want) {
				t.Errorf("missing %q in:\n%s", want, res.Stdout)
			}
		}
		if res.Code != 3 {
			t.Errorf("exit %d, want 3", res.Code)
		}
	})
}

func urlOf(m *seed.Misconfig, name string) string {
	for _, q := range m.Queues {
		if q.Name == name {
			return q.URL
		}
	}
	return ""
}
