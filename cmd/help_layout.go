package cmd

import (
	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/internal/helplayout"
	"github.com/dlqctl/dlqctl/internal/helptext"
)

// helpLayout is every command's --help (internal/helplayout): the leads
// of internal/helptext, the global flags by group, the exit codes line.
var helpLayout = &helplayout.Layout{Leads: helptext.Leads, Name: commandName, Addresses: helptext.Addresses,
	Groups: helptext.FlagGroups, ExitCodes: helptext.ExitCodesLine}

// installHelp makes every command's --help (and 'dlqctl help COMMAND')
// lead with the essentials.
func installHelp(root *cobra.Command) { helpLayout.Install(root) }

// helpTopics are the additional help topics: 'dlqctl help exit-codes',
// 'dlqctl help addresses', 'dlqctl help filters'.
func helpTopics(filtersHelp string) []*cobra.Command {
	return []*cobra.Command{
		{Use: "exit-codes", Short: "What each exit code means, for scripts and runbooks", Long: helptext.ExitCodes},
		{Use: "addresses", Short: "How to name a queue, topic or archive on each broker", Long: helptext.AddressesHelp},
		{Use: "filters", Short: "How --filter and rule expressions work", Long: filtersHelp},
	}
}
