package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// The one table of flags only some brokers can honour. Each entry says
// what the flag needs of a broker (a broker.Need, read from the broker's
// Capabilities) and of which of the command's references: the queue it
// reads (source), the one it sends to (destination), or any of them (a
// broker's own connection flags). The refusal sentence is generated from
// the entry for every broker that lacks the need:
//
//	--delete-records needs a broker that deletes records by offset (Kafka);
//	Amazon SQS removes messages one by one: drop --delete-records
//
// It is checked right after the references are parsed, before anything
// connects (root's PersistentPreRunE calls refuseBrokerFlags), and again
// with the resolved queue's capabilities where they depend on it
// (refuseFlags). A flag every broker honours is listed in anyBrokerFlags;
// TestEveryFlagDeclaresItsBrokers fails for a flag in neither.
// docs/brokers.md shows the table.

// refRole is which of a command's references a flag needs something of.
type refRole int

const (
	// roleSource: the queue or topic the command reads.
	roleSource refRole = iota + 1
	// roleDest: the queue or topic the command sends to.
	roleDest
	// roleAny: any reference of the command (a broker's connection flags).
	roleAny
)

// flagNeed is one row of the table.
type flagNeed struct {
	// Flag is the flag's name, without "--".
	Flag string
	// Value, when set, limits the row to that value ("--engine native").
	Value string
	// Cmds, when set, limits the row to these commands (their paths
	// without "dlqctl ": "audit", "redrive status").
	Cmds []string
	Role refRole
	Need broker.Need
	// Instead is the way out; "drop --FLAG" when empty.
	Instead string
}

var (
	needRabbitMQ = broker.NeedBroker(broker.AMQP, "RabbitMQ", "amqp://, amqps://")
	needKafka    = broker.NeedBroker(broker.Kafka, "Kafka", "kafka://")
	needSQS      = broker.NeedBroker(broker.SQS, "Amazon SQS", "a queue name, URL or ARN")
)

// flagNeeds is the table.
var flagNeeds = []flagNeed{
	// Holding messages with a lease.
	{Flag: "visibility", Role: roleSource, Need: broker.NeedLease},
	{Flag: "wait-inflight", Role: roleSource, Need: broker.NeedLease},
	// Moving a whole queue server-side.
	{Flag: "engine", Value: "native", Role: roleSource, Need: broker.NeedNativeMove, Instead: "use --engine dlqctl (the default)"},
	// Kafka's transactions, offsets and consumer groups.
	{Flag: "exactly-once", Role: roleSource, Need: broker.NeedTransactions},
	{Flag: "delete-records", Role: roleSource, Need: broker.NeedDeleteByOffset, Instead: "drop --delete-records (--delete removes what was archived)"},
	{Flag: "max-dest-lag", Role: roleDest, Need: broker.NeedConsumerLag, Instead: "use --max-dest-backlog N"},
	// A destination's waiting messages, the DLQ's depth.
	{Flag: "max-dest-backlog", Cmds: []string{"redrive"}, Role: roleDest, Need: broker.NeedBacklog, Instead: "use --max-dest-lag GROUP:N"},
	{Flag: "max-dest-backlog", Cmds: []string{"restore"}, Role: roleDest, Need: broker.NeedBacklog, Instead: "drop --max-dest-backlog and pace the restore with --rate or --ramp"},
	{Flag: "verify-drain", Cmds: []string{"redrive"}, Role: roleDest, Need: broker.NeedBacklog, Instead: "drop --verify-drain (--canary still watches the dead-letter topic for copies coming back)"},
	{Flag: "max-returns", Role: roleSource, Need: broker.NeedReturnsByDepth, Instead: "use --canary N, which watches the dead-letter topic for the copies coming back"},
	// A restore's canary watches the destination's own DLQ.
	{Flag: "canary", Cmds: []string{"restore"}, Role: roleDest, Need: broker.NeedDestinationDLQ, Instead: "restore a first part with --max N, then the rest"},
	{Flag: "verify-for", Cmds: []string{"restore"}, Role: roleDest, Need: broker.NeedDestinationDLQ, Instead: "drop --verify-for"},
	{Flag: "verify-poll", Cmds: []string{"restore"}, Role: roleDest, Need: broker.NeedDestinationDLQ, Instead: "drop --verify-poll"},
	{Flag: "verify-drain", Cmds: []string{"restore"}, Role: roleDest, Need: broker.NeedDestinationDLQ, Instead: "drop --verify-drain"},
	// An SQS DLQ fed by Lambda, SNS or EventBridge (package origins).
	{Flag: "origin", Cmds: []string{"redrive"}, Role: roleSource, Need: needSQS, Instead: "drop --origin: it names the Lambda function or SNS subscription an SQS DLQ's messages go back to"},
	// CloudWatch Logs by SQS message id.
	{Flag: "logs", Role: roleSource, Need: broker.NeedLogLookup},
	{Flag: "logs-window", Role: roleSource, Need: broker.NeedLogLookup, Instead: "drop --logs-window and --logs"},
	{Flag: "logs-refresh", Role: roleSource, Need: broker.NeedLogLookup, Instead: "drop --logs-refresh and --logs"},
	// Health: retention, saved depth readings, IAM.
	{Flag: "investigation-window", Cmds: []string{"audit"}, Role: roleSource, Need: broker.NeedRetention},
	{Flag: "sample", Cmds: []string{"audit"}, Role: roleSource, Need: broker.NeedRetention},
	{Flag: "max-growth", Cmds: []string{"check"}, Role: roleSource, Need: broker.NeedDepthGrowth, Instead: "use --max-visible (and --max-age)"},
	{Flag: "growth-sample", Cmds: []string{"check"}, Role: roleSource, Need: broker.NeedDepthGrowth, Instead: "drop --growth-sample and --max-growth"},
	{Flag: "role", Cmds: []string{"doctor"}, Role: roleSource, Need: broker.NeedIAMActions},
	// Each broker's own connection flags (flags_amqp.go, flags_kafka.go,
	// root.go).
	{Flag: "amqp-management-url", Role: roleAny, Need: needRabbitMQ},
	{Flag: "amqp-ca", Role: roleAny, Need: needRabbitMQ},
	{Flag: "amqp-prefetch", Role: roleAny, Need: needRabbitMQ},
	{Flag: "amqp-confirm-window", Role: roleAny, Need: needRabbitMQ},
	{Flag: "kafka-tls", Role: roleAny, Need: needKafka},
	{Flag: "kafka-ca", Role: roleAny, Need: needKafka},
	{Flag: "kafka-sasl", Role: roleAny, Need: needKafka},
	{Flag: "kafka-user", Role: roleAny, Need: needKafka},
	{Flag: "kafka-group", Role: roleAny, Need: needKafka},
	{Flag: "group", Role: roleAny, Need: needKafka},
	{Flag: "sqs-endpoint-url", Role: roleAny, Need: needSQS},
}

// anyBrokerFlags are the flags every broker honours wherever a command
// has them. The AWS settings (--region, --profile, --endpoint-url,
// --s3-endpoint-url, --s3-path-style, --bucket-owner, --requester-pays)
// are among them: they also configure S3 (archives, --from s3://), and
// --region/--profile the AWS credentials of Kafka's AWS_MSK_IAM.
var anyBrokerFlags = map[string]bool{
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

// cmdRef is one reference of a command: its broker and how it is shown.
type cmdRef struct {
	Broker  string
	Display string
	Role    refRole
	// caps, when set, are the resolved queue's (refuseFlags); else the
	// broker's before anything connects.
	caps *broker.Capabilities
}

// commandRefs says, for every command, where its references are: which
// positional arguments and flags name the queues it reads and sends to.
// A command missing here fails TestEveryFlagDeclaresItsBrokers.
var commandRefs = map[string]func(c *cobra.Command, args []string) []cmdRef{
	"sample":   argRefs(roleSource, false),
	"group":    argRefs(roleSource, false),
	"classify": argRefs(roleSource, false),
	"redrive": func(c *cobra.Command, args []string) []cmdRef {
		refs := argRefs(roleSource, false)(c, args)
		to := flagValue(c, "to")
		switch {
		case strings.EqualFold(strings.TrimSpace(to), "source") || to == "":
			// Each message goes back to its source, on the DLQ's broker.
			for _, r := range refs {
				refs = append(refs, cmdRef{Broker: r.Broker, Display: r.Display, Role: roleDest})
			}
		default:
			refs = append(refs, parseRefs(roleDest, to)...)
		}
		return refs
	},
	"redrive resume": func(c *cobra.Command, _ []string) []cmdRef { return parseRefs(roleSource, flagValue(c, "dlq")) },
	"redrive status": argRefs(roleSource, false),
	"redrive cancel": argRefs(roleSource, false),
	"archive":        argRefs(roleSource, false),
	"archive verify": noRefs,
	"restore":        func(c *cobra.Command, _ []string) []cmdRef { return parseRefs(roleDest, flagValue(c, "to")) },
	"queues":         argRefs(roleSource, true),
	"audit":          argRefs(roleSource, true),
	"check":          argRefs(roleSource, false),
	"watch":          argRefs(roleSource, false),
	"doctor": func(c *cobra.Command, args []string) []cmdRef {
		return append(argRefs(roleSource, true)(c, args), parseRefs(roleDest, flagValue(c, "to"))...)
	},
	"runs":       noRefs,
	"filters":    noRefs,
	"exit-codes": noRefs,
	"addresses":  noRefs,
	"ui":         argRefs(roleSource, true),
}
