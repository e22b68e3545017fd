package kafka

import (
	"testing"

	"github.com/dlqctl/dlqctl/internal/findingtest"
)

// TestDoctorChecksAreTheChecksTheCodeMakes: the checks 'dlqctl doctor
// --help' lists for this broker are exactly those its doctor reports.
func TestDoctorChecksAreTheChecksTheCodeMakes(t *testing.T) {
	findingtest.DoctorDeclared(t, ".", "kafka", DoctorChecks)
}
