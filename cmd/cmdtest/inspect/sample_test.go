package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	sqsbroker "github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestSampleIsNonDestructiveAndDecodesEveryKind(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	c := env.SQS(t)
	want := truth.InQueue(truth.DLQ.Name)
	vis0, _ := clitest.QueueDepth(t, c, truth.DLQ.URL)
	if vis0 != len(want) {
		t.Fatalf("DLQ holds %d, seeded %d", vis0, len(want))
	}

	recs := clitest.SampleAll(t, env, truth.DLQ.Name, len(want)+50, "--no-redact")
	if len(recs) != len(want) {
		t.Fatalf("sample returned %d records, DLQ holds %d", len(recs), len(want))
	}
	vis, inflight := clitest.SettledDepth(t, c, truth.DLQ.URL)
	if vis != vis0 || inflight != 0 {
		t.Fatalf("after sample: visible %d (was %d), in flight %d (want 0)", vis, vis0, inflight)
	}

	bySHA := map[string]record.Record{}
	for _, r := range recs {
		if _, dup := bySHA[r.BodySHA256]; dup {
			t.Fatalf("message %s printed twice", r.MessageID)
		}
		bySHA[r.BodySHA256] = r
	}
	kinds := map[seed.Kind]bool{}
	for _, m := range want {
		r, ok := bySHA[m.BodySHA256]
		if !ok {
			t.Fatalf("seeded %s message %s missing from sample", m.Kind, m.MessageID)
		}
		kinds[m.Kind] = true
		if r.Body != m.Body || r.BodySHA256 != record.SHA256Hex(r.Body) {
			t.Fatalf("%s body not exact", m.Kind)
		}
		if r.System.SourceQueueARN != m.SourceARN {
			t.Errorf("%s: source_queue_arn %q, want %q", m.Kind, r.System.SourceQueueARN, m.SourceARN)
		}
		if r.System.ReceiveCount < 1 || r.System.SentAt.IsZero() || r.ExpiresAt.IsZero() {
			t.Errorf("%s: system attributes missing: %+v expires %v", m.Kind, r.System, r.ExpiresAt)
		}
		for name, a := range m.Attributes {
			got, ok := r.Attributes[name]
			if !ok || got.Type != *a.DataType {
				t.Errorf("%s: attribute %s = %+v", m.Kind, name, got)
				continue
			}
			if a.BinaryValue != nil {
				if got.Base64 == "" {
					t.Errorf("%s: binary attribute %s lost", m.Kind, name)
				}
			} else if got.Value != *a.StringValue {
				t.Errorf("%s: attribute %s = %q want %q", m.Kind, name, got.Value, *a.StringValue)
			}
		}
		if m.EventType != "" && (r.Envelope == nil || r.Envelope.EventType != m.EventType) {
			t.Errorf("%s: envelope %+v, want event type %s", m.Kind, r.Envelope, m.EventType)
		}
		if m.FailureType != "" && (r.Failure == nil || r.Failure.Type != m.FailureType) {
			t.Errorf("%s: failure %+v, want type %s", m.Kind, r.Failure, m.FailureType)
		}
		if m.Kind == seed.KindLarge && r.SizeBytes < 900*1024 {
			t.Errorf("large body reported as %d bytes", r.SizeBytes)
		}
	}
	for _, k := range []seed.Kind{seed.KindEnvelope, seed.KindEnriched, seed.KindAttrFailure, seed.KindMalformed, seed.KindPlaintext, seed.KindUnicode, seed.KindLarge, seed.KindSecret} {
		if !kinds[k] {
			t.Errorf("the seeded DLQ has no %s message; the test covers nothing for it", k)
		}
	}
}

func TestSampleFIFOKeepsGroupIDAndWarns(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	want := truth.InQueue(truth.FIFODLQ.Name)
	res := clitest.Run(t, env, "", "sample", truth.FIFODLQ.URL, "-n", clitest.Itoa(len(want)), "-o", "json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "FIFO") {
		t.Errorf("no FIFO side-effect warning on stderr: %q", res.Stderr)
	}
	var recs []record.Record
	if err := json.Unmarshal([]byte(res.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	for _, r := range recs {
		if r.System.MessageGroupID == "" {
			t.Errorf("FIFO record %s without message_group_id", r.MessageID)
		}
		groups[r.System.MessageGroupID] = true
	}
	if len(groups) < 3 {
		t.Errorf("saw %d message groups, seeded at least 3 (got %d records)", len(groups), len(recs))
	}
	if _, inflight := clitest.SettledDepth(t, env.SQS(t), truth.FIFODLQ.URL); inflight != 0 {
		t.Errorf("%d FIFO messages left in flight", inflight)
	}
}

func TestSampleQueueRefsByNameURLAndARN(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	for _, ref := range []string{truth.DLQ.Name, truth.DLQ.URL, truth.DLQ.ARN} {
		recs := clitest.SampleAll(t, env, ref, 3)
		if len(recs) != 3 {
			t.Errorf("ref %s: %d records", ref, len(recs))
		}
		for _, r := range recs {
			if r.Queue != truth.DLQ.ARN {
				t.Errorf("ref %s: record queue %s", ref, r.Queue)
			}
		}
	}
}

func TestSampleRedactsSecretsByDefault(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	secrets := truth.Filter(func(m seed.Seeded) bool { return len(m.Secrets) > 0 && m.DLQName == truth.DLQ.Name })
	if len(secrets) == 0 {
		t.Fatal("seeded incident has no secret-bearing message")
	}
	n := len(truth.InQueue(truth.DLQ.Name))
	for _, format := range []string{"json", "table"} {
		res := clitest.Run(t, env, "", "sample", truth.DLQ.Name, "-n", clitest.Itoa(n), "-o", format)
		if res.Code != 0 {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		for _, m := range secrets {
			for _, s := range m.Secrets {
				if strings.Contains(res.Stdout, s) {
					t.Errorf("-o %s printed secret %q", format, s)
				}
			}
		}
	}
	raw := clitest.Run(t, env, "", "sample", truth.DLQ.Name, "-n", clitest.Itoa(n), "-o", "json", "--no-redact")
	if !strings.Contains(raw.Stdout, secrets[0].Secrets[0]) {
		t.Error("--no-redact did not show the raw value")
	}
}

func TestSampleFilter(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	want := truth.Filter(func(m seed.Seeded) bool { return m.DLQName == truth.DLQ.Name && m.Kind == seed.KindMalformed })
	recs := clitest.SampleAll(t, env, truth.DLQ.Name, 100, "--filter", `.json == null and (.body | startswith("{"))`)
	if len(recs) != len(want) {
		t.Fatalf("filter matched %d, want %d malformed bodies", len(recs), len(want))
	}
}

func TestSampleOfflineFromFile(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	n := len(truth.InQueue(truth.DLQ.Name))
	res := clitest.Run(t, env, "", "sample", truth.DLQ.Name, "-n", clitest.Itoa(n), "-o", "ndjson", "--no-redact")
	off := clitest.Run(t, env, res.Stdout, "sample", "--from", "-", "-n", clitest.Itoa(n), "-o", "ndjson", "--no-redact")
	if off.Code != 0 || strings.Count(off.Stdout, "\n") != n {
		t.Fatalf("offline sample exit %d, %d lines: %s", off.Code, strings.Count(off.Stdout, "\n"), off.Stderr)
	}
}

func TestBadInputExitsTwoWithOneSentence(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown queue", []string{"sample", "no-such-queue-xyz"}, "does not exist"},
		{"bad ARN", []string{"sample", "arn:aws:sqs:nope"}, "not an SQS queue ARN"},
		{"other region ARN", []string{"sample", "arn:aws:sqs:eu-west-9:123456789012:" + truth.DLQ.Name}, "--region eu-west-9"},
		{"bad filter", []string{"sample", truth.DLQ.Name, "--filter", ".a =="}, "invalid expression"},
		{"bad -n", []string{"sample", truth.DLQ.Name, "-n", "0"}, "-n must be"},
		{"bad output", []string{"-o", "yaml", "queues"}, "unknown output format"},
		{"unknown flag", []string{"sample", truth.DLQ.Name, "--bogus"}, "unknown flag"},
		{"missing arg", []string{"sample"}, "expects one QUEUE"},
		{"unreadable from", []string{"sample", "--from", "/nonexistent/x.ndjson"}, "cannot read --from"},
		{"bad endpoint", []string{"--endpoint-url", "ht!tp://bad", "sample", truth.DLQ.Name}, "not an http(s) URL"},
		{"unreachable endpoint", []string{"--endpoint-url", "http://127.0.0.1:1", "sample", truth.DLQ.Name}, "cannot connect to the SQS endpoint http://127.0.0.1:1: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := clitest.Run(t, env, "", tc.args...)
			if res.Code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", res.Code, res.Stderr)
			}
			if !strings.Contains(res.Stderr, tc.want) || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
				t.Fatalf("stderr %q: want one line containing %q", res.Stderr, tc.want)
			}
			if res.Stdout != "" {
				t.Fatalf("stdout not empty on bad input: %q", res.Stdout)
			}
		})
	}
}

func TestMissingCredentialsAndRegion(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	clitest.SetStackEnv(t, env)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	res := clitest.Run(t, testenv.Env{}, "", "sample", truth.DLQ.Name)
	if res.Code != 2 || !strings.Contains(res.Stderr, "credentials") {
		t.Errorf("missing credentials: exit %d stderr %q", res.Code, res.Stderr)
	}
	clitest.SetStackEnv(t, env)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	res = clitest.Run(t, testenv.Env{}, "", "sample", truth.DLQ.Name)
	if res.Code != 2 || !strings.Contains(res.Stderr, "region") {
		t.Errorf("missing region: exit %d stderr %q", res.Code, res.Stderr)
	}
}

func TestQueuesListsDLQsWithSources(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	res := clitest.Run(t, env, "", "queues", "--prefix", truth.Prefix, "-o", "json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var dlqs []sqsbroker.DLQInfo
	if err := json.Unmarshal([]byte(res.Stdout), &dlqs); err != nil {
		t.Fatal(err)
	}
	byName := map[string]sqsbroker.DLQInfo{}
	for _, d := range dlqs {
		byName[d.Name] = d
	}
	d, ok := byName[truth.DLQ.Name]
	if !ok || len(dlqs) != 2 {
		t.Fatalf("queues = %+v, want the standard and FIFO DLQ", dlqs)
	}
	if d.Counts.Visible != len(truth.InQueue(truth.DLQ.Name)) {
		t.Errorf("visible %d, seeded %d", d.Counts.Visible, len(truth.InQueue(truth.DLQ.Name)))
	}
	if len(d.Sources) != 2 || d.Sources[0].Name != truth.Orders.Name || d.Sources[0].MaxReceiveCount != truth.Orders.MaxReceiveCount {
		t.Errorf("sources = %+v", d.Sources)
	}
	if !byName[truth.FIFODLQ.Name].FIFO {
		t.Error("FIFO DLQ not marked fifo")
	}
	table := clitest.Run(t, env, "", "queues", "--prefix", truth.Prefix)
	if !strings.Contains(table.Stdout, truth.DLQ.Name) || !strings.Contains(table.Stdout, truth.Payments.Name) {
		t.Errorf("table output lacks the DLQ or its sources: %q", table.Stdout)
	}
}

func TestVerboseNeverPrintsSecretsOrReceiptHandles(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	res := clitest.Run(t, env, "", "-v", "sample", truth.DLQ.Name, "-n", "5", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, truth.DLQ.URL) {
		t.Errorf("-v does not show the resolved queue URL: %q", res.Stderr)
	}
	for _, leak := range []string{env.SecretKey, "ReceiptHandle", "receipt_handle"} {
		if strings.Contains(res.Stderr, leak) || strings.Contains(res.Stdout, leak) {
			t.Errorf("output contains %q", leak)
		}
	}
	// Receipt handles from the emulator are long opaque strings; none of the
	// record fields may carry one.
	var recs []map[string]any
	if err := json.Unmarshal([]byte(res.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for k := range r {
			if strings.Contains(strings.ToLower(k), "receipt") {
				t.Errorf("record field %q", k)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	res := clitest.Run(t, testenv.Env{}, "", "--version")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "dlqctl ") {
		t.Fatalf("--version: exit %d out %q", res.Code, res.Stdout)
	}
}
