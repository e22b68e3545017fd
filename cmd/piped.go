package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/internal/helplayout"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// pipedColumns documents, per command, what a script reading the table
// output through a pipe gets: one tab-separated line per row, no header,
// these columns in this order. A test checks the counts against the real
// output.
var pipedColumns = map[string]struct {
	per  string
	cols []string
}{
	"dlqctl audit":          {"finding", []string{"severity (error, warn, info)", "queue", "check", "problem", "why it matters", "the SetQueueAttributes fix (Attribute=Value)", "the Terraform fix", "the fix in words"}},
	"dlqctl check":          {"threshold", []string{"status (ok, breach, unknown)", "threshold", "value", "limit", "detail (how it was measured)"}},
	"dlqctl queues":         {"DLQ", []string{"DLQ name", "visible", "in flight", "delayed", "retention", "sources: NAME (maxReceiveCount, retention), comma-separated"}},
	"dlqctl sample":         {"message", []string{"message id", "age", "receive count", "source queue [FIFO group]", "event type and version", "error", "body (masked, shortened)"}},
	"dlqctl runs":           {"run", []string{"run id", "started (local time)", "kind (redrive, restore)", "status", "DLQ or archive read", "destination", "sent", "deleted", "maybe twice (copies possibly delivered twice; \"(+N unconfirmed)\": sends a killed process never recorded)", "how to finish it ('-' when nothing is left to do)"}},
	"dlqctl redrive status": {"move task", []string{"status", "moved", "to move", "rate", "destination", "started", "failure"}},
	"dlqctl archive verify": {"part", []string{"part key", "records", "bytes", "SHA-256 (first 16 hex digits)", "status (ok, or FAIL: the problems)"}},
}

// pipedColumnsMore are commands whose piped columns depend on flags.
var pipedColumnsMore = map[string]string{
	"dlqctl classify": `Piped (not a terminal), one tab-separated line per message, no header, 7
columns: message id, class, action, rule, source queue, event, error (never
cut). With --summary, one line per class: class, action, count, share,
[estimated total (95%), only when a sample of a larger queue was read],
oldest, soonest expiry, rules that matched (RULE×N), example message ids.`,
	"dlqctl group": `Piped (not a terminal), one tab-separated line per group, no header: one
column per --by key (in --by order, never cut), count, share, [estimated
total (95%), only when a sample of a larger queue was read], oldest,
soonest expiry, receive counts (min–max), example message ids.`,
	"dlqctl redrive": `Piped (not a terminal): --dry-run prints one tab-separated line per
destination and class — destination ("(skipped)" for skipped messages),
class (or the skip reason), messages; a run's summary is one "key<TAB>value"
line per field (status, moved, resumed, skipped, …).`,
}

// documentPipedColumns appends each command's piped-output description to
// its --help, before the exit codes.
func documentPipedColumns(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		text := ""
		if p, ok := pipedColumns[c.CommandPath()]; ok {
			text = fmt.Sprintf("Piped (not a terminal), one tab-separated line per %s, no header, %d columns: %s.", p.per, len(p.cols), strings.Join(p.cols, "; "))
		} else if t, ok := pipedColumnsMore[c.CommandPath()]; ok {
			text = t
		}
		if text != "" {
			long := c.Long
			if i := strings.Index(long, errs.ExitCodesHelp); i > 0 {
				c.Long = strings.TrimSpace(long[:i]) + "\n\n" + helplayout.Wrap(text, 76) + "\n\n" + long[i:]
			} else {
				c.Long = strings.TrimSpace(long) + "\n\n" + helplayout.Wrap(text, 76)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
