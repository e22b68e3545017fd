package cmd

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// How the table in refusals.go is applied: the references of a command,
// the check of each flag given, the generated sentence, and the help that
// says which brokers honour a flag.

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
