package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// QueuesOptions are the inputs of `dlqctl queues`.
type QueuesOptions struct {
	F      *Factory
	Prefix string
	// AMQP is a RabbitMQ vhost reference (amqp://HOST/VHOST/): list its
	// dead-letter queues instead of SQS's.
	AMQP string
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
(--group, default dlqctl-TOPIC) and pending records, the oldest pending
record's age, retention and cleanup policy, and the source topics the
headers name.`),
		Example: `  dlqctl queues
  dlqctl queues --prefix orders -o json
  dlqctl queues amqp://ops@rabbit:5672/%2f/     # the password in DLQCTL_AMQP_PASSWORD
  dlqctl queues kafka://kafka-1:9092/orders`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && (isAMQPRef(args[0]) || isKafkaRef(args[0])) {
				return nil
			}
			return exactArgs(0, "no arguments (or one amqp://HOST/VHOST/ or kafka://HOST:PORT[/PREFIX] reference)")(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && isKafkaRef(args[0]) {
				return kafkaQueuesRun(c.Context(), f, args[0], opts.Prefix)
			}
			if len(args) == 1 {
				opts.AMQP = args[0]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if opts.AMQP != "" {
				return amqpQueuesRun(c.Context(), opts, opts.AMQP)
			}
			return queuesRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Prefix, "prefix", "", "only DLQs whose name starts with P")
	return c
}

// DLQInfo is one row of `dlqctl queues` (and its JSON).
type DLQInfo struct {
	Name             string       `json:"name"`
	URL              string       `json:"url"`
	ARN              string       `json:"arn"`
	FIFO             bool         `json:"fifo"`
	Counts           sqs.Counts   `json:"counts"`
	RetentionSeconds int          `json:"retention_seconds"`
	Sources          []SourceInfo `json:"sources"`
	HasRedrivePolicy bool         `json:"has_redrive_policy"`
	Warnings         []string     `json:"warnings"`
}

// SourceInfo is a source queue of a DLQ.
type SourceInfo struct {
	Name             string `json:"name"`
	URL              string `json:"url"`
	ARN              string `json:"arn"`
	MaxReceiveCount  int    `json:"max_receive_count"`
	RetentionSeconds int    `json:"retention_seconds"`
}

// ListDLQs finds every DLQ (optionally by name prefix) with its sources.
func ListDLQs(ctx context.Context, c *sqs.Client, prefix string) ([]DLQInfo, error) {
	urls, err := c.ListQueueURLs(ctx, "")
	if err != nil {
		return nil, err
	}
	queues, err := c.LoadAll(ctx, urls)
	if err != nil {
		return nil, err
	}
	byARN := map[string]*sqs.Queue{}
	for _, q := range queues {
		byARN[q.ARN] = q
	}
	dlqs := map[string]*DLQInfo{}
	for _, q := range queues {
		rp := q.RedrivePolicy()
		if rp == nil {
			continue
		}
		d, ok := byARN[rp.DeadLetterTargetARN]
		if !ok {
			continue // a policy pointing at a missing queue is an audit finding
		}
		info := dlqs[d.ARN]
		if info == nil {
			info = &DLQInfo{Name: d.Name, URL: d.URL, ARN: d.ARN, FIFO: d.FIFO, Counts: d.Counts(),
				RetentionSeconds: int(d.Retention() / time.Second), HasRedrivePolicy: d.RedrivePolicy() != nil,
				Sources: []SourceInfo{}, Warnings: []string{}}
			dlqs[d.ARN] = info
		}
		info.Sources = append(info.Sources, SourceInfo{Name: q.Name, URL: q.URL, ARN: q.ARN,
			MaxReceiveCount: rp.MaxReceiveCount, RetentionSeconds: int(q.Retention() / time.Second)})
	}
	out := make([]DLQInfo, 0, len(dlqs))
	for _, d := range dlqs {
		if prefix != "" && !strings.HasPrefix(d.Name, prefix) {
			continue
		}
		sort.Slice(d.Sources, func(i, j int) bool { return d.Sources[i].Name < d.Sources[j].Name })
		for _, s := range d.Sources {
			if !d.FIFO && d.RetentionSeconds < s.RetentionSeconds {
				d.Warnings = append(d.Warnings, fmt.Sprintf("retention %s is shorter than source %s's %s: dead-lettered messages keep their original enqueue time and expire early",
					output.Duration(time.Duration(d.RetentionSeconds)*time.Second), s.Name, output.Duration(time.Duration(s.RetentionSeconds)*time.Second)))
			}
		}
		if d.HasRedrivePolicy {
			d.Warnings = append(d.Warnings, "the DLQ itself has a RedrivePolicy: every receive while triaging counts toward moving its messages on")
		}
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func queuesRun(ctx context.Context, opts *QueuesOptions) error {
	f := opts.F
	c, err := f.SQS(ctx)
	if err != nil {
		return err
	}
	dlqs, err := ListDLQs(ctx, c, opts.Prefix)
	if err != nil {
		return err
	}
	if done, err := writeStructured(f, dlqs, dlqs); done {
		return err
	}
	if len(dlqs) == 0 {
		f.IO.Infof("no dead-letter queues found (no queue has a RedrivePolicy%s)", map[bool]string{true: " targeting a queue named " + opts.Prefix + "*", false: ""}[opts.Prefix != ""])
		return nil
	}
	t := output.NewTable(f.IO, "DLQ", "VISIBLE", "IN-FLIGHT", "DELAYED", "RETENTION", "SOURCES (maxReceiveCount, retention)")
	for _, d := range dlqs {
		srcs := make([]string, len(d.Sources))
		for i, s := range d.Sources {
			srcs[i] = fmt.Sprintf("%s (%d, %s)", s.Name, s.MaxReceiveCount, output.Duration(time.Duration(s.RetentionSeconds)*time.Second))
		}
		t.Row(d.Name, fmt.Sprint(d.Counts.Visible), fmt.Sprint(d.Counts.InFlight), fmt.Sprint(d.Counts.Delayed),
			output.Duration(time.Duration(d.RetentionSeconds)*time.Second), strings.Join(srcs, ", "))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, d := range dlqs {
		for _, w := range d.Warnings {
			f.IO.Warnf("%s: %s", d.Name, w)
		}
	}
	return nil
}
