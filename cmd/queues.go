package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// QueuesOptions are the inputs of `dlqctl queues`.
type QueuesOptions struct {
	F      *Factory
	Prefix string
	// Scope is what to list: "" for the SQS region, a RabbitMQ vhost
	// (amqp://HOST/VHOST/) or a Kafka cluster (kafka://HOST:PORT[/PREFIX]).
	Scope string
}

// NewCmdQueues builds `dlqctl queues`.
func NewCmdQueues(f *Factory, runF func(context.Context, *QueuesOptions) error) *cobra.Command {
	opts := &QueuesOptions{F: f}
	c := &cobra.Command{
		Use:   "queues [--prefix P] | queues amqp://HOST/VHOST/ | queues kafka://HOST:PORT[/PREFIX]",
		Short: "List dead-letter queues with their sources, depths and retention",
		Long: withExitCodes(`List the dead-letter queues in the account and region: every queue that
some queue's RedrivePolicy targets. For each: its source queues with their
maxReceiveCount, the visible / in-flight / delayed counts, and the retention
of the DLQ and its sources.

A warning is shown when a DLQ's retention is shorter than a source's: on
standard queues a dead-lettered message keeps its original enqueue time, so
it expires from the DLQ earlier than the DLQ's retention suggests.

RabbitMQ: 'queues amqp://USER@HOST/VHOST/' (the password in
DLQCTL_AMQP_PASSWORD) lists the vhost's queues that some queue's
dead-letter exchange routes to, with their type, ready and
unacknowledged counts, consumers, limits and sources (management API).

With kafka://HOST:PORT[/PREFIX] it lists a Kafka cluster's dead-letter and
retry topics instead (names starting with PREFIX): recognised by name
(BASE-retry[-N], BASE-dlt, BASE-dlq, BASE.DLT) or by the dead-letter headers
of their records, with each partition's end offset, dlqctl's committed offset
(--kafka-group, default dlqctl-TOPIC) and pending records, the oldest pending
record's age, retention and cleanup policy, and the source topics the
headers name.`),
		Example: `  dlqctl queues
  dlqctl queues --prefix orders -o json
  dlqctl queues amqp://ops@rabbit:5672/%2f/     # the password in DLQCTL_AMQP_PASSWORD
  dlqctl queues kafka://kafka-1:9092/orders`,
		Args: func(c *cobra.Command, args []string) error {
			// SQS lists the region the AWS flags name; a RabbitMQ vhost or a
			// Kafka cluster is named by a reference.
			if len(args) == 1 {
				if ref, err := broker.ParseRef(args[0]); err == nil && ref.Broker != broker.SQS {
					return nil
				}
			}
			return exactArgs(0, "no arguments (or one amqp://HOST/VHOST/ or kafka://HOST:PORT[/PREFIX] reference)")(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Scope = args[0]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return queuesRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Prefix, "prefix", "", "only DLQs whose name starts with P")
	return c
}

// queuesRun lists the dead-letter queues of the scope's broker (its
// DLQLister) and prints them the same way for every broker.
func queuesRun(ctx context.Context, opts *QueuesOptions) error {
	f := opts.F
	l, prefix, done, err := f.dlqLister(ctx, opts.Scope, opts.Prefix)
	if err != nil {
		return err
	}
	defer done()
	res, err := l.ListDLQs(ctx, broker.ListOptions{Prefix: prefix, Duration: output.Duration})
	if err != nil {
		return err
	}
	format, _ := f.Format()
	return report.WriteDLQListing(f.IO, format, &res)
}
