package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Result is what a user sees from one dlqctl invocation.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs dlqctl in-process against the local stack (non-TTY streams)
// and checks its -o json/ndjson output against docs/schema.
// It sets the AWS_* variables of env (unless env is the zero Env) for the duration of the test, so tests
// using it must not call t.Parallel.
func Run(t testing.TB, env testenv.Env, stdin string, args ...string) Result {
	t.Helper()
	if env.SQSEndpoint != "" {
		SetStackEnv(t, env)
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := cmd.Run(ctx, output.Test(strings.NewReader(stdin), &out, &errOut, false), args)
	res := Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	// Every -o json / -o ndjson output the suite produces must follow
	// its schema in docs/schema (see schema.go).
	CheckOutputContract(t, args, res)
	return res
}

// SetStackEnv sets the AWS_* variables of env for the rest of the test.
func SetStackEnv(t testing.TB, env testenv.Env) {
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v)
		}
	}
}

// RepoPath joins elem to the repository's root (the directory holding
// go.mod), for tests that read the repository's docs, scripts or testdata
// from any package directory.
func RepoPath(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// BinCmd is the built dlqctl binary with args, in env's environment, for
// tests that need a process of its own (kill -9, SIGINT, several peers).
func BinCmd(t *testing.T, env testenv.Env, args ...string) *exec.Cmd {
	c := exec.Command(testenv.BuildBinary(t), args...)
	c.Env = env.Environ()
	return c
}

// IsolateAWS points the SDK at an empty AWS configuration in a temporary
// home (no credentials, no profiles, no SSO cache) and returns that home.
// SQS is pointed at a closed port: none of these tests may reach it.
func IsolateAWS(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1")
	return home
}

// SummaryOf parses `redrive -o json` output.
func SummaryOf(t *testing.T, r Result) cmd.RedriveSummary {
	t.Helper()
	var s cmd.RedriveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatalf("summary is not JSON (exit %d): %v\nstdout: %s\nstderr: %s", r.Code, err, r.Stdout, r.Stderr)
	}
	return s
}

// DecodeGroupReport parses `group -o json` output.
func DecodeGroupReport(t *testing.T, r Result) cmd.GroupReport {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.Code, r.Stderr)
	}
	var rep cmd.GroupReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("group -o json: %v\n%s", err, r.Stdout)
	}
	return rep
}

// SampleAll runs `sample REF -n N -o ndjson` (plus extra flags) and returns
// the records it printed.
func SampleAll(t *testing.T, env testenv.Env, ref string, n int, extra ...string) []record.Record {
	t.Helper()
	args := append([]string{"sample", ref, "-n", Itoa(n), "-o", "ndjson"}, extra...)
	res := Run(t, env, "", args...)
	if res.Code != 0 {
		t.Fatalf("sample exit %d: %s", res.Code, res.Stderr)
	}
	var recs []record.Record
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if line == "" {
			continue
		}
		var r record.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad ndjson line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// SampleArchive reads every record of an archive input with sample --from.
func SampleArchive(t *testing.T, env testenv.Env, from string) []record.Record {
	t.Helper()
	return SampleAll(t, env, "--from="+from, 100000, "--no-redact")
}

// Itoa formats n as sample's -n and the JSON documents write it.
func Itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// ExpectedClass is the class the built-in rules must give a seeded message:
// the seed's truth, except that every body that starts like JSON and does
// not parse is permanent (plain text is not evidence: issue 20).
func ExpectedClass(m seed.Seeded) string {
	if inspect.LooksLikeBrokenJSON(m.Body) {
		return classify.ClassPermanent
	}
	return string(m.Class)
}
