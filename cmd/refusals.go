package cmd

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
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
	"all": true, "by": true, "class": true, "rules": true, "sample": true, "explain": true, "summary": true,
	// moving
	"to": true, "dlq": true, "engine": true, "dry-run": true, "max": true, "max-redrives": true, "again": true,
	"canary": true, "verify-for": true, "verify-poll": true, "verify-drain": true,
	"rate": true, "ramp": true, "ramp-every": true, "concurrency": true, "rate-share": true,
	"guard-interval": true, "on-guard": true, "pause-timeout": true,
	// archiving
	"delete": true, "part-records": true, "part-size": true, "sse": true, "kms-key-id": true,
	// health and setup
	"prefix": true, "fail-on": true, "max-age": true, "max-visible": true, "interval": true, "count": true,
	"archive": true,
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
	"runs":    noRefs,
	"filters": noRefs,
}

func noRefs(*cobra.Command, []string) []cmdRef { return nil }

// argRefs: the positional arguments are references; orSQS: with none, the
// command looks at SQS (queues, audit, doctor without arguments).
func argRefs(role refRole, orSQS bool) func(*cobra.Command, []string) []cmdRef {
	return func(_ *cobra.Command, args []string) []cmdRef {
		if len(args) == 0 && orSQS {
			return []cmdRef{{Broker: broker.SQS, Display: "the account's SQS queues", Role: role}}
		}
		return parseRefs(role, args...)
	}
}

// parseRefs parses references the way every command does; one that does
// not parse is left to the command, which says why.
func parseRefs(role refRole, raw ...string) []cmdRef {
	var out []cmdRef
	for _, s := range raw {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if r, err := broker.ParseRef(s); err == nil {
			out = append(out, cmdRef{Broker: r.Broker, Display: r.Display, Role: role})
		}
	}
	return out
}

func flagValue(c *cobra.Command, name string) string {
	if fl := c.Flags().Lookup(name); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// commandName is c's path without the root ("redrive status").
func commandName(c *cobra.Command) string {
	p := c.CommandPath()
	if i := strings.IndexByte(p, ' '); i >= 0 {
		return p[i+1:]
	}
	return ""
}

// capsOf returns the capabilities of broker id before anything connects.
func capsOf(id string) (broker.Capabilities, bool) {
	for _, c := range brokerCapabilities() {
		if c.Broker == id {
			return c, true
		}
	}
	return broker.Capabilities{}, false
}

// haveLabels names the brokers that have need ("Amazon SQS and RabbitMQ").
func haveLabels(need broker.Need) string {
	var have []string
	for _, c := range brokerCapabilities() {
		if need.Has(c) {
			have = append(have, c.Label)
		}
	}
	switch len(have) {
	case 0:
		return ""
	case 1:
		return have[0]
	}
	return strings.Join(have[:len(have)-1], ", ") + " and " + have[len(have)-1]
}

// needsFor returns the rows for flag fl of command cmd.
func needsFor(cmd, flag string) []flagNeed {
	var out []flagNeed
	for _, n := range flagNeeds {
		if n.Flag != flag {
			continue
		}
		if len(n.Cmds) > 0 && !containsStr(n.Cmds, cmd) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// refusal is row n's sentence for flag (as typed) on caps.
func (n flagNeed) refusal(flag string, caps broker.Capabilities) error {
	instead := n.Instead
	if instead == "" {
		instead = "drop --" + n.Flag
	}
	have := ""
	if n.Role != roleAny {
		have = haveLabels(n.Need)
	}
	return n.Need.Refusal(flag, caps, have, instead)
}

// refuseBrokerFlags refuses, in one sentence naming the broker (exit 2),
// the first flag given to c that a broker of its references cannot
// honour, and a redrive between two brokers. It runs before the command
// does anything (root's PersistentPreRunE): the references are only
// parsed, nothing connects.
func refuseBrokerFlags(c *cobra.Command, args []string) error {
	refsOf, ok := commandRefs[commandName(c)]
	if !ok {
		return nil
	}
	refs := refsOf(c, args)
	if len(refs) == 0 {
		return nil
	}
	if err := refuseCrossBroker(commandName(c), refs); err != nil {
		return err
	}
	var changed []*pflag.Flag
	c.Flags().Visit(func(fl *pflag.Flag) { changed = append(changed, fl) })
	sort.Slice(changed, func(i, j int) bool { return changed[i].Name < changed[j].Name })
	for _, fl := range changed {
		for _, n := range needsFor(commandName(c), fl.Name) {
			if err := n.check(fl, refs); err != nil {
				return err
			}
		}
	}
	return nil
}

// check applies row n to the flag as given and the command's references.
func (n flagNeed) check(fl *pflag.Flag, refs []cmdRef) error {
	flag := "--" + fl.Name
	if n.Value != "" {
		if fl.Value.String() != n.Value {
			return nil
		}
		flag += " " + n.Value
	}
	var first *broker.Capabilities
	for _, r := range refs {
		if n.Role != roleAny && r.Role != n.Role {
			continue
		}
		caps, ok := capsOf(r.Broker)
		if r.caps != nil {
			caps, ok = *r.caps, true
		}
		if !ok {
			continue
		}
		if n.Need.Has(caps) {
			if n.Role == roleAny {
				return nil
			}
			continue
		}
		if n.Role != roleAny {
			return n.refusal(flag, caps)
		}
		if first == nil {
			first = &caps
		}
	}
	if first != nil {
		return n.refusal(flag, *first)
	}
	return nil
}

// refuseCrossBroker refuses a redrive whose destination is on another
// broker than its DLQ: redrive moves messages within one broker (archive
// and restore move them across).
func refuseCrossBroker(cmd string, refs []cmdRef) error {
	if cmd != "redrive" {
		return nil
	}
	var src, dst *cmdRef
	for i := range refs {
		switch {
		case refs[i].Role == roleSource && src == nil:
			src = &refs[i]
		case refs[i].Role == roleDest && dst == nil:
			dst = &refs[i]
		}
	}
	if src == nil || dst == nil || src.Broker == dst.Broker {
		return nil
	}
	sc, _ := capsOf(src.Broker)
	dc, _ := capsOf(dst.Broker)
	return errs.BadInputf("redrive moves messages within one broker: the DLQ %s is on %s and --to %s on %s; redrive --to source or to a destination on %s, or move them across with 'dlqctl archive' and 'dlqctl restore --to %s'",
		src.Display, sc.Label, dst.Display, dc.Label, sc.Label, dst.Display)
}

// refuseFlags checks the flags set in fs (changed by the user) against a
// resolved queue's capabilities, for what depends on the queue itself (a
// RabbitMQ stream holds nothing); native says --engine native was asked
// for. The rows are those of the table about the queue read.
func refuseFlags(caps broker.Capabilities, fs *pflag.FlagSet, native bool) error {
	for _, n := range needsFor("", "engine") {
		if native && !n.Need.Has(caps) {
			return n.refusal("--"+n.Flag+" "+n.Value, caps)
		}
	}
	if fs == nil {
		return nil
	}
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err != nil {
			return
		}
		for _, n := range flagNeeds {
			if n.Flag != fl.Name || len(n.Cmds) > 0 || n.Role != roleSource {
				continue
			}
			if err = n.check(fl, []cmdRef{{Broker: caps.Broker, Role: roleSource, caps: &caps}}); err != nil {
				return
			}
		}
	})
	return err
}

// annotateBrokerFlags adds to the help of every flag in the table which
// brokers honour it ("(Kafka only)"), from the same rows the refusals
// come from, unless the help already starts with that broker's name.
func annotateBrokerFlags(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := commandName(c)
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			rows := needsFor(name, fl.Name)
			if len(rows) == 0 {
				return
			}
			var have []string
			for _, b := range brokerCapabilities() {
				ok := true
				for _, n := range rows {
					ok = ok && n.Need.Has(b)
				}
				if ok {
					have = append(have, b.Label)
				}
			}
			if len(have) == 0 || len(have) == len(brokerCapabilities()) {
				return
			}
			if len(have) == 1 && strings.HasPrefix(fl.Usage, strings.TrimPrefix(have[0], "Amazon ")) {
				return
			}
			only := strings.Join(have, " and ")
			if rows[0].Value != "" {
				only = "--" + fl.Name + " " + rows[0].Value + ": " + only
			}
			fl.Usage += " (" + only + " only)"
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
