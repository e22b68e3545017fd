package broker_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBrokerPackagesImportNoDomainPackage keeps the arrows pointing down:
// the broker packages (pkg/broker and everything under it) depend, among
// dlqctl's own packages, only on the seam itself and the leaves below it
// (pkg/errs, pkg/record, pkg/finding, internal helpers that obey the same
// rule) — never on a domain package (pkg/health, pkg/redrive,
// pkg/archive, pkg/inspect, pkg/classify, pkg/logs, pkg/doctor,
// pkg/output, nor the engine pkg/pipeline) nor on each other. The
// conformance suite, which drives every broker through the engine, is not
// a broker package: it is internal/brokertest, above both. What a domain
// needs from a broker (an audit, a depth) is an optional interface in
// pkg/broker that the broker's package implements, never an import of the
// domain from below.
//
// The rule reads `go list -deps` (non-test imports, transitively).
func TestBrokerPackagesImportNoDomainPackage(t *testing.T) {
	const mod = "github.com/dlqctl/dlqctl/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, mod+"pkg/broker/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	leaves := map[string]bool{"pkg/broker": true, "pkg/errs": true, "pkg/record": true, "pkg/finding": true}
	brokers := map[string]bool{"pkg/broker/sqs": true, "pkg/broker/amqp": true, "pkg/broker/kafka": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		checked++
		for _, dep := range f[1:] {
			if !strings.HasPrefix(dep, mod) {
				continue
			}
			d := strings.TrimPrefix(dep, mod)
			switch {
			case strings.HasPrefix(d, "internal/"):
				// Checked through its own dependencies, which are this
				// package's too (Deps is transitive).
			case brokers[d] && strings.HasPrefix(pkg, d+"/"):
				// A broker's own sub-package (pkg/broker/sqs/origins: SQS
				// DLQs fed by Lambda, SNS and EventBridge) builds on it.
			case brokers[d]:
				t.Errorf("%s depends on %s: a broker package never depends on another one", pkg, d)
			case leaves[d]:
			default:
				t.Errorf("%s depends on %s: a broker package must not import a domain package (an arrow back up); offer an optional interface in pkg/broker instead", pkg, d)
			}
		}
	}
	if checked < 4 {
		t.Fatalf("go list listed %d broker packages, want pkg/broker, sqs, amqp and kafka:\n%s", checked, out)
	}
}
