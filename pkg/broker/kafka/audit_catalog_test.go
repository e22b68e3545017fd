package kafka

import (
	"testing"

	"github.com/dlqctl/dlqctl/internal/findingtest"
)

// TestAuditRulesAreTheChecksTheCodeReports: the rules 'dlqctl audit --help'
// lists for this broker are exactly the checks its audit reports.
func TestAuditRulesAreTheChecksTheCodeReports(t *testing.T) {
	findingtest.Declared(t, ".", AuditRules)
}
