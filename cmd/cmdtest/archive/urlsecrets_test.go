package archive

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// urlSecret is what every URL of TestURLFlagsNeverPrintTheirSecrets
// carries, as a password, a token or a signature.
const urlSecret = "s3cr3t-Zq9-never-print"

// withSecret returns base (a URL ending in "/", or a reference) carrying
// urlSecret in each of the places a URL carries one: the userinfo, and the
// query parameters password, X-Amz-Signature and token.
func withSecret(base string) map[string]string {
	scheme, rest, _ := strings.Cut(base, "://")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return map[string]string{
		"userinfo":        scheme + "://ops:" + urlSecret + "@" + rest,
		"password":        base + sep + "password=" + urlSecret,
		"X-Amz-Signature": base + sep + "X-Amz-Signature=" + urlSecret + "&X-Amz-Credential=AKIAEXAMPLE%2F20261204",
		"token":           base + sep + "token=" + urlSecret,
	}
}

// TestURLFlagsNeverPrintTheirSecrets: every flag and argument that takes a
// URL (endpoints, the management API, --to, --dlq, --from, --archive,
// manifests, references) — and the flags that do not but may be given one
// by mistake — is given a URL carrying a secret in its userinfo and in its
// query (?password=, ?X-Amz-Signature=, ?token=), on a command that fails
// and, where the URL can work, on one that succeeds: neither stdout nor
// stderr (table, JSON, -v) ever shows the secret.
func TestURLFlagsNeverPrintTheirSecrets(t *testing.T) {
	env := testenv.Require(t)
	rabbit := testenv.RequireRabbitMQ(t)
	dlq, _ := clitest.FillQueue(t, env, "urlsecret", 3)
	const closed = "http://127.0.0.1:1/"
	amqpVhost := rabbit.URL + "%2f/"
	missingRabbitQ := rabbit.QueueRef(testenv.UniqueName(t, "urlsecret-missing"))
	manifest := oldArchive + "/queue=fx-orders-dlq/dt=2026-12-02/run=20261202T010243Z-89abb2e2/"

	type outcome int
	const (
		fail outcome = iota
		ok
		anyOutcome
	)
	type tcase struct {
		flag string // the flag (or "arg MANIFEST", "env …") under test
		base string // the URL the secret is added to
		args func(u string) []string
		// want: ok (the command succeeds with the URL), fail, or anyOutcome
		// (doctor reports what it could not check, and may still exit 0).
		want outcome
	}
	cases := []tcase{
		{"endpoint-url", env.SQSEndpoint + "/", func(u string) []string { return []string{"sample", dlq, "-n", "2", "--endpoint-url", u} }, ok},
		{"endpoint-url", closed, func(u string) []string { return []string{"sample", dlq, "--endpoint-url", u} }, fail},
		{"sqs-endpoint-url", env.SQSEndpoint + "/", func(u string) []string { return []string{"sample", dlq, "-n", "2", "--sqs-endpoint-url", u} }, ok},
		{"sqs-endpoint-url", closed, func(u string) []string { return []string{"queues", "--sqs-endpoint-url", u} }, fail},
		{"s3-endpoint-url", closed, func(u string) []string {
			return []string{"archive", "verify", "s3://nobucket-urlsecret/p/run=1/", "--s3-endpoint-url", u}
		}, fail},
		{"s3-endpoint-url", closed, func(u string) []string {
			return []string{"sample", "--from", "s3://nobucket-urlsecret/p/", "--s3-endpoint-url", u}
		}, fail},
		{"amqp-management-url", rabbit.ManagementURL + "/", func(u string) []string { return []string{"queues", amqpVhost, "--amqp-management-url", u} }, ok},
		{"amqp-management-url", closed, func(u string) []string { return []string{"check", missingRabbitQ, "--amqp-management-url", u} }, fail},
		{"to", "http://127.0.0.1:1/000000000000/orders", func(u string) []string { return []string{"redrive", dlq, "--to", u, "--dry-run"} }, fail},
		{"to", "amqp://127.0.0.1:1/%2f/orders", func(u string) []string { return []string{"redrive", dlq, "--to", u, "--yes"} }, fail},
		{"to", "kafka://127.0.0.1:1/orders", func(u string) []string { return []string{"restore", manifest, "--to", u, "--dry-run"} }, fail},
		{"to", "s3://nobucket-urlsecret/prefix/", func(u string) []string { return []string{"archive", dlq, "--to", u, "--dry-run"} }, fail},
		{"to", "amqp://127.0.0.1:1/%2f/orders", func(u string) []string { return []string{"doctor", dlq, "--to", u} }, fail},
		{"dlq", "amqp://127.0.0.1:1/%2f/orders-dlq", func(u string) []string { return []string{"redrive", "resume", "--dlq", u} }, fail},
		{"dlq", "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq", func(u string) []string { return []string{"redrive", "resume", "--dlq", u} }, fail},
		{"from", "s3://nobucket-urlsecret/prefix/", func(u string) []string { return []string{"classify", "--from", u, "--summary"} }, fail},
		{"from", "https://example.com/dump/", func(u string) []string { return []string{"group", "--from", u, "--by", "source"} }, fail},
		{"archive", "s3://nobucket-urlsecret/prefix/", func(u string) []string { return []string{"doctor", dlq, "--archive", u} }, anyOutcome},
		{"archive", closed, func(u string) []string { return []string{"doctor", dlq, "--archive", u} }, fail},
		{"archive-to", "s3://nobucket-urlsecret/prefix/", func(u string) []string { return []string{"ui", dlq, "--archive-to", u} }, fail},
		{"archive-originals", "s3://nobucket-urlsecret/originals/", func(u string) []string {
			return []string{"redrive", dlq, "--transform", ".", "--archive-originals", u, "--yes"}
		}, fail},
		{"logs", closed, func(u string) []string { return []string{"sample", dlq, "--logs", u} }, fail},
		{"amqp-ca", closed, func(u string) []string { return []string{"sample", missingRabbitQ, "--amqp-ca", u} }, fail},
		{"kafka-ca", closed, func(u string) []string { return []string{"sample", "kafka://127.0.0.1:1/orders-dlt", "--kafka-ca", u} }, fail},
		{"kafka-user", closed, func(u string) []string {
			return []string{"sample", "kafka://127.0.0.1:1/orders-dlt", "--kafka-user", u}
		}, fail},
		{"rules", closed, func(u string) []string { return []string{"classify", dlq, "--rules", u} }, fail},
		{"arg MANIFEST", "s3://nobucket-urlsecret/prefix/run=1/", func(u string) []string { return []string{"archive", "verify", u} }, fail},
		{"arg MANIFEST", "s3://nobucket-urlsecret/prefix/run=1/", func(u string) []string { return []string{"restore", u, "--to", dlq, "--dry-run"} }, fail},
		{"arg QUEUE", "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq", func(u string) []string { return []string{"sample", u} }, fail},
		{"arg QUEUE", "kafka://127.0.0.1:1/orders-dlt", func(u string) []string { return []string{"check", u} }, fail},
		{"arg QUEUE", "amqp://127.0.0.1:1/%2f/orders-dlq", func(u string) []string { return []string{"watch", u, "--count", "1"} }, fail},
	}

	// Every flag of every command that takes a URL (its help names a URL
	// or a scheme) is in the table.
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.flag] = true
	}
	for _, name := range urlFlags(cmd.NewRootCmd(&cmd.Factory{})) {
		if !covered[name] {
			t.Errorf("--%s takes a URL but is not in this test's table", name)
		}
	}

	state := t.TempDir()
	for _, c := range cases {
		for form, u := range withSecret(c.base) {
			for _, format := range []string{"table", "json"} {
				args := append([]string{"-v", "--state-dir", state, "-o", format}, c.args(u)...)
				r := clitest.Run(t, env, "", args...)
				name := "--" + c.flag + " (" + form + ") " + strings.Join(c.args(u)[:1], " ") + " -o " + format
				if strings.Contains(r.Stdout+r.Stderr, urlSecret) || strings.Contains(r.Stdout+r.Stderr, "AKIAEXAMPLE") {
					t.Errorf("%s printed the secret:\nstdout %s\nstderr %s", name, clitest.Clip(r.Stdout), r.Stderr)
				}
				// The failing commands fail with their own sentence (not a
				// crash), the others succeed: the test ran what it says.
				if c.want == ok && form != "userinfo" && r.Code != 0 {
					t.Errorf("%s: exit %d, want 0 (stderr %q)", name, r.Code, r.Stderr)
				}
				if c.want == fail && (r.Code == 0 || r.Stderr == "" && r.Stdout == "") {
					t.Errorf("%s: exit %d with nothing said, want a failure", name, r.Code)
				}
			}
		}
	}

	// The management URL from the environment (--amqp-management-url's
	// default) is scrubbed too.
	for form, u := range withSecret(closed) {
		t.Setenv("DLQCTL_AMQP_MANAGEMENT_URL", u)
		r := clitest.Run(t, env, "", "-v", "check", missingRabbitQ)
		if strings.Contains(r.Stdout+r.Stderr, urlSecret) {
			t.Errorf("DLQCTL_AMQP_MANAGEMENT_URL (%s): check printed the secret: %s", form, r.Stderr)
		}
	}
}

// urlFlags lists the flags of every command whose help mentions a URL, a
// scheme or a reference (QUEUE, s3://, amqp://, kafka://).
func urlFlags(root *cobra.Command) []string {
	takesURL := regexp.MustCompile(`URL|://|queue name|CloudWatch Logs groups`)
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		visit := func(fl *pflag.Flag) {
			if !fl.Hidden && takesURL.MatchString(fl.Usage) && fl.Value.Type() != "bool" {
				seen[fl.Name] = true
			}
		}
		c.LocalFlags().VisitAll(visit)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
