// Package mangen writes dlqctl's man pages (section 1), one per command,
// from the command tree itself (cobra/doc): `make man`.
package mangen

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// Generate writes dlqctl.1 and dlqctl-COMMAND[-SUB].1 for every command
// into dir (created if missing) and returns the pages' file names. The
// help topics (addresses, exit-codes, filters) are sections of
// dlqctl.1: ADDRESSES, EXIT STATUS and FILTERS.
func Generate(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var sink bytes.Buffer
	root := cmd.NewRootCmd(&cmd.Factory{IO: output.Test(strings.NewReader(""), &sink, &sink, false)})
	root.DisableAutoGenTag = true
	var topics []string
	for _, c := range root.Commands() {
		if c.IsAdditionalHelpTopicCommand() {
			topics = append(topics, fmt.Sprintf("%s\n\n%s", strings.ToUpper(manTopicTitle(c.Name())), c.Long))
		}
	}
	root.Long = strings.TrimSpace(root.Long) + "\n\n" + strings.Join(topics, "\n\n")
	header := &doc.GenManHeader{Title: "DLQCTL", Section: "1", Source: "dlqctl " + cmd.Version(), Manual: "dlqctl manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return nil, err
	}
	var pages []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			return
		}
		pages = append(pages, PageName(c))
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return pages, nil
}

// PageName is the file name of c's page: dlqctl-redrive-resume.1.
func PageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
}

func manTopicTitle(name string) string {
	switch name {
	case "exit-codes":
		return "Exit status"
	case "addresses":
		return "Addresses"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}
