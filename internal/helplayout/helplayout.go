// Package helplayout renders a cobra command's --help in dlqctl's
// layout: a lead of what an on-call engineer needs first (the addresses
// the command takes, one example per broker, the essential flags), then
// the description, and the global flags grouped by where they apply. The
// commands' leads and flag groups are data the caller gives (cmd).
package helplayout

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// Lead is the head of one command's help.
type Lead struct {
	// Arg is what the addresses describe: "DLQ", "QUEUE", "--to QUEUE".
	Arg string
	// Brokers are the brokers the command's references may name (sqs,
	// amqp, kafka); S3 says it reads or writes archives (s3://).
	Brokers []string
	S3      bool
	// Forms replaces the broker address lines (queues: what to list).
	Forms []string
	// Examples: one per broker.
	Examples []string
	// Flags are the flags that matter, in order.
	Flags []string
}

// Takes says whether the command's references may name broker b.
func (l Lead) Takes(b string) bool { return slices.Contains(l.Brokers, b) }

// FlagGroup is a set of global flags shown under its own heading, on the
// commands it applies to.
type FlagGroup struct {
	Title string
	Flags []string
	// Applies says whether the group is shown for a command's lead.
	Applies func(l Lead) bool
}

// Layout is the help of a command tree.
type Layout struct {
	// Leads are the commands' leads by Name.
	Leads map[string]Lead
	// Name names a command as Leads does ("redrive status").
	Name func(c *cobra.Command) string
	// Addresses are the reference forms, one line per broker, and "s3"
	// for archives (shown for MANIFEST and --to QUEUE).
	Addresses map[string]string
	// Groups are the global flags shown under their own heading.
	Groups []FlagGroup
	// ExitCodes ends every command's help in place of the full table.
	ExitCodes string
}

// Install makes every command's --help (and 'help COMMAND') lead with
// the essentials.
func (lay *Layout) Install(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { lay.Write(c.OutOrStdout(), c) })
}

// Write writes c's help.
func (lay *Layout) Write(w io.Writer, c *cobra.Command) {
	var b strings.Builder
	defer func() { io.WriteString(w, b.String()) }()
	if !c.Runnable() && !c.HasAvailableSubCommands() {
		// A help topic: its text only, as cobra does.
		b.WriteString(strings.TrimRight(c.Long, " \n") + "\n")
		return
	}
	isRoot := !c.HasParent()
	lead, hasLead := lay.Leads[lay.Name(c)]
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
		case lead.Forms != nil:
			forms = lead.Forms
		default:
			for _, br := range lead.Brokers {
				forms = append(forms, lay.Addresses[br])
			}
			if lead.S3 && (lead.Arg == "MANIFEST" || lead.Arg == "--to QUEUE") {
				forms = append(forms, lay.Addresses["s3"])
			}
		}
		if len(forms) > 0 {
			section(fmt.Sprintf("Addresses of %s ('dlqctl help addresses')", lead.Arg), indent(forms))
		}
		section("Examples", indent(lead.Examples))
		fs := pflag.NewFlagSet("essential", pflag.ContinueOnError)
		fs.SortFlags = false
		for _, name := range lead.Flags {
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
	for i, g := range lay.Groups {
		for _, name := range g.Flags {
			grouped[name] = i + 1
		}
	}
	local, global := pflag.NewFlagSet("local", pflag.ContinueOnError), pflag.NewFlagSet("global", pflag.ContinueOnError)
	groups := make([]*pflag.FlagSet, len(lay.Groups))
	for i := range groups {
		groups[i] = pflag.NewFlagSet(lay.Groups[i].Title, pflag.ContinueOnError)
	}
	add := func(fl *pflag.Flag, isLocal bool) {
		switch g := grouped[fl.Name]; {
		case essential[fl.Name]:
		case g > 0:
			if isRoot || (hasLead && lay.Groups[g-1].Applies(lead)) {
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
	for i, g := range lay.Groups {
		section(g.Title, groups[i].FlagUsages())
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
		section("", lay.ExitCodes)
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

// Wrap re-flows a paragraph (keeping existing line breaks of a prepared
// text) to width.
func Wrap(s string, width int) string {
	if strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// Columns renders rows as a help table: two spaces in, every column but
// the last padded to its widest cell, the last wrapped at width under its
// own start.
func Columns(rows [][]string, width int) string {
	var widths []int
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for n, r := range rows {
		if n > 0 {
			b.WriteByte('\n')
		}
		lead := "  "
		for i, c := range r[:len(r)-1] {
			lead += c + strings.Repeat(" ", widths[i]-len(c)) + "  "
		}
		b.WriteString(lead + strings.ReplaceAll(Wrap(r[len(r)-1], max(width-len(lead), 20)), "\n", "\n"+strings.Repeat(" ", len(lead))))
	}
	return b.String()
}
