package cmd

import (
	"context"
	"fmt"
	"os"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs/origins"
)

// originAuditor is the audit of the traps of SQS DLQs fed by Lambda, SNS
// and EventBridge (package origins). A service with no endpoint of its
// own while SQS has one (--endpoint-url, AWS_ENDPOINT_URL_SQS: a local
// emulator) is not asked: its answer would be about another world (AWS's)
// than the queues'; the audit notes it.
func (f *Factory) originAuditor(ctx context.Context, c *sqs.Client, queues []string, prefix string) (*origins.Auditor, error) {
	lc, sc, ec, _, err := f.OriginClients(ctx)
	if err != nil {
		return nil, err
	}
	a := &origins.Auditor{Clients: origins.Clients{SQS: c, Lambda: lc, SNS: sc, Events: ec}, Queues: queues, Prefix: prefix, Skipped: map[origins.Kind]string{}}
	sqsEP := f.sqsEndpointFlag()
	if sqsEP == "" {
		sqsEP = os.Getenv("AWS_ENDPOINT_URL_SQS")
	}
	if sqsEP == "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		return a, nil
	}
	for kind, env := range map[origins.Kind]string{origins.KindFunction: "AWS_ENDPOINT_URL_LAMBDA", origins.KindSubscription: "AWS_ENDPOINT_URL_SNS", origins.KindTarget: "AWS_ENDPOINT_URL_EVENTBRIDGE"} {
		if os.Getenv(env) == "" {
			a.Skipped[kind] = fmt.Sprintf("SQS is served by %s and %s is not set", sqsEP, env)
		}
	}
	return a, nil
}
