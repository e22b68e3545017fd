package sqs

import (
	"fmt"
	fnd "github.com/dlqctl/dlqctl/pkg/finding"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

const acct = "arn:aws:sqs:us-east-1:123456789012:"

// q builds a queue as GetQueueAttributes(All) describes it on real SQS.
func q(name string, attrs ...string) *Queue {
	a := map[string]string{
		"QueueArn": acct + name, "MessageRetentionPeriod": "345600", "VisibilityTimeout": "30",
		"SqsManagedSseEnabled": "true",
	}
	for i := 0; i+1 < len(attrs); i += 2 {
		if attrs[i+1] == "-" {
			delete(a, attrs[i])
			continue
		}
		a[attrs[i]] = attrs[i+1]
	}
	return &Queue{URL: "http://sqs/" + name, ARN: a["QueueArn"], Name: name, FIFO: strings.HasSuffix(name, ".fifo"), Attrs: a}
}

func policy(target string, mrc int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%d}`, acct+target, mrc)
}

func eval(t *testing.T, queues ...*Queue) []fnd.Finding {
	t.Helper()
	g := NewAuditGraph()
	for _, x := range queues {
		g.Add(x, true)
	}
	g.Link()
	fs, _ := EvaluateAudit(g, AuditConfig{InvestigationWindow: defaultInvestigationWindow})
	return fs
}

func only(t *testing.T, fs []fnd.Finding, check, queueName string, sev fnd.Severity) fnd.Finding {
	t.Helper()
	var hit []fnd.Finding
	for _, f := range fs {
		if f.Check == check {
			hit = append(hit, f)
		}
	}
	if len(hit) != 1 || hit[0].Queue != queueName || hit[0].Severity != sev {
		t.Fatalf("want one %s %s on %s, got %+v (all: %+v)", sev, check, queueName, hit, fs)
	}
	return hit[0]
}

func TestCleanPairHasNoFindings(t *testing.T) {
	fs := eval(t,
		q("orders-dlq", "MessageRetentionPeriod", "1209600"),
		q("orders", "RedrivePolicy", policy("orders-dlq", 5)),
		q("pay-dlq.fifo", "MessageRetentionPeriod", "1209600", "FifoQueue", "true"),
		q("pay.fifo", "RedrivePolicy", policy("pay-dlq.fifo", 3), "FifoQueue", "true"))
	if len(fs) != 0 {
		t.Fatalf("clean setup produced findings: %+v", fs)
	}
}

func TestSourceWithoutPolicyAndOrphanDLQ(t *testing.T) {
	fs := eval(t, q("billing"), q("billing-dlq"))
	f := only(t, fs, "no-redrive-policy", "billing", fnd.SevError)
	if f.Fix.Attribute != "RedrivePolicy" || !strings.Contains(f.Fix.Value, acct+"billing-dlq") || !strings.Contains(f.Fix.Terraform, "redrive_policy = jsonencode(") {
		t.Errorf("fix does not say which RedrivePolicy to set: %+v", f.Fix)
	}
	only(t, fs, "orphan-dlq", "billing-dlq", fnd.SevWarn)
}

func TestMissingTargetTypeMismatchSelfAndOtherRegion(t *testing.T) {
	fs := eval(t, q("a", "RedrivePolicy", policy("gone-dlq", 5)))
	f := only(t, fs, "dlq-missing", "a", fnd.SevError)
	if f.Related != "gone-dlq" || !strings.Contains(f.Fix.Text, "gone-dlq") {
		t.Errorf("missing-target finding does not name the target: %+v", f)
	}

	fs = eval(t, q("b.fifo", "RedrivePolicy", policy("b-dlq", 5)), q("b-dlq", "MessageRetentionPeriod", "1209600"))
	f = only(t, fs, "dlq-type-mismatch", "b.fifo", fnd.SevError)
	if !strings.Contains(f.Problem, "FIFO queue dead-letters into standard queue b-dlq") || !strings.Contains(f.Fix.Value, "b-dlq.fifo") {
		t.Errorf("type mismatch: %+v", f)
	}

	fs = eval(t, q("c", "RedrivePolicy", policy("c", 5)))
	only(t, fs, "dlq-self", "c", fnd.SevError)
	if len(fs) != 1 {
		t.Errorf("a self-loop is one finding, not also a DLQ with a short retention: %+v", fs)
	}

	fs = eval(t, q("d", "RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:123456789012:d-dlq","maxReceiveCount":5}`))
	f = only(t, fs, "dlq-other-region", "d", fnd.SevError)
	if !strings.Contains(f.Problem, "eu-west-1") || !strings.Contains(f.Fix.Value, "us-east-1:123456789012:d-dlq") {
		t.Errorf("other-region: %+v", f)
	}
}

func TestRetentionChecks(t *testing.T) {
	// DLQ shorter than the source: messages arrive about to expire.
	fs := eval(t, q("s1-dlq", "MessageRetentionPeriod", "86400"), q("s1", "RedrivePolicy", policy("s1-dlq", 5)))
	f := only(t, fs, "dlq-retention-short", "s1-dlq", fnd.SevError)
	// 4d source + 7d window = 11d = 950400 s.
	if f.Fix.Attribute != "MessageRetentionPeriod" || f.Fix.Value != "950400" || f.Fix.Terraform != "message_retention_seconds = 950400" || f.Related != "s1" {
		t.Errorf("fix: %+v", f)
	}

	// Longer than the source but not by the investigation window: warn.
	fs = eval(t, q("s2-dlq", "MessageRetentionPeriod", "432000"), q("s2", "RedrivePolicy", policy("s2-dlq", 5)))
	only(t, fs, "dlq-retention-short", "s2-dlq", fnd.SevWarn)

	// At the 14-day maximum but the source keeps 14 days too: fix the source.
	fs = eval(t, q("s3-dlq", "MessageRetentionPeriod", "1209600"), q("s3", "RedrivePolicy", policy("s3-dlq", 5), "MessageRetentionPeriod", "1209600"))
	f = only(t, fs, "dlq-retention-capped", "s3-dlq", fnd.SevWarn)
	if f.Fix.Queue != "s3" || f.Fix.Value != "604800" {
		t.Errorf("capped fix should lower the source to 7d: %+v", f.Fix)
	}

	// FIFO resets the enqueue time: only the window must fit.
	fs = eval(t, q("f-dlq.fifo", "MessageRetentionPeriod", "345600"), q("f.fifo", "RedrivePolicy", policy("f-dlq.fifo", 5), "MessageRetentionPeriod", "345600"))
	f = only(t, fs, "dlq-retention-short", "f-dlq.fifo", fnd.SevWarn)
	if f.Fix.Value != "604800" {
		t.Errorf("FIFO DLQ needs the 7d window only: %+v", f.Fix)
	}
}

func TestMaxReceiveCountAndVisibility(t *testing.T) {
	dlq := q("x-dlq", "MessageRetentionPeriod", "1209600")
	fs := eval(t, dlq, q("x1", "RedrivePolicy", policy("x-dlq", 1)), q("x2", "RedrivePolicy", policy("x-dlq", 25)),
		q("x3", "RedrivePolicy", policy("x-dlq", 5), "VisibilityTimeout", "2"),
		q("x4", "RedrivePolicy", policy("x-dlq", 5), "VisibilityTimeout", "43200"),
		q("x5", "RedrivePolicy", policy("x-dlq", 4), "VisibilityTimeout", "10"))
	f := only(t, fs, "max-receive-low", "x1", fnd.SevWarn)
	if !strings.Contains(f.Fix.Value, `"maxReceiveCount":5`) || !strings.Contains(f.Fix.Value, acct+"x-dlq") {
		t.Errorf("low mrc fix keeps the target and raises the count: %+v", f.Fix)
	}
	only(t, fs, "max-receive-high", "x2", fnd.SevWarn)
	only(t, fs, "visibility-tiny", "x3", fnd.SevWarn)
	only(t, fs, "visibility-max", "x4", fnd.SevWarn)
	f = only(t, fs, "retry-window-short", "x5", fnd.SevInfo)
	if f.Fix.Value != "30" {
		t.Errorf("retry window fix: %+v", f.Fix)
	}
}

func TestDLQPolicyAllowPolicyAndEncryption(t *testing.T) {
	fs := eval(t,
		q("last"),
		q("y-dlq", "MessageRetentionPeriod", "1209600", "RedrivePolicy", policy("last", 3),
			"RedriveAllowPolicy", fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":["%sy1"]}`, acct)),
		q("y1", "RedrivePolicy", policy("y-dlq", 5)),
		q("y2", "RedrivePolicy", policy("y-dlq", 5), "SqsManagedSseEnabled", "false"),
		q("y3", "RedrivePolicy", policy("y-dlq", 5), "SqsManagedSseEnabled", "false", "KmsMasterKeyId", "alias/aws/sqs"))
	only(t, fs, "dlq-has-redrive-policy", "y-dlq", fnd.SevWarn)
	f := only(t, fs, "redrive-allow-denied", "y-dlq", fnd.SevError)
	if f.Related != "y2,y3" || !strings.Contains(f.Fix.Value, acct+"y1") || !strings.Contains(f.Fix.Value, acct+"y3") {
		t.Errorf("allow policy finding must name the denied sources and allow all of them: %+v", f)
	}
	f = only(t, fs, "no-encryption", "y2", fnd.SevWarn)
	if f.Fix.SetAttribute() != "SqsManagedSseEnabled=true" {
		t.Errorf("encryption fix: %+v", f.Fix)
	}

	// An endpoint that reports neither attribute: skipped with a note.
	g := NewAuditGraph()
	g.Add(q("z-dlq", "MessageRetentionPeriod", "1209600", "SqsManagedSseEnabled", "-"), true)
	g.Add(q("z", "RedrivePolicy", policy("z-dlq", 5), "SqsManagedSseEnabled", "-"), true)
	g.Link()
	fs, notes := EvaluateAudit(g, AuditConfig{InvestigationWindow: defaultInvestigationWindow})
	if len(fs) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "2 queue(s)") {
		t.Errorf("unknown encryption: findings %+v notes %q", fs, notes)
	}
}

func TestSortAndFailOn(t *testing.T) {
	fs := eval(t, q("m"), q("n-dlq", "MessageRetentionPeriod", "1209600"), q("n", "RedrivePolicy", policy("n-dlq", 5), "VisibilityTimeout", "9"))
	// m: no-redrive-policy (error); n: retry-window-short (info).
	if len(fs) != 2 || fs[0].Severity != fnd.SevError || fs[1].Severity != fnd.SevInfo {
		t.Fatalf("not sorted most severe first: %+v", fs)
	}
	if n := len(fnd.AtLeast(fs, fnd.SevWarn)); n != 1 {
		t.Errorf("AtLeast(warn) = %d, want 1", n)
	}
	if _, err := fnd.ParseSeverity("fatal"); err == nil {
		t.Error("ParseSeverity accepted fatal")
	}
}

func TestExpiringWithin(t *testing.T) {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	recs := []record.Record{{ExpiresAt: now.Add(3 * time.Hour)}, {ExpiresAt: now.Add(30 * time.Hour)}, {}, {ExpiresAt: now.Add(23 * time.Hour)}}
	s := ExpiringWithin(recs, now, 24*time.Hour)
	if s.Sampled != 4 || s.Expiring != 2 || !s.Earliest.Equal(now.Add(3*time.Hour)) {
		t.Errorf("ExpiringWithin = %+v", s)
	}
}

// defaultInvestigationWindow is audit's default --investigation-window.
const defaultInvestigationWindow = 7 * 24 * time.Hour
