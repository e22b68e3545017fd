package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// ReadFlags say how much of a queue triage commands read: --sample N or
// --all, with --visibility between heartbeats, or an offline --from file.
// group and classify share them.
type ReadFlags struct {
	// flags are the command's flags, to refuse those the queue's broker
	// cannot honour (refuseFlags).
	flags      *pflag.FlagSet
	Sample     int
	All        bool
	From       string
	Visibility time.Duration
	// sampleSet is true when --sample was given explicitly.
	sampleSet bool
	// chain reads a Kafka topic's whole retry chain (group --by stage).
	chain bool
}

// DefaultSample is how many messages triage reads without --all.
const DefaultSample = 1000

func (r *ReadFlags) addFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.IntVar(&r.Sample, "sample", DefaultSample, "read at most N messages (estimates scale groups to the queue depth)")
	fl.BoolVar(&r.All, "all", false, "read the whole queue (every message once, held invisible until the end, then released); exit 4 when it cannot be read whole (FIFO groups locked behind held messages on AWS, messages a receive whose answer was lost took)")
	fl.StringVar(&r.From, "from", "", fromFlagHelp)
	fl.DurationVar(&r.Visibility, "visibility", 30*time.Second, "how long read messages stay hidden between heartbeats")
	c.MarkFlagsMutuallyExclusive("sample", "all")
}

// validate checks the flags and fills in which were set; args are the
// positional arguments (QUEUE or none with --from).
func (r *ReadFlags) validate(c *cobra.Command) error {
	r.sampleSet = c.Flags().Changed("sample")
	r.flags = c.Flags()
	if r.Sample <= 0 {
		return errs.BadInputf("--sample must be at least 1 (got %d); use --all to read the whole queue", r.Sample)
	}
	if r.Visibility < 5*time.Second || r.Visibility > 12*time.Hour {
		return errs.BadInputf("--visibility must be between 5s and 12h (got %s)", r.Visibility)
	}
	return nil
}

// input returns the InputOptions for queue q.
func (r *ReadFlags) input(q string) InputOptions {
	in := InputOptions{Queue: q, From: r.From, Visibility: r.Visibility, Chain: r.chain,
		Refuse: func(caps broker.Capabilities) error { return refuseFlags(caps, r.flags, false) }}
	if !r.All {
		in.Max = r.Sample
	}
	return in
}

// queueOrFromArgs accepts QUEUE, or no argument with --from.
func queueOrFromArgs(from *string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if *from != "" {
			return exactArgs(0, "no QUEUE with --from")(c, args)
		}
		return exactArgs(1, "one QUEUE (name, URL or ARN), or --from FILE")(c, args)
	}
}

// readResult is what a triage read saw.
type readResult struct {
	Queue    broker.Endpoint
	Read     int  // records read
	Complete bool // the whole queue (or file) was read
	Depth    int  // queue depth at the start (0: unknown)
	Note     string
	// Partial: --all was asked for and the queue could not be read whole
	// (FIFO groups locked behind held messages, messages in flight
	// elsewhere); the command exits 4 after printing what it read.
	Partial bool
}

// finish turns a partial full read into exit 4, after the results were
// printed.
func (rr *readResult) finish(err error) error {
	if err == nil && rr != nil && rr.Partial {
		return errs.Partialf("partial result: %s", rr.Note)
	}
	return err
}

// readRecords streams records for triage: it warns about the side effects
// of peeking, shows progress on a terminal, honours --sample for files too,
// and reports how much of the queue was read.
//
// With lk (--logs), records without failure context are looked up in the
// consumer's logs in batches before fn sees them.
//
// pre, when set, is the command's per-record work (classification, group
// keys): for files and archives it runs in parallel on the decoding
// goroutines (it must be safe for concurrent use on different records);
// with --logs it runs after the record's failure context from the logs is
// attached. fn gets what pre returned, one record at a time, in order.
func readRecords(ctx context.Context, f *Factory, q string, r *ReadFlags, lk *logsLookup, pre func(rec *record.Record, parsed any) any, fn recordFunc) (*readResult, error) {
	if r.From == "" {
		if err := warnPeekSideEffects(ctx, f, q); err != nil {
			return nil, err
		}
	}
	prog := output.NewProgress(f.IO, output.Table)
	depth := 0
	read := 0
	limitFile := r.From != "" && r.sampleSet && !r.All
	stoppedEarly := false
	in := r.input(q)
	var next func(rec *record.Record, parsed, prepared any) error
	flush := func() error { return nil }
	if fn0 := fn; fn0 != nil {
		// A pre that returns an error (a selection's refusal) stops the read.
		fn = func(rec *record.Record, parsed, prepared any) error {
			if err, ok := prepared.(error); ok {
				return err
			}
			return fn0(rec, parsed, prepared)
		}
	}
	if lk == nil {
		in.Prepare, next = pre, fn
	} else {
		// Log lookups batch records and attach their failure context
		// before anything classifies them: pre runs after.
		var streamed func(rec *record.Record, parsed any) error
		streamed, flush = lk.stream(func(rec *record.Record, parsed any) error {
			var prep any
			if pre != nil {
				prep = pre(rec, parsed)
			}
			return fn(rec, parsed, prep)
		})
		next = func(rec *record.Record, parsed, _ any) error { return streamed(rec, parsed) }
	}
	res, err := f.ForEachPrepared(ctx, in, func(rec *record.Record, parsed, prepared any) error {
		read++
		if read%100 == 0 {
			prog.Update(output.Stats{Op: "read", Done: int64(read), Total: int64(depth)}, false)
		}
		if err := next(rec, parsed, prepared); err != nil {
			return err
		}
		if limitFile && read >= r.Sample {
			stoppedEarly = true
			return errStop
		}
		return nil
	})
	prog.Done()
	if err == nil {
		if err = flush(); errors.Is(err, errStop) {
			err = nil
		}
	}
	lk.summary()
	if err != nil {
		return nil, err
	}
	out := &readResult{Read: read, Complete: !stoppedEarly}
	if res.Scan != nil {
		c := res.Scan.Depth
		out.Queue = res.Queue
		out.Depth = int(c.Ready + c.Held + c.Delayed)
		out.Complete = res.Scan.Complete
		out.Note = res.Scan.Note
		switch {
		case res.Scan.Partial():
			// A FIFO queue on AWS hands out nothing more of a group while
			// one of its messages is held: say exactly what was read (with
			// --all, as the error that makes the exit code 4).
			out.Partial = r.All
			if !out.Partial {
				f.IO.Warnf("%s", res.Scan.Note)
			}
		case strings.Contains(res.Scan.Note, "in-flight"):
			f.IO.Warnf("%s: read %d of about %d messages; the results are a bounded sample", res.Scan.Note, read, out.Depth)
		case res.Scan.CountsNote != "":
			// The read is complete (it read until SQS had nothing more to
			// give); the counts are advisory and say so.
			f.IO.Warnf("%s", res.Scan.CountsNote)
		}
		f.Verbosef("read %d distinct messages from %s (depth at start: %d); all released", res.Scan.Seen, res.Queue.Name(), out.Depth)
	}
	return out, nil
}

// describeRead is the one-line account of what was read, for stderr.
func describeRead(r *readResult, matched int, sel *classify.Selector) string {
	var b strings.Builder
	switch {
	case r.Queue == nil:
		fmt.Fprintf(&b, "read %d records", r.Read)
	case r.Complete:
		fmt.Fprintf(&b, "read all %d messages of %s", r.Read, r.Queue.Name())
	case r.Depth > r.Read:
		fmt.Fprintf(&b, "read a sample of %d of about %d messages of %s; totals marked ~ are estimates (95%% Wilson interval)", r.Read, r.Depth, r.Queue.Name())
	default:
		fmt.Fprintf(&b, "read %d messages of %s", r.Read, r.Queue.Name())
	}
	if d := sel.Describe(); d != "all messages" && matched != r.Read {
		fmt.Fprintf(&b, "; %d matched %s", matched, d)
	}
	return b.String()
}

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
	g := inspect.NewGrouper(keys, now)
	sel, err := opts.Selection.selector(g.NeedsClass())
	if err != nil {
		return err
	}
	watchFilterErrors(f, sel)
	lk, err := newLogsLookup(ctx, f, &opts.Selection.Logs)
	if err != nil {
		return err
	}
	for _, k := range keys {
		opts.Read.chain = opts.Read.chain || k.Name == "stage"
	}
	// Classification and the group key values are computed on the decoding
	// goroutines; counting into groups happens in order.
	rr, err := readRecords(ctx, f, opts.Queue, &opts.Read, lk, func(rec *record.Record, parsed any) any {
		ok, err := selectPrepared(sel, rec, parsed)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		return g.Values(rec, parsed)
	}, func(rec *record.Record, _, values any) error {
		if v, ok := values.([]string); ok {
			g.AddValues(rec, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer func() { retErr = rr.finish(retErr) }()
	fe, err := endSelection(f, sel, "are left out")
	if err != nil {
		return err
	}
	groups := g.Groups()
	if !rr.Complete && rr.Queue != nil {
		inspect.AddEstimates(groups, rr.Read, rr.Depth)
	}
	rep := &report.GroupReport{By: make([]string, len(keys)), Selection: sel.Describe(), Read: rr.Read, Matched: g.Total(),
		Complete: rr.Complete, Depth: rr.Depth, Note: rr.Note, Groups: groups, FilterErrors: fe}
	if rr.Queue != nil {
		rep.Queue = rr.Queue.ID()
	}
	for i, k := range keys {
		rep.By[i] = k.Name
	}
	f.IO.Infof("%s", describeRead(rr, g.Total(), sel))
	format, _ := f.Format()
	return report.WriteGroups(f.IO, format, rep, now)
}
