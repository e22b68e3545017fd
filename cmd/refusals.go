package cmd

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/refuse"
)

// The cobra side of pkg/refuse, which holds the table of flags only some
// brokers can honour (refuse.Table: what each flag needs of a broker),
// where each command's references are (refuse.CommandRefs) and the
// generated refusal sentences. TestEveryFlagDeclaresItsBrokers checks the
// table against the cobra tree.

// refusals applies the table to the brokers the factory knows.
func refusals() refuse.Checker { return refuse.Checker{Brokers: brokerCapabilities()} }

// capsOf returns the capabilities of broker id before anything connects.
func capsOf(id string) (broker.Capabilities, bool) { return refusals().Caps(id) }

// haveLabels names the brokers that have need ("Amazon SQS and RabbitMQ").
func haveLabels(need broker.Need) string { return refusals().HaveLabels(need) }

// commandName is c's path without the root ("redrive status").
func commandName(c *cobra.Command) string {
	p := c.CommandPath()
	if i := strings.IndexByte(p, ' '); i >= 0 {
		return p[i+1:]
	}
	return ""
}

// given lists the flags of fs the user set, in fs's order.
func given(fs *pflag.FlagSet) []refuse.Given {
	var out []refuse.Given
	if fs != nil {
		fs.Visit(func(fl *pflag.Flag) { out = append(out, refuse.Given{Name: fl.Name, Value: fl.Value.String()}) })
	}
	return out
}

// refuseBrokerFlags refuses, in one sentence naming the broker (exit 2),
// the first flag given to c that a broker of its references cannot
// honour, and a redrive between two brokers. It runs before the command
// does anything (root's PersistentPreRunE): the references are only
// parsed, nothing connects.
func refuseBrokerFlags(c *cobra.Command, args []string) error {
	refsOf, ok := refuse.CommandRefs[commandName(c)]
	if !ok {
		return nil
	}
	flag := func(name string) string {
		if fl := c.Flags().Lookup(name); fl != nil {
			return fl.Value.String()
		}
		return ""
	}
	return refusals().Command(commandName(c), refsOf(args, flag), given(c.Flags()))
}

// refuseFlags checks the flags set in fs (changed by the user) against a
// resolved queue's capabilities (refuse.Checker.Resolved); native says
// --engine native was asked for.
func refuseFlags(caps broker.Capabilities, fs *pflag.FlagSet, native bool) error {
	return refusals().Resolved(caps, given(fs), native)
}

// refuseDestFlags checks the flags set in fs for command cmd against its
// resolved destination's capabilities (refuse.Checker.ResolvedDest).
func refuseDestFlags(cmd string, caps broker.Capabilities, fs *pflag.FlagSet) error {
	return refusals().ResolvedDest(cmd, caps, given(fs))
}

// annotateBrokerFlags adds to the help of every flag in the table which
// brokers honour it ("(Kafka only)").
func annotateBrokerFlags(root *cobra.Command) {
	k := refusals()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := commandName(c)
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) { fl.Usage += k.Only(name, fl.Name, fl.Usage) })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
