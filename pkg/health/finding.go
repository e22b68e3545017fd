// Package health finds DLQ trouble before it pages someone, on every
// broker: audit collects each broker's findings (package finding, the
// rules in each broker's own package, handed finding.Finding), check
// evaluates alerting thresholds on one DLQ, and watch samples a DLQ's
// depth over time. check and watch read a broker-neutral depth
// (broker.Endpoint's Depth, and broker.DepthReader where the broker says
// more); they never ask which broker they talk to.
//
// Nothing here prints or exits: results are values (finding.Finding,
// CheckReport, Tick) that cmd renders, and progress is reported through
// callbacks.
package health

import fnd "github.com/dlqctl/dlqctl/pkg/finding"

// The audit finding is package finding's (one type for every broker);
// these names keep the SQS rules and their callers short.
type (
	Finding  = fnd.Finding
	Fix      = fnd.Fix
	Severity = fnd.Severity
	Tally    = fnd.Tally
)

// Severities.
const (
	SevInfo  = fnd.SevInfo
	SevWarn  = fnd.SevWarn
	SevError = fnd.SevError
)

// ParseSeverity validates a --fail-on value.
func ParseSeverity(s string) (Severity, error) { return fnd.ParseSeverity(s) }

// Count tallies findings.
func Count(fs []Finding) Tally { return fnd.Count(fs) }

// AtLeast returns the findings whose severity is at least min.
func AtLeast(fs []Finding, min Severity) []Finding { return fnd.AtLeast(fs, min) }

// Sort orders findings: most severe first, then by queue and check.
func Sort(fs []Finding) { fnd.Sort(fs) }
