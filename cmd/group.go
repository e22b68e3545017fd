package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/report"
	"github.com/dlqctl/dlqctl/pkg/triage"
)

// GroupOptions are the inputs of `dlqctl group`.
type GroupOptions struct {
	F         *Factory
	Queue     string
	By        []string
	Read      ReadFlags
	Selection SelectionFlags
	// Now is the reference time for ages (default: time.Now).
	Now time.Time
}

// NewCmdGroup builds `dlqctl group`.
func NewCmdGroup(f *Factory, runF func(context.Context, *GroupOptions) error) *cobra.Command {
	opts := &GroupOptions{F: f}
	c := &cobra.Command{
		Use:   "group QUEUE --by KEYS",
		Short: "Count messages by source, event type, error fingerprint, shape, age, …",
		Long: withExitCodes(`Group the messages of a dead-letter queue (or Kafka topic: --by stage reads
its whole retry chain) and count each group: what
failed, from where, since when. Nothing is consumed: messages are read
(held invisible with a heartbeat so each is seen once) and released at the
end, also on Ctrl-C and on errors.

--by takes one or more keys, comma-separated:
` + inspect.GroupKeyNames() + `
or any jq expression over the message record (start it with '.'), e.g.
--by 'source,.attributes.tenant.value'.

Each group shows its count and share, the oldest message's age, the
soonest expiry, the receive-count range and two example message ids,
largest group first. By default a sample of --sample messages (1000) is
read; when the queue holds more, each group's total is estimated with a
95% Wilson interval (marked ~). --all reads every message. On very large
queues the read stops short of the in-flight limit and says so.

` + SelectionHelp + `

` + LogsHelp + `

` + inspect.ExprHelp),
		Example: `  dlqctl group orders-dlq --by source,event_type --all
  dlqctl group orders-dlq --by error
  dlqctl group orders-dlq --by error --logs /aws/lambda/orders-consumer
  dlqctl group orders-dlq --by class,error -o json
  dlqctl group --from dlq.ndjson --by shape,age`,
		Args: queueOrFromArgs(&opts.Read.From),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Queue = args[0]
			}
			if err := opts.Read.validate(c); err != nil {
				return err
			}
			if len(opts.By) == 0 {
				return errs.BadInputf("group needs --by KEYS, e.g. --by source,error; keys: %s", strings.Join(groupKeyList(), ", "))
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return groupRun(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.By, "by", nil, "group keys, comma-separated (named keys or jq expressions)")
	opts.Read.addFlags(c)
	opts.Selection.AddFlags(c.Flags())
	opts.Selection.AddLogsFlags(c.Flags())
	return c
}

func groupKeyList() []string {
	var names []string
	for _, line := range strings.Split(inspect.GroupKeyNames(), "\n") {
		if fs := strings.Fields(line); len(fs) > 0 {
			names = append(names, fs[0])
		}
	}
	return names
}

func groupRun(ctx context.Context, opts *GroupOptions) (retErr error) {
	f := opts.F
	keys, err := inspect.ParseGroupKeys(opts.By)
	if err != nil {
		return err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	needsClass := false
	for _, k := range keys {
		needsClass = needsClass || k.NeedsClass
		opts.Read.chain = opts.Read.chain || k.Name == "stage"
	}
	sel, err := opts.Selection.selector(needsClass)
	if err != nil {
		return err
	}
	watchFilterErrors(f, sel)
	lk, err := newLogsLookup(ctx, f, &opts.Selection.Logs)
	if err != nil {
		return err
	}
	rep, rr, err := triage.Group(ctx, f.reader(), opts.Read.triage(f, opts.Queue, lk), sel, keys, now)
	if err != nil {
		return err
	}
	defer func() { retErr = rr.Finish(retErr) }()
	if rep.FilterErrors, err = endSelection(f, sel, "are left out"); err != nil {
		return err
	}
	f.IO.Infof("%s", rr.Describe(rep.Matched, sel.Describe()))
	format, _ := f.Format()
	return report.WriteGroups(f.IO, format, rep, now)
}
