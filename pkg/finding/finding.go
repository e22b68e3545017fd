// Package finding is the one audit finding every broker reports: what is
// wrong with which queue or topic, why it matters and exactly how to fix
// it. It is a leaf (it imports only pkg/errs), so a broker package can
// produce findings without importing a domain package: each broker's
// audit rules live in its own package and return these values; package
// health and cmd collect, sort, count and print them the same way for
// every broker.
package finding

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Severity ranks a finding: error (messages will be lost or never reach the
// DLQ), warn (a setting that turns incidents into worse incidents), info.
type Severity string

// Severities.
const (
	SevInfo  Severity = "info"
	SevWarn  Severity = "warn"
	SevError Severity = "error"
)

// Rank orders severities: info < warn < error.
func (s Severity) Rank() int {
	switch s {
	case SevError:
		return 2
	case SevWarn:
		return 1
	}
	return 0
}

// ParseSeverity validates a --fail-on value.
func ParseSeverity(s string) (Severity, error) {
	switch Severity(strings.ToLower(strings.TrimSpace(s))) {
	case SevError:
		return SevError, nil
	case SevWarn, "warning":
		return SevWarn, nil
	case SevInfo:
		return SevInfo, nil
	}
	return "", errs.BadInputf("unknown severity %q; use --fail-on error, warn or info", s)
}

// Finding is one audit result: what is wrong with which queue, why it
// matters and exactly how to fix it. The JSON field names are a public
// contract (audit -o json, docs/schema/health.schema.json#/$defs/finding).
type Finding struct {
	Severity Severity `json:"severity"`
	// Check is the stable id of the rule, e.g. "dlq-retention-short".
	Check string `json:"check"`
	// Queue is the queue or topic the finding is about.
	Queue    string `json:"queue"`
	QueueURL string `json:"queue_url,omitempty"`
	// Related is the other queue of the source/DLQ pair, when there is one.
	Related string `json:"related,omitempty"`
	Problem string `json:"problem"`
	Why     string `json:"why"`
	Fix     Fix    `json:"fix"`
	// Sampled is true when the finding comes from a sample of messages
	// rather than from the queue's configuration.
	Sampled bool `json:"sampled,omitempty"`
}

// Fix is the exact change that resolves a finding.
type Fix struct {
	// Queue is the queue to change (not always the queue of the finding:
	// a DLQ retention problem may be fixed on the source).
	Queue string `json:"queue"`
	// Attribute and Value are the SQS SetQueueAttributes change ("" to
	// remove an attribute); empty when the fix is not an attribute change.
	Attribute string `json:"attribute,omitempty"`
	Value     string `json:"value,omitempty"`
	// Terraform is the aws_sqs_queue argument to set.
	Terraform string `json:"terraform,omitempty"`
	// Command is a command to run instead of (or besides) a configuration
	// change (a dlqctl command, rabbitmqctl set_policy, kafka-configs.sh).
	Command string `json:"command,omitempty"`
	// Text says the fix in one sentence.
	Text string `json:"text"`
}

// SetAttribute renders the SetQueueAttributes part as Attribute=Value
// ("" when the fix has no attribute change).
func (f Fix) SetAttribute() string {
	if f.Attribute == "" {
		return ""
	}
	if f.Value == "" {
		return fmt.Sprintf("%s=\"\" (remove)", f.Attribute)
	}
	return f.Attribute + "=" + f.Value
}

// Tally counts findings by severity.
type Tally struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Infos    int `json:"infos"`
}

// Count tallies findings.
func Count(fs []Finding) Tally {
	var t Tally
	for _, f := range fs {
		switch f.Severity {
		case SevError:
			t.Errors++
		case SevWarn:
			t.Warnings++
		default:
			t.Infos++
		}
	}
	return t
}

// AtLeast returns the findings whose severity is at least min.
func AtLeast(fs []Finding, min Severity) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity.Rank() >= min.Rank() {
			out = append(out, f)
		}
	}
	return out
}

// Sort orders findings: most severe first, then by queue and check.
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() > b.Severity.Rank()
		}
		if a.Queue != b.Queue {
			return a.Queue < b.Queue
		}
		return a.Check < b.Check
	})
}
