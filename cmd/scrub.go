package cmd

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// urlEnv are the environment variables that hold URLs dlqctl reads (the
// defaults of URL flags, and the AWS SDK's endpoint variables).
var urlEnv = []string{envAMQPManagementURL, "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_IAM"}

// scrubStreams is the last line of the credentials policy: the secrets
// carried by the URLs of the command line (every argument and flag value:
// queue references, --to, --dlq, --from, --archive, the endpoint and
// management URLs, --logs, …) and of the URL environment variables are
// replaced by "***" in everything dlqctl writes to stdout and stderr —
// errors that echo a bad value, -v, tables, JSON, NDJSON. Each message is
// also redacted where it is made (broker.Redact, the references' Display);
// this catches the ones that are not. Streams are wrapped only when there
// is a secret to hide.
//
// Shell completion (cobra's hidden __complete commands) is left alone: it
// offers back what was typed, credentials included, to the shell only.
func scrubStreams(s *output.IOStreams, args []string) *output.IOStreams {
	if len(args) > 0 && strings.HasPrefix(args[0], cobra.ShellCompRequestCmd) {
		return s
	}
	var secrets []string
	for _, a := range args {
		secrets = append(secrets, broker.SecretsIn(a)...)
	}
	for _, e := range urlEnv {
		secrets = append(secrets, broker.SecretsIn(os.Getenv(e))...)
	}
	return output.Scrubbed(s, secrets)
}
