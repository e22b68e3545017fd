package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// A command's --help leads with what an on-call engineer needs first:
//
//	Short
//	Usage:             cobra's use line
//	Addresses:         the reference forms of the brokers the command takes
//	Examples:          one per broker
//	Essential Flags:   the few flags that matter
//	Long               the full description
//	More Examples:     the command's Example
//	Available Commands, Flags (the rest), then the global flags grouped by
//	broker and shown only where they apply, Global Flags, the exit codes in
//	one line pointing to 'dlqctl help exit-codes'.
//
// The section names are cobra's ("Usage:", "Examples:", "Flags:",
// "Global Flags:", "Additional help topics:"). Help topics (exit-codes,
// addresses, filters) are cobra additional help topic commands.

// helpLead is the head of one command's help.
type helpLead struct {
	// arg is what the addresses describe: "DLQ", "QUEUE", "--to QUEUE".
	arg string
	// brokers are the brokers the command's references may name (sqs,
	// amqp, kafka); s3 says it reads or writes archives (s3://).
	brokers []string
	s3      bool
	// forms replaces the broker address lines (queues: what to list).
	forms []string
	// examples: one per broker.
	examples []string
	// flags are the flags that matter, in order.
	flags []string
}

const (
	exSQS   = "orders-dlq"
	exAMQP  = "amqp://ops@rabbit.internal:5672/%2f/orders.dlq"
	exKafka = "kafka://kafka-1:9092/orders.DLT"
	exS3    = "s3://acme-dlq-archive/prod"
	exRun   = "s3://acme-dlq-archive/prod/queue=orders-dlq/dt=2026-11-30/run=20261130T031500Z-ab12cd34/"
)

var allBrokers = []string{"sqs", "amqp", "kafka"}

// helpLeads has an entry for every command that does something
// (TestEveryCommandHasAHelpLead).
var helpLeads = map[string]helpLead{
	"queues": {arg: "what to list", brokers: allBrokers,
		forms: []string{
			"SQS       the account and region of --region / --profile (--prefix P: names starting with P)",
			"RabbitMQ  amqp://USER@HOST:PORT/VHOST/ (a whole vhost; the password in DLQCTL_AMQP_PASSWORD)",
			"Kafka     kafka://HOST:PORT[/PREFIX] (the cluster's topics, or those starting with PREFIX)",
		},
		examples: []string{"dlqctl queues --prefix orders", "dlqctl queues amqp://ops@rabbit.internal:5672/%2f/", "dlqctl queues kafka://kafka-1:9092"},
		flags:    []string{"prefix"}},
	"sample": {arg: "QUEUE", brokers: allBrokers, s3: true,
		examples: []string{"dlqctl sample " + exSQS + " -n 20", "dlqctl sample " + exAMQP + " -n 20", "dlqctl sample " + exKafka + " -n 20 -o ndjson > dlt.ndjson"},
		flags:    []string{"number", "filter", "from", "no-redact"}},
	"group": {arg: "QUEUE", brokers: allBrokers, s3: true,
		examples: []string{"dlqctl group " + exSQS + " --by source,error --all", "dlqctl group " + exAMQP + " --by reason", "dlqctl group " + exKafka + " --by stage --all"},
		flags:    []string{"by", "all", "sample", "filter", "from"}},
	"classify": {arg: "QUEUE", brokers: allBrokers, s3: true,
		examples: []string{"dlqctl classify " + exSQS + " --summary", "dlqctl classify " + exAMQP + " --summary --rules rules.yaml", "dlqctl classify " + exKafka + " --all --class transient -o ndjson"},
		flags:    []string{"summary", "rules", "class", "all", "explain", "from"}},
	"redrive": {arg: "DLQ and --to QUEUE", brokers: allBrokers,
		examples: []string{"dlqctl redrive " + exSQS + " --class transient --dry-run", "dlqctl redrive " + exAMQP + " --class transient --canary 10 --yes", "dlqctl redrive " + exKafka + " --ramp 5,20,50 --max-dest-lag orders-consumer:1000 --yes"},
		flags:    []string{"to", "dry-run", "canary", "class", "filter", "ramp"}},
	"redrive resume": {arg: "--dlq DLQ", brokers: allBrokers,
		examples: []string{"dlqctl redrive resume 20261130T031500-ab12cd --yes", "dlqctl redrive resume --dlq " + exAMQP + " --yes", "dlqctl redrive resume --dlq " + exKafka + " --yes"},
		flags:    []string{"dlq"}},
	"redrive status": {arg: "DLQ", brokers: []string{"sqs"},
		examples: []string{"dlqctl redrive status " + exSQS}},
	"redrive cancel": {arg: "DLQ", brokers: []string{"sqs"},
		examples: []string{"dlqctl redrive cancel " + exSQS + " --yes"}},
	"archive": {arg: "DLQ", brokers: allBrokers, s3: true,
		examples: []string{"dlqctl archive " + exSQS + " --to " + exS3 + " --class permanent --delete --yes", "dlqctl archive " + exAMQP + " --to " + exS3 + " --dry-run", "dlqctl archive " + exKafka + " --to " + exS3 + " --delete --yes"},
		flags:    []string{"to", "dry-run", "delete", "class", "filter", "delete-records"}},
	"archive verify": {arg: "MANIFEST", s3: true,
		examples: []string{"dlqctl archive verify " + exRun}},
	"restore": {arg: "--to QUEUE", brokers: allBrokers, s3: true,
		examples: []string{"dlqctl restore " + exRun + " --to orders --dry-run", "dlqctl restore ./incident-42/ --to amqp://ops@rabbit.internal:5672/%2f/orders --canary 5 --yes", "dlqctl restore ./incident-42/ --to kafka://kafka-1:9092/orders --rate 20 --yes"},
		flags:    []string{"to", "dry-run", "canary", "filter", "rate"}},
	"runs": {examples: []string{"dlqctl runs", "dlqctl runs -o json"}},
	"audit": {arg: "QUEUE", brokers: allBrokers,
		examples: []string{"dlqctl audit --prefix orders --fail-on warn", "dlqctl audit amqp://ops@rabbit.internal:5672/%2f/", "dlqctl audit " + exKafka},
		flags:    []string{"prefix", "fail-on", "investigation-window"}},
	"check": {arg: "DLQ", brokers: allBrokers,
		examples: []string{"dlqctl check " + exSQS + " --max-visible 100 --max-growth 50/5m", "dlqctl check " + exAMQP + " --max-visible 100 --max-age 2h", "dlqctl check " + exKafka + " --max-visible 0"},
		flags:    []string{"max-visible", "max-age", "max-growth"}},
	"watch": {arg: "DLQ", brokers: allBrokers,
		examples: []string{"dlqctl watch " + exSQS, "dlqctl watch " + exAMQP + " --interval 30s", "dlqctl watch " + exKafka + " --count 6 -o ndjson"},
		flags:    []string{"interval", "count"}},
	"ui": {arg: "QUEUE|REF", brokers: allBrokers,
		examples: []string{"dlqctl ui " + exSQS, "dlqctl ui amqp://ops@rabbit.internal:5672/%2f/ --read-only", "dlqctl ui kafka://kafka-1:9092/orders.DLT"},
		flags:    []string{"read-only", "to", "archive-to", "canary"}},
	"doctor": {arg: "QUEUE", brokers: allBrokers, s3: true,
		examples: []string{"dlqctl doctor " + exSQS + " --role operator", "dlqctl doctor " + exAMQP, "dlqctl doctor kafka://b-1.msk.example.com:9098/orders.DLT --kafka-sasl AWS_MSK_IAM"},
		flags:    []string{"role", "to", "archive"}},
}

// addressLines are the reference forms, one line per broker.
var addressLines = map[string]string{
	"sqs":   "SQS       orders-dlq, https://sqs.REGION.amazonaws.com/ACCOUNT/orders-dlq or arn:aws:sqs:REGION:ACCOUNT:orders-dlq",
	"amqp":  "RabbitMQ  amqp://USER@HOST:PORT/VHOST/QUEUE (amqps:// for TLS, %2f for the vhost /; password in DLQCTL_AMQP_PASSWORD)",
	"kafka": "Kafka     kafka://[USER@]HOST:PORT[,HOST:PORT…]/TOPIC (--kafka-tls, --kafka-sasl; password in DLQCTL_KAFKA_PASSWORD)",
	"s3":    "Archive   s3://BUCKET/PREFIX/…/run=ID/ (or its _manifest.json), or a local directory",
}

// flagGroup is a set of global flags shown under its own heading, on the
// commands it applies to.
type flagGroup struct {
	title string
	flags []string
	// applies says whether the group is shown for a command's lead.
	applies func(l helpLead) bool
}

func (l helpLead) takes(b string) bool { return containsStr(l.brokers, b) }

var globalFlagGroups = []flagGroup{
	{"AWS Flags (SQS; also S3 and Kafka's AWS_MSK_IAM)", []string{"region", "profile", "endpoint-url", "sqs-endpoint-url"},
		func(l helpLead) bool { return l.takes("sqs") || l.takes("kafka") || l.s3 }},
	{"S3 Flags (archives)", []string{"s3-endpoint-url", "s3-path-style", "bucket-owner", "requester-pays"},
		func(l helpLead) bool { return l.s3 }},
	{"RabbitMQ Flags (amqp://, amqps://)", []string{"amqp-management-url", "amqp-ca", "amqp-prefetch", "amqp-confirm-window"},
		func(l helpLead) bool { return l.takes("amqp") }},
	{"Kafka Flags (kafka://)", []string{"kafka-tls", "kafka-ca", "kafka-sasl", "kafka-user", "kafka-group"},
		func(l helpLead) bool { return l.takes("kafka") }},
}

// exitCodesLine ends every command's help in place of the full table.
const exitCodesLine = "Exit codes: 0 ok, 1 error, 2 bad input (nothing changed), 3 verdict failed, 4 partial, 130 interrupted; 'dlqctl help exit-codes' says when each happens."

// installHelp makes every command's --help (and 'dlqctl help COMMAND')
// lead with the essentials.
func installHelp(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
}

// writeHelp writes c's help.
func writeHelp(w io.Writer, c *cobra.Command) {
	var b strings.Builder
	defer func() { io.WriteString(w, b.String()) }()
	if !c.Runnable() && !c.HasAvailableSubCommands() {
		// A help topic: its text only, as cobra does.
		b.WriteString(strings.TrimRight(c.Long, " \n") + "\n")
		return
	}
	isRoot := !c.HasParent()
	lead, hasLead := helpLeads[commandName(c)]
	section := func(title, body string) {
		body = strings.TrimRight(body, " \n")
		if body == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if title != "" {
			b.WriteString(title + ":\n")
		}
		b.WriteString(body + "\n")
	}
	if isRoot {
		section("", c.Long)
	} else {
		section("", c.Short)
	}
	var usage []string
	if c.Runnable() {
		usage = append(usage, c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		usage = append(usage, c.CommandPath()+" [command]")
	}
	section("Usage", indent(usage))
	if len(c.Aliases) > 0 {
		section("Aliases", "  "+c.NameAndAliases())
	}
	essential := map[string]bool{}
	if hasLead {
		var forms []string
		switch {
		case lead.forms != nil:
			forms = lead.forms
		default:
			for _, br := range lead.brokers {
				forms = append(forms, addressLines[br])
			}
			if lead.s3 && (lead.arg == "MANIFEST" || lead.arg == "--to QUEUE") {
				forms = append(forms, addressLines["s3"])
			}
		}
		if len(forms) > 0 {
			section(fmt.Sprintf("Addresses of %s ('dlqctl help addresses')", lead.arg), indent(forms))
		}
		section("Examples", indent(lead.examples))
		fs := pflag.NewFlagSet("essential", pflag.ContinueOnError)
		fs.SortFlags = false
		for _, name := range lead.flags {
			if fl := c.Flags().Lookup(name); fl != nil && !fl.Hidden {
				fs.AddFlag(fl)
				essential[name] = true
			}
		}
		section("Essential Flags", fs.FlagUsages())
	}
	if !isRoot {
		section("", c.Long)
	}
	if c.Example != "" {
		title := "Examples"
		if hasLead {
			title = "More Examples"
		}
		section(title, c.Example)
	}
	if c.HasAvailableSubCommands() {
		var lines []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				lines = append(lines, fmt.Sprintf("  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short))
			}
		}
		section("Available Commands", strings.Join(lines, "\n"))
	}

	// Flags: the command's own (minus the essential ones), then the
	// global ones by group, where they apply.
	grouped := map[string]int{}
	for i, g := range globalFlagGroups {
		for _, name := range g.flags {
			grouped[name] = i + 1
		}
	}
	local, global := pflag.NewFlagSet("local", pflag.ContinueOnError), pflag.NewFlagSet("global", pflag.ContinueOnError)
	groups := make([]*pflag.FlagSet, len(globalFlagGroups))
	for i := range groups {
		groups[i] = pflag.NewFlagSet(globalFlagGroups[i].title, pflag.ContinueOnError)
	}
	add := func(fl *pflag.Flag, isLocal bool) {
		switch g := grouped[fl.Name]; {
		case essential[fl.Name]:
		case g > 0:
			if isRoot || (hasLead && globalFlagGroups[g-1].applies(lead)) {
				groups[g-1].AddFlag(fl)
			}
		case isLocal:
			local.AddFlag(fl)
		default:
			global.AddFlag(fl)
		}
	}
	c.LocalFlags().VisitAll(func(fl *pflag.Flag) { add(fl, true) })
	c.InheritedFlags().VisitAll(func(fl *pflag.Flag) { add(fl, false) })
	section("Flags", local.FlagUsages())
	for i, g := range globalFlagGroups {
		section(g.title, groups[i].FlagUsages())
	}
	section("Global Flags", global.FlagUsages())

	if isRoot || c.HasAvailableSubCommands() {
		var topics []string
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				topics = append(topics, fmt.Sprintf("  %-*s %s", sub.CommandPathPadding(), sub.CommandPath(), sub.Short))
			}
		}
		section("Additional help topics", strings.Join(topics, "\n"))
	}
	if c.Runnable() || c.HasAvailableSubCommands() {
		section("", exitCodesLine)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString(fmt.Sprintf("\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath()))
	}
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// helpTopics are the additional help topics: 'dlqctl help exit-codes',
// 'dlqctl help addresses', 'dlqctl help filters'.
func helpTopics(filtersHelp string) []*cobra.Command {
	return []*cobra.Command{
		{Use: "exit-codes", Short: "What each exit code means, for scripts and runbooks", Long: exitCodesHelp},
		{Use: "addresses", Short: "How to name a queue, topic or archive on each broker", Long: addressesHelp},
		{Use: "filters", Short: "How --filter and rule expressions work", Long: filtersHelp},
	}
}

var exitCodesHelp = `Every dlqctl command ends with one of these exit codes (restic, kubectl and
the GitHub CLI do the same); scripts and the runbooks branch on them.

` + errs.ExitCodesHelp + `

What each command does for 3 and 4 is in its --help and in docs/redrive.md
and docs/archive.md. A command that refuses a flag or a reference (2)
says in one sentence on stderr what is wrong and how to fix it, before it
connects to anything.`

const addressesHelp = `A queue, topic or archive is named by one argument (or a flag such as --to,
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
