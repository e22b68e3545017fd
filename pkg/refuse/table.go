package refuse

import "github.com/dlqctl/dlqctl/pkg/broker"

// The one table of flags only some brokers can honour (see doc.go). A
// flag every broker honours is listed in AnyBrokerFlags;
// cmd's TestEveryFlagDeclaresItsBrokers fails for a flag in neither.
// docs/brokers.md shows the table.

var (
	needRabbitMQ = broker.NeedBroker(broker.AMQP, "RabbitMQ", "amqp://, amqps://")
	needKafka    = broker.NeedBroker(broker.Kafka, "Kafka", "kafka://")
	needSQS      = broker.NeedBroker(broker.SQS, "Amazon SQS", "a queue name, URL or ARN")
)

// Table is the table.
var Table = []Row{
	// Holding messages with a lease.
	{Flag: "visibility", Role: Source, Need: broker.NeedLease},
	{Flag: "wait-inflight", Role: Source, Need: broker.NeedLease},
	// Several workers on one source (Kafka: one per process, for order).
	{Flag: "concurrency", Cmds: []string{"redrive"}, Role: Source, Need: broker.NeedParallelWorkers, Instead: "drop --concurrency (to spread the topic's partitions, run the same command in more processes: they share its consumer group)"},
	// (restore: checked again once the destination is resolved, for an SQS
	// FIFO queue; Checker.ResolvedDest.)
	{Flag: "concurrency", Cmds: []string{"restore"}, Role: Dest, Need: broker.NeedParallelSends},
	// Moving a whole queue server-side.
	{Flag: "engine", Value: "native", Role: Source, Need: broker.NeedNativeMove, Instead: "use --engine dlqctl (the default)"},
	// Kafka's transactions, offsets and consumer groups.
	{Flag: "exactly-once", Role: Source, Need: broker.NeedTransactions},
	{Flag: "delete-records", Role: Source, Need: broker.NeedDeleteByOffset, Instead: "drop --delete-records (--delete removes what was archived)"},
	{Flag: "max-dest-lag", Role: Dest, Need: broker.NeedConsumerLag, Instead: "use --max-dest-backlog N"},
	// A destination's waiting messages, the DLQ's depth.
	{Flag: "max-dest-backlog", Cmds: []string{"redrive"}, Role: Dest, Need: broker.NeedBacklog, Instead: "use --max-dest-lag GROUP:N"},
	{Flag: "max-dest-backlog", Cmds: []string{"restore"}, Role: Dest, Need: broker.NeedBacklog, Instead: "drop --max-dest-backlog and pace the restore with --rate or --ramp"},
	{Flag: "verify-drain", Cmds: []string{"redrive"}, Role: Dest, Need: broker.NeedBacklog, Instead: "drop --verify-drain (--canary still watches the dead-letter topic for copies coming back)"},
	{Flag: "max-returns", Role: Source, Need: broker.NeedReturnsByDepth, Instead: "use --canary N, which watches the dead-letter topic for the copies coming back"},
	// A restore's canary watches the destination's own DLQ.
	{Flag: "canary", Cmds: []string{"restore"}, Role: Dest, Need: broker.NeedDestinationDLQ, Instead: "restore a first part with --max N, then the rest"},
	{Flag: "verify-for", Cmds: []string{"restore"}, Role: Dest, Need: broker.NeedDestinationDLQ, Instead: "drop --verify-for"},
	{Flag: "verify-poll", Cmds: []string{"restore"}, Role: Dest, Need: broker.NeedDestinationDLQ, Instead: "drop --verify-poll"},
	{Flag: "verify-drain", Cmds: []string{"restore"}, Role: Dest, Need: broker.NeedDestinationDLQ, Instead: "drop --verify-drain"},
	// An SQS DLQ fed by Lambda, SNS or EventBridge (package origins).
	{Flag: "origin", Cmds: []string{"redrive"}, Role: Source, Need: needSQS, Instead: "drop --origin: it names the Lambda function or SNS subscription an SQS DLQ's messages go back to"},
	// CloudWatch Logs by SQS message id.
	{Flag: "logs", Role: Source, Need: broker.NeedLogLookup},
	{Flag: "logs-window", Role: Source, Need: broker.NeedLogLookup, Instead: "drop --logs-window and --logs"},
	{Flag: "logs-refresh", Role: Source, Need: broker.NeedLogLookup, Instead: "drop --logs-refresh and --logs"},
	// Health: retention, saved depth readings, IAM.
	{Flag: "investigation-window", Cmds: []string{"audit"}, Role: Source, Need: broker.NeedRetention},
	{Flag: "sample", Cmds: []string{"audit"}, Role: Source, Need: broker.NeedRetention},
	{Flag: "max-growth", Cmds: []string{"check"}, Role: Source, Need: broker.NeedDepthGrowth, Instead: "use --max-visible (and --max-age)"},
	{Flag: "growth-sample", Cmds: []string{"check"}, Role: Source, Need: broker.NeedDepthGrowth, Instead: "drop --growth-sample and --max-growth"},
	{Flag: "role", Cmds: []string{"doctor"}, Role: Source, Need: broker.NeedIAMActions},
	// Each broker's own connection flags (flags_amqp.go, flags_kafka.go,
	// root.go).
	{Flag: "amqp-management-url", Role: Any, Need: needRabbitMQ},
	{Flag: "amqp-ca", Role: Any, Need: needRabbitMQ},
	{Flag: "amqp-prefetch", Role: Any, Need: needRabbitMQ},
	{Flag: "amqp-confirm-window", Role: Any, Need: needRabbitMQ},
	{Flag: "kafka-tls", Role: Any, Need: needKafka},
	{Flag: "kafka-ca", Role: Any, Need: needKafka},
	{Flag: "kafka-sasl", Role: Any, Need: needKafka},
	{Flag: "kafka-user", Role: Any, Need: needKafka},
	{Flag: "kafka-group", Role: Any, Need: needKafka},
	{Flag: "group", Role: Any, Need: needKafka},
	{Flag: "sqs-endpoint-url", Role: Any, Need: needSQS},
}

// AnyBrokerFlags are the flags every broker honours wherever a command
// has them. The AWS settings (--region, --profile, --endpoint-url,
// --s3-endpoint-url, --s3-path-style, --bucket-owner, --requester-pays)
// are among them: they also configure S3 (archives, --from s3://), and
// --region/--profile the AWS credentials of Kafka's AWS_MSK_IAM.
var AnyBrokerFlags = map[string]bool{
	// root
	"help": true, "version": true, "output": true, "no-color": true, "yes": true, "state-dir": true, "verbose": true,
	"region": true, "profile": true, "endpoint-url": true, "s3-endpoint-url": true, "s3-path-style": true,
	"bucket-owner": true, "requester-pays": true,
	// reading and selecting
	"filter": true, "from": true, "no-redact": true, "redact": true, "number": true, "scan-max": true,
	"all": true, "by": true, "class": true, "min-confidence": true, "rules": true, "sample": true, "explain": true, "summary": true,
	// moving
	"to": true, "dlq": true, "engine": true, "dry-run": true, "max": true, "max-redrives": true, "again": true,
	"canary": true, "verify-for": true, "verify-poll": true, "verify-drain": true,
	"rate": true, "ramp": true, "ramp-every": true, "concurrency": true, "rate-share": true,
	"guard-interval": true, "on-guard": true, "pause-timeout": true,
	// repairing (cmd/transform.go)
	"transform": true, "transform-file": true, "archive-originals": true, "originals-sse": true, "originals-kms-key-id": true,
	// archiving
	"delete": true, "part-records": true, "part-size": true, "sse": true, "kms-key-id": true,
	// health and setup
	"prefix": true, "fail-on": true, "max-age": true, "max-visible": true, "interval": true, "count": true,
	"archive": true,
	// ui
	"read-only": true, "refresh": true, "archive-to": true,
}
