package cmd

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/output"
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

// triage is the read of a triage command (input.Reader.ReadTriage) of
// queue q, with a progress line on a terminal; --sample limits files too
// when given. With lk (--logs), records without failure context are
// looked up in the consumer's logs in batches before the command's
// per-record work sees them.
func (r *ReadFlags) triage(f *Factory, q string, lk *logs.Lookup) input.Triage {
	prog := output.NewProgress(f.IO, output.Table)
	t := input.Triage{In: r.input(q), All: r.All, Logs: lk,
		Progress:     func(read int) { prog.Update(output.Stats{Op: "read", Done: int64(read)}, false) },
		ProgressDone: prog.Done,
	}
	if r.From != "" && r.sampleSet && !r.All {
		t.FileLimit = r.Sample
	}
	return t
}
