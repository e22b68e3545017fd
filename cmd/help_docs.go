package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/docs"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// newHelpCmd replaces cobra's help command: `dlqctl help COMMAND` shows a
// command's help as before, and `dlqctl help TOPIC` prints one of the
// documents embedded in the binary (docs/*.md, the runbooks), so an
// installed dlqctl carries its IAM policies and runbooks with it.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND | TOPIC]",
		Short: "Help about a command, or a documentation topic (dlqctl help topics)",
		Long: `Help about any command, or one of the documents built into dlqctl:

  dlqctl help topics          every topic with its title
  dlqctl help iam             the IAM actions per command and the role policies
  dlqctl help runbooks        the on-call runbooks (then: dlqctl help canary-redrive, …)
  dlqctl help redrive.md      a topic whose name is also a command (the command's
                              help is 'dlqctl help redrive')

Links between documents read "(dlqctl help NAME)".`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, sub := range root.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, sub.Name()+"\t"+sub.Short)
				}
			}
			for _, t := range docs.Topics() {
				if strings.HasPrefix(t.Name, toComplete) {
					out = append(out, t.Name+"\t"+t.Title)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runHelp(root, c, args)
		},
	}
}

func runHelp(root, c *cobra.Command, args []string) error {
	out := c.OutOrStdout()
	if len(args) == 0 {
		if err := root.Help(); err != nil {
			return err
		}
		fmt.Fprintln(out, "\nDocumentation built in: 'dlqctl help topics' lists it ('dlqctl help iam', 'dlqctl help runbooks', …).")
		return nil
	}
	if len(args) == 1 && (args[0] == "topics" || args[0] == "docs") {
		writeTopics(c)
		return nil
	}
	name := strings.Join(args, " ")
	// A command wins over a topic of the same name ("redrive", "archive"):
	// its doc stays reachable as NAME.md.
	if sub, rest, err := root.Find(args); err == nil && sub != root && len(rest) == 0 {
		sub.InitDefaultHelpFlag()
		sub.InitDefaultVersionFlag()
		if err := sub.Help(); err != nil {
			return err
		}
		if len(args) == 1 {
			if t, ok := docs.Lookup(args[0]); ok {
				fmt.Fprintf(out, "\nMore in the documentation: dlqctl help %s (%s)\n", strings.TrimPrefix(t.Path, "runbooks/"), t.Title)
			}
		}
		return nil
	}
	if len(args) == 1 {
		if t, ok := docs.Lookup(args[0]); ok {
			text := docs.Text(t)
			fmt.Fprint(out, text)
			if !strings.HasSuffix(text, "\n") {
				fmt.Fprintln(out)
			}
			return nil
		}
	}
	return errs.BadInputf("no command or help topic %q; 'dlqctl help topics' lists the topics and 'dlqctl --help' the commands", name)
}

func writeTopics(c *cobra.Command) {
	out := c.OutOrStdout()
	fmt.Fprintln(out, "Documentation built into dlqctl (dlqctl help NAME):")
	fmt.Fprintln(out)
	for _, runbooks := range []bool{false, true} {
		if runbooks {
			fmt.Fprintln(out, "\nRunbooks (dlqctl help runbooks for the index):")
		}
		for _, t := range docs.Topics() {
			if t.Runbook != runbooks {
				continue
			}
			fmt.Fprintf(out, "  %-22s %s\n", t.Name, t.Title)
		}
	}
}
