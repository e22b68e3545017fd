package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/complete"
	"github.com/dlqctl/dlqctl/pkg/doctor"
)

// Shell completion (dlqctl completion bash|zsh|fish|powershell) completes
// commands and help topics (cobra), the values of the flags that take one
// of a few words (--class, -o, --by, --role, --kafka-sasl, …) and, when a
// connection is configured, queue and topic names from the broker: SQS
// ListQueues (the AWS configuration of the flags and environment),
// RabbitMQ's management API for amqp://HOST/VHOST/…, Kafka's metadata for
// kafka://HOST:PORT/…. A broker that does not answer within
// completeTimeout offers nothing, and says nothing: completion never
// prints an error.

// completeTimeout bounds the broker calls of one completion.
const completeTimeout = 2 * time.Second

// enumFlags are the flags that take one of a few words, with each word's
// description.
var enumFlags = map[string][]string{
	"output":     {"table\ta table on a terminal, tab-separated when piped", "json\tone JSON document", "ndjson\tone JSON value per line"},
	"kafka-sasl": {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "AWS_MSK_IAM\tAmazon MSK IAM (the AWS credential chain; turns TLS on)"},
	"on-guard":   {"abort\tstop the run when a guard trips", "pause\twait for the guard to clear (--pause-timeout)"},
	"engine":     {"dlqctl\tthis pipeline (every broker)", "native\tSQS StartMessageMoveTask"},
	"sse":        {"AES256", "aws:kms", "aws:kms:dsse"},
	"fail-on":    {"error", "warn", "info"},
}

// queueArgCommands take queue references as their arguments (audit and
// doctor several).
var queueArgCommands = map[string]bool{
	"sample": true, "group": true, "classify": true, "redrive": true, "archive": true, "check": true, "watch": true,
	"doctor": true, "audit": true, "redrive status": true, "redrive cancel": true,
}

// queueFlags take a queue reference (redrive's and restore's --to also "source").
var queueFlags = map[string][]string{
	"redrive": {"to"}, "restore": {"to"}, "doctor": {"to"}, "redrive resume": {"dlq"},
}

// installCompletion registers the completion functions of every command.
func installCompletion(root *cobra.Command, f *Factory) {
	for name, words := range enumFlags {
		registerEverywhere(root, name, fixedWords(words))
	}
	registerEverywhere(root, "class", f.completeClasses)
	registerEverywhere(root, "by", completeList(groupKeyList()))
	registerEverywhere(root, "role", completeList(append(append([]string{}, doctor.AllRoles...), "all")))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := commandName(c)
		if queueArgCommands[name] && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 && name != "audit" && name != "doctor" {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return f.completeQueues(c, toComplete)
			}
		}
		for _, fl := range queueFlags[name] {
			withSource := (name == "redrive" || name == "restore") && fl == "to"
			_ = c.RegisterFlagCompletionFunc(fl, func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				out, d := f.completeQueues(c, toComplete)
				if withSource && strings.HasPrefix("source", toComplete) {
					out = append([]string{"source\teach message back to its source queue"}, out...)
				}
				return out, d
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// registerEverywhere registers fn for flag name on every command that has
// it as its own flag (a persistent flag once, on the command defining it).
func registerEverywhere(root *cobra.Command, name string, fn cobra.CompletionFunc) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if fl := c.LocalNonPersistentFlags().Lookup(name); fl != nil || c.PersistentFlags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fn)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

func fixedWords(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return complete.Words(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeList completes a comma-separated list of words (complete.List).
func completeList(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return complete.List(words, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// completeClasses offers the classes of --rules FILE when given (and
// readable), else those of the built-in rules.
func (f *Factory) completeClasses(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	rules := classify.Builtin()
	if fl := c.Flags().Lookup("rules"); fl != nil && fl.Value.String() != "" {
		if r, err := classify.Load(fl.Value.String()); err == nil {
			rules = r
		}
	}
	return completeList(rules.Classes())(c, args, toComplete)
}

// completeQueues offers the queue or topic names starting with toComplete
// from the broker its form names, within completeTimeout; nothing (and no
// error) when the broker cannot be asked.
func (f *Factory) completeQueues(c *cobra.Command, toComplete string) ([]string, cobra.ShellCompDirective) {
	parent := c.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, completeTimeout)
	defer cancel()
	f.Opts.Verbose = false
	return complete.Queues(ctx, toComplete, complete.Sources{SQS: f.completeSQSQueues, AMQP: f.completeAMQPQueues, Kafka: f.completeKafkaTopics}), cobra.ShellCompDirectiveNoFileComp
}
