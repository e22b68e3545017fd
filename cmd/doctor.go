package cmd

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/awsconf"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/doctor"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// DoctorOptions are the inputs of `dlqctl doctor`.
type DoctorOptions struct {
	F       *Factory
	Queues  []string
	Roles   []string
	To      string
	Archive string // s3://BUCKET/PREFIX
	Logs    []string
}

// NewCmdDoctor builds `dlqctl doctor`.
func NewCmdDoctor(f *Factory, runF func(context.Context, *DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{F: f}
	var role string
	c := &cobra.Command{
		Use:   "doctor [QUEUE…] [--role ROLE] [--to QUEUE] [--archive s3://BUCKET/PREFIX] [--logs GROUP]",
		Short: "Can this shell work on these queues? Broker access, identity, permissions, state dir, tools",
		Long: withExitCodes(`Run this first in a new shell, before any runbook. QUEUE is an SQS
queue (name, URL, ARN), amqp[s]://HOST:PORT/VHOST/QUEUE or
kafka://HOST:PORT[,HOST:PORT…]/TOPIC. doctor changes nothing, and says
what to fix. A RabbitMQ vhost (amqp://HOST:PORT/VHOST/; amqp://HOST:PORT
for /) or a Kafka cluster (kafka://HOST:PORT, no topic) is checked up to
the management API or the brokers' metadata, and the queue's or topic's
checks are not-checked, naming the reference that checks one.

A RabbitMQ queue (amqp://, amqps://; the --amqp-* flags and
DLQCTL_AMQP_USERNAME/DLQCTL_AMQP_PASSWORD):
` + doctorChecks.amqp + `

A Kafka topic (kafka://; the --kafka-* flags, DLQCTL_KAFKA_PASSWORD):
` + doctorChecks.kafka + `

An SQS queue, and any --archive or --logs (AWS):
` + checkTable(doctor.AWSChecks) + `

The AWS checks (region … permissions) run for SQS queues, --archive and
--logs, and for a bare 'dlqctl doctor'; a RabbitMQ or Kafka reference alone
needs no AWS. --archive s3://… works with every broker's reference.

--role read-only|operator|archivist (comma list, default all): the roles of
'dlqctl help iam' (IAM permissions of SQS, S3, Logs). A check fails only
when something is missing, denied or unreachable; warnings and not-checked
permissions do not fail.

Statuses: ok, warn, not-checked, fail. On a terminal: a table (CHECK,
STATUS, DETAIL) and the fixes below it. Piped: one line per check, tab-
separated, no header, 5 columns: check, status, resource (an ARN, the
amqp:// or kafka:// reference without credentials, or "-"), detail, fix
("-" when none). -o json: one document (docs/schema/
doctor.schema.json); -o ndjson: one check per line.

Exit 0 when no check fails, 3 when one does, 2 on bad flags.`),
		Example: `  dlqctl doctor                                   # this shell: region, identity, endpoints, state dir, jq
  dlqctl doctor orders-dlq --role read-only       # before triage
  dlqctl doctor amqps://rabbit.internal:5671/prod/orders.dlq   # credentials in DLQCTL_AMQP_USERNAME/_PASSWORD
  dlqctl doctor kafka://b-1.msk.example.com:9098/orders-dlt --kafka-sasl AWS_MSK_IAM
  dlqctl doctor kafka://kafka-1:9092/orders-dlt --archive s3://dlq-archive/orders/
  dlqctl doctor kafka://kafka-1:9092              # the cluster only: reach, TLS, login
  dlqctl doctor orders-dlq --role operator        # before a redrive (destinations: the DLQ's sources)
  dlqctl doctor orders-dlq --role archivist --archive s3://dlq-archive/orders/
  dlqctl doctor orders-dlq --logs /ecs/orders -o json`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Queues = args
			roles, ok := doctor.ParseRoles(role)
			if !ok {
				return errs.BadInputf("--role %q: pass read-only, operator, archivist (a comma list) or all", role)
			}
			opts.Roles = roles
			if opts.Archive != "" && (!strings.HasPrefix(opts.Archive, "s3://") || len(opts.Archive) <= len("s3://")) {
				return errs.BadInputf("--archive %q is not an S3 location; pass s3://BUCKET/PREFIX", opts.Archive)
			}
			for _, q := range opts.Queues {
				if _, err := checkRef(q); err != nil {
					return err
				}
			}
			if opts.To != "" {
				ref, err := checkRef(opts.To)
				if err != nil {
					return err
				}
				if ref.Broker != broker.SQS {
					return errs.BadInputf("--to %s: --to names an SQS destination queue whose IAM permissions doctor checks; for a %s destination run dlqctl doctor %s", ref, brokerTitle(ref.Broker), ref)
				}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return doctorRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&role, "role", "all", "which roles' permissions to check: read-only, operator, archivist (comma list) or all")
	fl.StringVar(&opts.To, "to", "", "destination queue of a redrive or restore (default: the DLQs' source queues)")
	fl.StringVar(&opts.Archive, "archive", "", "archive location to check (s3://BUCKET/PREFIX): s3:ListBucket, s3:GetObject")
	fl.StringArrayVar(&opts.Logs, "logs", nil, "CloudWatch Logs group used with --logs (repeatable): logs:FilterLogEvents")
	return c
}

func doctorRun(ctx context.Context, opts *DoctorOptions) error {
	f := opts.F
	rep, err := doctor.Run(ctx, doctor.Request{Queues: opts.Queues, Roles: opts.Roles, To: opts.To, Archive: opts.Archive, Logs: opts.Logs,
		StateDir: f.StateDir(), StateDirSource: doctor.StateDirSource(f.Opts.StateDir)},
		doctor.Sources{ParseRef: checkRef, BrokerChecks: f.DoctorChecks, AWS: func(ctx context.Context) doctor.AWSEnv { return doctorAWSEnv(ctx, f) }})
	if err != nil {
		return err
	}
	format, _ := f.Format()
	if err := report.WriteDoctor(f.IO, format, rep); err != nil {
		return err
	}
	f.IO.Infof("doctor: %d ok, %d warn, %d not checked, %d failed", rep.Counts[doctor.OK], rep.Counts[doctor.Warn], rep.Counts[doctor.NotChecked], rep.Counts[doctor.Fail])
	if !rep.OK {
		return &errs.Silent{Err: errs.Verdictf("doctor: %d check(s) failed", rep.Counts[doctor.Fail])}
	}
	return nil
}

// doctorAWSEnv is the factory's AWS configuration, endpoints and clients
// for doctor.AWS.
func doctorAWSEnv(ctx context.Context, f *Factory) doctor.AWSEnv {
	region, regionSource := doctor.RegionInUse(ctx, f.Opts.Region, awsconf.ProfileInUse(f.Opts.Profile))
	cfg, cfgErr := f.AWSConfig(ctx)
	return doctor.AWSEnv{
		Config: cfg, ConfigErr: cfgErr, Region: region, RegionSource: regionSource, Profile: awsconf.ProfileInUse(f.Opts.Profile),
		SQSEndpoint:     f.Opts.SQSEndpointOverride(),
		S3Endpoint:      f.Opts.S3EndpointOverride(),
		STSEndpoint:     awsconf.Override("", "STS"),
		SQSEndpointFlag: f.Opts.SQSEndpointFlag(),
		Overrides: doctor.EndpointOverrides([]doctor.Endpoint{{Name: "--endpoint-url", Value: f.Opts.EndpointURL},
			{Name: "--sqs-endpoint-url", Value: f.Opts.SQSEndpointURL}, {Name: "--s3-endpoint-url", Value: f.Opts.S3EndpointURL}}, os.Environ()),
		CredentialError: func(err error) error { return awsconf.CredentialError(err, awsconf.ProfileInUse(f.Opts.Profile)) },
		Parse:           parseQueueRef,
		S3: func(ctx context.Context, bucket string) (doctor.S3API, bool) {
			c, err := f.S3For(ctx, bucket)
			if err != nil {
				c, err = f.S3(ctx)
			}
			return c, err == nil
		},
		Logs: func(ctx context.Context) (doctor.LogsAPI, bool) {
			c, err := f.aws().Logs(ctx)
			return c, err == nil
		},
	}
}

// brokerTitle names a broker as users know it.
func brokerTitle(b string) string {
	switch b {
	case broker.AMQP:
		return "RabbitMQ"
	case broker.Kafka:
		return "Kafka"
	}
	return b
}
