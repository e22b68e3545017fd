// Package helptext is dlqctl's help content: each command's lead (what
// it takes, on which brokers, its examples and essential flags), the
// reference forms, the global flag groups and the help topics. cmd lays
// it out with internal/helplayout.
package helptext

import (
	"github.com/dlqctl/dlqctl/internal/helplayout"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

const (
	exSQS   = "orders-dlq"
	exAMQP  = "amqp://ops@rabbit.internal:5672/%2f/orders.dlq"
	exKafka = "kafka://kafka-1:9092/orders.DLT"
	exS3    = "s3://acme-dlq-archive/prod"
	exRun   = "s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/"
)

var allBrokers = []string{"sqs", "amqp", "kafka"}

// Leads has an entry for every command that does something
// (TestEveryCommandHasAHelpLead in cmd).
var Leads = map[string]helplayout.Lead{
	"queues": {Arg: "what to list", Brokers: allBrokers,
		Forms: []string{
			"SQS       the account and region of --region / --profile (--prefix P: names starting with P)",
			"RabbitMQ  amqp://USER@HOST:PORT/VHOST/ (a whole vhost; the password in DLQCTL_AMQP_PASSWORD)",
			"Kafka     kafka://HOST:PORT[/PREFIX] (the cluster's topics, or those starting with PREFIX)",
		},
		Examples: []string{"dlqctl queues --prefix orders", "dlqctl queues amqp://ops@rabbit.internal:5672/%2f/", "dlqctl queues kafka://kafka-1:9092"},
		Flags:    []string{"prefix"}},
	"sample": {Arg: "QUEUE", Brokers: allBrokers, S3: true,
		Examples: []string{"dlqctl sample " + exSQS + " -n 20", "dlqctl sample " + exAMQP + " -n 20", "dlqctl sample " + exKafka + " -n 20 -o ndjson > dlt.ndjson"},
		Flags:    []string{"number", "filter", "from", "no-redact"}},
	"group": {Arg: "QUEUE", Brokers: allBrokers, S3: true,
		Examples: []string{"dlqctl group " + exSQS + " --by source,error --all", "dlqctl group " + exAMQP + " --by reason", "dlqctl group " + exKafka + " --by stage --all"},
		Flags:    []string{"by", "all", "sample", "filter", "from"}},
	"classify": {Arg: "QUEUE", Brokers: allBrokers, S3: true,
		Examples: []string{"dlqctl classify " + exSQS + " --summary", "dlqctl classify " + exAMQP + " --summary --rules rules.yaml", "dlqctl classify " + exKafka + " --all --class transient -o ndjson"},
		Flags:    []string{"summary", "rules", "class", "all", "explain", "from"}},
	"redrive": {Arg: "DLQ and --to QUEUE", Brokers: allBrokers,
		Examples: []string{"dlqctl redrive " + exSQS + " --class transient --dry-run", "dlqctl redrive " + exAMQP + " --class transient --canary 10 --yes", "dlqctl redrive " + exKafka + " --ramp 5,20,50 --max-dest-lag orders-consumer:1000 --yes"},
		Flags:    []string{"to", "dry-run", "canary", "class", "filter", "ramp"}},
	"redrive resume": {Arg: "--dlq DLQ", Brokers: allBrokers,
		Examples: []string{"dlqctl redrive resume 20261130T031500-ab12cd --yes", "dlqctl redrive resume --dlq " + exAMQP + " --yes", "dlqctl redrive resume --dlq " + exKafka + " --yes"},
		Flags:    []string{"dlq"}},
	"redrive status": {Arg: "DLQ", Brokers: []string{"sqs"},
		Examples: []string{"dlqctl redrive status " + exSQS}},
	"redrive cancel": {Arg: "DLQ", Brokers: []string{"sqs"},
		Examples: []string{"dlqctl redrive cancel " + exSQS + " --yes"}},
	"archive": {Arg: "DLQ", Brokers: allBrokers, S3: true,
		Examples: []string{"dlqctl archive " + exSQS + " --to " + exS3 + " --class permanent --delete --yes", "dlqctl archive " + exAMQP + " --to " + exS3 + " --dry-run", "dlqctl archive " + exKafka + " --to " + exS3 + " --delete --yes"},
		Flags:    []string{"to", "dry-run", "delete", "class", "filter", "delete-records"}},
	"archive verify": {Arg: "MANIFEST", S3: true,
		Examples: []string{"dlqctl archive verify " + exRun}},
	"restore": {Arg: "--to QUEUE", Brokers: allBrokers, S3: true,
		Examples: []string{"dlqctl restore " + exRun + " --to orders --dry-run", "dlqctl restore ./incident-42/ --to amqp://ops@rabbit.internal:5672/%2f/orders --canary 5 --yes", "dlqctl restore ./incident-42/ --to kafka://kafka-1:9092/orders --rate 20 --yes"},
		Flags:    []string{"to", "dry-run", "canary", "filter", "rate"}},
	"runs": {Examples: []string{"dlqctl runs", "dlqctl runs -o json"}},
	"audit": {Arg: "QUEUE", Brokers: allBrokers,
		Examples: []string{"dlqctl audit --prefix orders --fail-on warn", "dlqctl audit amqp://ops@rabbit.internal:5672/%2f/", "dlqctl audit " + exKafka, "dlqctl audit kafka://kafka-1:9092 --prefix orders"},
		Flags:    []string{"prefix", "fail-on", "investigation-window"}},
	"check": {Arg: "DLQ", Brokers: allBrokers,
		Examples: []string{"dlqctl check " + exSQS + " --max-visible 100 --max-growth 50/5m", "dlqctl check " + exAMQP + " --max-visible 100 --max-age 2h", "dlqctl check " + exKafka + " --max-visible 0"},
		Flags:    []string{"max-visible", "max-age", "max-growth"}},
	"watch": {Arg: "DLQ", Brokers: allBrokers,
		Examples: []string{"dlqctl watch " + exSQS, "dlqctl watch " + exAMQP + " --interval 30s", "dlqctl watch " + exKafka + " --count 6 -o ndjson"},
		Flags:    []string{"interval", "count"}},
	"ui": {Arg: "QUEUE|REF", Brokers: allBrokers,
		Examples: []string{"dlqctl ui " + exSQS, "dlqctl ui amqp://ops@rabbit.internal:5672/%2f/ --read-only", "dlqctl ui kafka://kafka-1:9092/orders.DLT"},
		Flags:    []string{"read-only", "to", "archive-to", "canary"}},
	"doctor": {Arg: "QUEUE", Brokers: allBrokers, S3: true,
		Examples: []string{"dlqctl doctor " + exSQS + " --role operator", "dlqctl doctor " + exAMQP, "dlqctl doctor kafka://b-1.msk.example.com:9098/orders.DLT --kafka-sasl AWS_MSK_IAM", "dlqctl doctor kafka://kafka-1:9092"},
		Flags:    []string{"role", "to", "archive"}},
}

// Addresses are the reference forms, one line per broker.
var Addresses = map[string]string{
	"sqs":   "SQS       orders-dlq, https://sqs.REGION.amazonaws.com/ACCOUNT/orders-dlq or arn:aws:sqs:REGION:ACCOUNT:orders-dlq",
	"amqp":  "RabbitMQ  amqp://USER@HOST:PORT/VHOST/QUEUE (amqps:// for TLS, %2f for the vhost /; password in DLQCTL_AMQP_PASSWORD)",
	"kafka": "Kafka     kafka://[USER@]HOST:PORT[,HOST:PORT…]/TOPIC (--kafka-tls, --kafka-sasl; password in DLQCTL_KAFKA_PASSWORD)",
	"s3":    "Archive   s3://BUCKET/PREFIX/…/run=ID/ (or its _manifest.json), or a local directory",
}

// FlagGroups are the global flags shown under their own heading, on the
// commands whose references they apply to.
var FlagGroups = []helplayout.FlagGroup{
	{Title: "AWS Flags (SQS; also S3 and Kafka's AWS_MSK_IAM)", Flags: []string{"region", "profile", "endpoint-url", "sqs-endpoint-url"},
		Applies: func(l helplayout.Lead) bool { return l.Takes("sqs") || l.Takes("kafka") || l.S3 }},
	{Title: "S3 Flags (archives)", Flags: []string{"s3-endpoint-url", "s3-path-style", "bucket-owner", "requester-pays"},
		Applies: func(l helplayout.Lead) bool { return l.S3 }},
	{Title: "RabbitMQ Flags (amqp://, amqps://)", Flags: []string{"amqp-management-url", "amqp-ca", "amqp-prefetch", "amqp-confirm-window"},
		Applies: func(l helplayout.Lead) bool { return l.Takes("amqp") }},
	{Title: "Kafka Flags (kafka://)", Flags: []string{"kafka-tls", "kafka-ca", "kafka-sasl", "kafka-user", "kafka-group"},
		Applies: func(l helplayout.Lead) bool { return l.Takes("kafka") }},
}

// ExitCodesLine ends every command's help in place of the full table.
const ExitCodesLine = "Exit codes: 0 ok, 1 error, 2 bad input (nothing changed), 3 verdict failed, 4 partial, 130 interrupted; 'dlqctl help exit-codes' says when each happens."

// ExitCodes is 'dlqctl help exit-codes'.
var ExitCodes = `Every dlqctl command ends with one of these exit codes (restic, kubectl and
the GitHub CLI do the same); scripts and the runbooks branch on them.

` + errs.ExitCodesHelp + `

What each command does for 3 and 4 is in its --help and in docs/redrive.md
and docs/archive.md. A command that refuses a flag or a reference (2)
says in one sentence on stderr what is wrong and how to fix it, before it
connects to anything.`

// AddressesHelp is 'dlqctl help addresses'.
const AddressesHelp = `A queue, topic or archive is named by one argument (or a flag such as --to,
--dlq, --from); the form says which broker it is on.

Amazon SQS
  orders-dlq                                         a queue name (also sqs://orders-dlq)
  https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq
                                                     a queue URL (FIPS, legacy and VPC
                                                     endpoint hosts too)
  arn:aws:sqs:eu-west-1:123456789012:orders-dlq      an ARN
  A URL or ARN in another region than --region is refused with the region
  to pass. Credentials come from the AWS chain (--profile, AWS_* variables,
  SSO, instance role); an SQS URL with credentials in it is refused.

RabbitMQ
  amqp://USER@HOST:PORT/VHOST/QUEUE                  a queue (amqps:// for TLS)
  amqp://HOST/QUEUE                                  a queue in the default vhost
  amqp://HOST/VHOST/                                 a whole vhost (queues, audit)
  amqp://HOST/VHOST/?exchange=X&routing_key=K        an exchange to publish to (--to)
  VHOST and QUEUE are URL-encoded: %2f is the default vhost /. Ports
  default to 5672 (amqp) and 5671 (amqps); --amqp-ca adds CA certificates.
  The user comes from the URL or DLQCTL_AMQP_USERNAME, the password from
  DLQCTL_AMQP_PASSWORD. The management API is --amqp-management-url.

Kafka
  kafka://HOST:PORT[,HOST:PORT…]/TOPIC               a topic (bootstrap brokers)
  kafka://USER@HOST:PORT/TOPIC                       with the SASL user (or --kafka-user)
  kafka://HOST:PORT[/PREFIX]                         a cluster's topics (queues)
  TLS with --kafka-tls (--kafka-ca), SASL with --kafka-sasl PLAIN,
  SCRAM-SHA-256, SCRAM-SHA-512 (password in DLQCTL_KAFKA_PASSWORD) or
  AWS_MSK_IAM (the AWS credential chain; turns TLS on). dlqctl's consumer
  group is --kafka-group (default dlqctl-TOPIC).

Archives (archive --to, restore, --from, archive verify)
  s3://BUCKET/PREFIX                                 where archive writes its runs
  s3://BUCKET/PREFIX/queue=Q/dt=DAY/run=ID/          one run (or its _manifest.json)
  ./incident-42/                                     a run copied to a local directory
  --from also takes an NDJSON file of records, or - for stdin.

Passwords and secrets
  A password is never written on the command line, where ps and the shell
  history keep it: DLQCTL_AMQP_PASSWORD and DLQCTL_KAFKA_PASSWORD hold the
  brokers' passwords, the AWS chain holds AWS's. A Kafka reference with a
  password in it is refused (exit 2). A RabbitMQ reference with USER:PASS@
  is still accepted, because AMQP URIs carry credentials by their
  specification and existing scripts pass them so, and 'dlqctl doctor'
  warns about it. Whatever the form, dlqctl never prints a secret: every
  reference and URL flag it shows has its userinfo and its secret-looking
  query parameters (password, token, signature, …) replaced by ***.`
