package mangen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// TestManPagesBuild: `make man` writes one roff page per command (and
// subcommand), each naming its command and carrying its synopsis and
// options; dlqctl.1 carries the exit status, the addresses and the
// filters, and no page is written for a help topic.
func TestManPagesBuild(t *testing.T) {
	dir := t.TempDir()
	pages, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() || !c.HasParent() {
			want[PageName(c)] = true
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(cmd.NewRootCmd(&cmd.Factory{}))
	for _, must := range []string{"dlqctl.1", "dlqctl-redrive.1", "dlqctl-redrive-resume.1", "dlqctl-archive-verify.1", "dlqctl-restore.1", "dlqctl-doctor.1"} {
		if !want[must] {
			t.Errorf("the command tree has no %s", must)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if len(files) != len(want) || len(pages) != len(want) {
		t.Errorf("%d pages written (%d reported) for %d commands", len(files), len(pages), len(want))
	}
	for name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("no page %s: %v", name, err)
			continue
		}
		page := string(b)
		path := strings.ReplaceAll(strings.TrimSuffix(name, ".1"), "-", " ")
		for _, w := range []string{`.TH "DLQCTL" "1"`, ".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS"} {
			if !strings.Contains(page, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
		if !strings.Contains(strings.ReplaceAll(page, `\-`, "-"), strings.ReplaceAll(path, "completion ", "completion ")) {
			t.Errorf("%s does not name %q", name, path)
		}
	}
	for _, topic := range []string{"dlqctl-exit-codes.1", "dlqctl-addresses.1", "dlqctl-filters.1"} {
		if _, err := os.Stat(filepath.Join(dir, topic)); err == nil {
			t.Errorf("%s written: a help topic is a section of dlqctl.1", topic)
		}
	}
	root, _ := os.ReadFile(filepath.Join(dir, "dlqctl.1"))
	text := strings.ReplaceAll(string(root), `\-`, "-")
	for _, w := range []string{"EXIT STATUS", "130", "ADDRESSES", "arn:aws:sqs:", "kafka://", "FILTERS"} {
		if !strings.Contains(text, w) {
			t.Errorf("dlqctl.1 lacks %q", w)
		}
	}
	if !strings.Contains(text, strings.Split(errs.ExitCodesHelp, "\n")[1][5:]) {
		t.Errorf("dlqctl.1 lacks the exit codes")
	}
	redrive, _ := os.ReadFile(filepath.Join(dir, "dlqctl-redrive.1"))
	if r := strings.ReplaceAll(string(redrive), `\-`, "-"); !strings.Contains(r, "--canary") || !strings.Contains(r, "--kafka-group") {
		t.Errorf("dlqctl-redrive.1 does not list --canary and the inherited --kafka-group")
	}
}
