package cmd

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/internal/humantime"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// AuditOptions are the inputs of `dlqctl audit`.
type AuditOptions struct {
	F                   *Factory
	Queues              []string
	Prefix              string
	InvestigationWindow time.Duration
	FailOn              health.Severity
	Sample              int
	Visibility          time.Duration
}

// NewCmdAudit builds `dlqctl audit`.
func NewCmdAudit(f *Factory, runF func(context.Context, *AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{F: f}
	window := dayDuration(health.DefaultInvestigationWindow)
	var failOn string
	c := &cobra.Command{
		Use:   "audit [QUEUE…] [--prefix P] [--investigation-window 7d]",
		Short: "Check source queues and DLQs against a production checklist",
		Long: withExitCodes(`Check source queues and their dead-letter queues (or Kafka dead-letter
topics, kafka://HOST:PORT/TOPIC: compaction, partitions, retention,
replication, retry topics without a DLT) for the configuration
mistakes that turn a bad deploy into lost messages. With no QUEUE every queue
in the region is audited (only names starting with --prefix when given); a
named queue is audited together with its DLQ, the queues that dead-letter
into it and the DLQ's other sources.

Each finding has a severity (error, warn, info), the queue, what is wrong,
why it matters and the exact fix: the SetQueueAttributes attribute and value
and the Terraform aws_sqs_queue argument. The checks:

` + auditRules.sqs + `

The DLQs Lambda, SNS and EventBridge feed (the audited queues, or the
region):

` + auditRules.origins + `

A listing the caller may not do (lambda:ListFunctions, sns:ListSubscriptions,
events:ListRules…) skips that check with a note; so does a service with no
endpoint of its own (AWS_ENDPOINT_URL_LAMBDA, _SNS, _EVENTBRIDGE) when SQS
has one (--endpoint-url, AWS_ENDPOINT_URL_SQS).

The expiry check samples up to --sample messages of each standard DLQ (each
receive increments ApproximateReceiveCount; every sampled message is
released); --sample 0 skips it. DLQs with their own RedrivePolicy and FIFO
DLQs are not sampled.

RabbitMQ: 'audit amqp://USER@HOST/VHOST/' (the password in
DLQCTL_AMQP_PASSWORD) audits the vhost's queues through the management API
(a queue reference audits that queue; --prefix narrows a vhost). The checks:

` + auditRules.amqp + `

Kafka: 'audit kafka://HOST:PORT/TOPIC…' audits each dead-letter topic and its
retry chain (docs/kafka.md); 'audit kafka://HOST:PORT' audits every
dead-letter topic 'dlqctl queues kafka://HOST:PORT' finds (--prefix narrows
it) and every retry chain without one:

` + auditRules.kafka + `

Findings are one type on every broker and print the same way; one run
audits one broker. Exit 3 when a finding is at or above --fail-on (default
error).`),
		Example: `  dlqctl audit
  dlqctl audit --prefix orders --fail-on warn
  dlqctl audit orders orders-dlq -o json | jq '.findings[] | select(.severity=="error")'
  dlqctl audit amqp://ops@rabbit/%2f/ --prefix orders
  dlqctl audit kafka://kafka-1:9092 --prefix orders`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Queues = args
			opts.InvestigationWindow = time.Duration(window)
			if len(args) > 0 && opts.Prefix != "" && !auditScopes(args[0]) {
				return errs.BadInputf("audit takes QUEUE arguments or --prefix, not both; drop one of them")
			}
			if opts.InvestigationWindow < 0 || opts.InvestigationWindow > maxRetention {
				return errs.BadInputf("--investigation-window must be between 0 and 14d (the SQS retention maximum), got %s", window.String())
			}
			sev, err := health.ParseSeverity(failOn)
			if err != nil {
				return err
			}
			opts.FailOn = sev
			if opts.Sample < 0 {
				return errs.BadInputf("--sample must be 0 (skip the expiry check) or more, got %d", opts.Sample)
			}
			if err := checkVisibilityFlag(opts.Visibility); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return auditRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Prefix, "prefix", "", "only queues whose name starts with P (plus their DLQs and sources)")
	fl.Var(&window, "investigation-window", "how long a message must stay in the DLQ after its source would have expired it (e.g. 7d, 36h)")
	fl.StringVar(&failOn, "fail-on", "error", "exit 3 when a finding has at least this severity: error, warn or info")
	fl.IntVar(&opts.Sample, "sample", 50, "messages to sample per DLQ for the expiring-within-24h check (0 skips it; 50, where group and classify read 1000 of one queue: audit samples every DLQ it looks at)")
	fl.DurationVar(&opts.Visibility, "visibility", 30*time.Second, "how long sampled messages stay hidden between heartbeats")
	return c
}

func checkVisibilityFlag(v time.Duration) error {
	if v < 5*time.Second || v > maxLeaseHold() {
		return errs.BadInputf("--visibility must be between 5s and 12h (got %s)", v)
	}
	return nil
}

// auditRun is audit on every broker: the references' auditors (an SQS
// selection, RabbitMQ vhosts, Kafka topics; one broker per run) run
// through health.AuditAll, and their findings print the same way.
func auditRun(ctx context.Context, opts *AuditOptions) error {
	f := opts.F
	auditors, noun, done, err := auditorsFor(ctx, f, opts)
	defer done()
	if err != nil {
		return err
	}
	rep, err := health.AuditAll(ctx, auditors, broker.AuditOptions{
		InvestigationWindow: opts.InvestigationWindow, Sample: opts.Sample, SampleHold: opts.Visibility})
	if err != nil {
		return endpointErr(err)
	}
	format, _ := f.Format()
	if err := report.WriteAudit(f.IO, format, rep); err != nil {
		return err
	}
	for _, n := range rep.Notes {
		f.IO.Infof("note: %s", n)
	}
	t := rep.Tally
	if len(rep.Findings) == 0 {
		f.IO.Infof("audited %d %s: no findings", len(rep.Queues), noun)
	} else {
		f.IO.Infof("audited %d %s: %d error(s), %d warning(s), %d info", len(rep.Queues), noun, t.Errors, t.Warnings, t.Infos)
	}
	if failing := health.AtLeast(rep.Findings, opts.FailOn); len(failing) > 0 {
		return errs.Verdictf("audit failed: %d finding(s) at or above %s", len(failing), opts.FailOn)
	}
	return nil
}

// auditorsFor turns audit's references into what each broker audits
// (Factory.auditors); done releases the endpoints opened (call it also on
// an error).
func auditorsFor(ctx context.Context, f *Factory, opts *AuditOptions) (auditors []broker.Auditor, noun string, done func(), err error) {
	auditors, noun, opened, err := f.auditors(ctx, opts.Queues, opts.Prefix, func(q string, n int) {
		f.Verbosef("sampling up to %d messages of %s for the expiry check (receives increment ApproximateReceiveCount; all are released)", n, q)
	})
	done = func() {
		for _, ep := range opened {
			broker.CloseEndpoint(ep)
		}
	}
	return auditors, noun, done, err
}

// dayDuration is a duration flag that also accepts days: 7d, 1d12h, 36h.
type dayDuration time.Duration

func (d *dayDuration) String() string {
	v := time.Duration(*d)
	if v > 0 && v%(24*time.Hour) == 0 {
		return strconv.Itoa(int(v/(24*time.Hour))) + "d"
	}
	return v.String()
}

func (d *dayDuration) Set(s string) error {
	v, err := humantime.ParseDays(s)
	if err != nil {
		return err
	}
	*d = dayDuration(v)
	return nil
}

func (d *dayDuration) Type() string { return "duration" }

// maxRetention is the longest retention a broker keeps a message (SQS's
// 14 days): a longer investigation window could never be met.
const maxRetention = 14 * 24 * time.Hour
