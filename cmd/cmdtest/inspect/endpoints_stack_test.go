package inspect

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// The per-service flags reach the real servers: SQS through
// --sqs-endpoint-url alone, with the environment's endpoints removed.
func TestSQSEndpointFlagAgainstTheStack(t *testing.T) {
	env, truth := clitest.SharedIncident(t)
	clitest.SetStackEnv(t, env)
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	res := clitest.Run(t, testenv.Env{}, "", "sample", truth.DLQ.Name, "-n", "1", "-o", "json", "--sqs-endpoint-url", env.SQSEndpoint, "-v")
	if res.Code != 0 || !strings.Contains(res.Stderr, "sqs endpoint "+env.SQSEndpoint) {
		t.Fatalf("exit %d stderr %q", res.Code, res.Stderr)
	}
}
