package cmd

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/logs"
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
func readRecords(ctx context.Context, f *Factory, q string, r *ReadFlags, lk *logs.Lookup, pre func(rec *record.Record, parsed any) any, fn recordFunc) (*report.ReadAccount, error) {
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
		streamed, flush = lk.Stream(func(rec *record.Record, parsed any) error {
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
	lk.Summary()
	if err != nil {
		return nil, err
	}
	out := &report.ReadAccount{Read: read, Complete: !stoppedEarly}
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
