package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/ui"
)

// UIOptions are the inputs of `dlqctl ui`.
type UIOptions struct {
	F    *Factory
	Refs []string
	// Read is how much of a DLQ the Groups screen reads.
	Sample     int
	All        bool
	Visibility time.Duration
	Refresh    time.Duration
	UI         ui.Options
	// global are the global flags given, passed on to every child run.
	global []string
}

const uiLong = `A full-screen terminal UI for triage, from a full DLQ to a safe redrive,
over the same code as the commands.

Screens: the dead-letter queues (those given, else the SQS DLQs of the
region; amqp://HOST/VHOST/ lists a RabbitMQ vhost's, kafka://HOST:PORT/ a
Kafka cluster's) with their depth (~ marks SQS's approximate counts), the
oldest message's age where the broker knows it, growth since the UI opened
as a sparkline, and the warnings 'dlqctl queues' gives; one DLQ's messages
grouped by error, class, source, type, encoding or tenant (g switches),
read without consuming them exactly like 'dlqctl group' (SQS and RabbitMQ
messages are held and released at the end of the read, also on exit;
Kafka is read from dlqctl's committed offsets, nothing committed), saying
how much was read; a group's messages; one message with its body
pretty-printed, its attributes or headers, the classification with its
evidence ('classify --explain') and the queue 'redrive --to source' sends
it to.

Actions, on the group at the cursor, the marked messages (space) or a
typed filter (/): d dry run, c canary (--canary, --verify-for), R redrive
(to --to, with --ramp), a archive (--archive-to, with --delete). Each
shows its exact 'dlqctl …' command line, asks, and runs it as a child
process of this binary with -o ndjson: progress, then the summary; the run
leaves the usual journal ('dlqctl runs', 'dlqctl redrive resume'). A group
is selected with --class (class), a filter on the field (source, type,
encoding) or the ids of the messages read (error, tenant). Every command
run is printed again when the UI exits, for the incident log.

--read-only has no action keys. ? lists the keys. Works at 80x24, over
SSH and in tmux; NO_COLOR or --no-color for plain text. Ctrl-C stops a
running action cleanly (its summary is shown), releases what the read
holds and restores the terminal.`

// NewCmdUI builds `dlqctl ui`.
func NewCmdUI(f *Factory, runF func(context.Context, *UIOptions) error) *cobra.Command {
	opts := &UIOptions{F: f}
	var rampEvery time.Duration
	c := &cobra.Command{
		Use:   "ui [QUEUE|REF…]",
		Short: "Full-screen terminal UI: DLQs, groups, messages, and actions as dlqctl command lines",
		Long:  withExitCodes(uiLong),
		Example: `  dlqctl ui
  dlqctl ui orders-dlq --read-only
  dlqctl ui orders-dlq --canary 5 --verify-for 2m --ramp 5,20,50
  dlqctl ui amqp://ops@rabbit:5672/%2f/ kafka://kafka-1:9092/`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Refs = args
			if opts.Sample <= 0 {
				return errs.BadInputf("--sample must be at least 1 (got %d); use --all to read the whole queue", opts.Sample)
			}
			if opts.Visibility < 5*time.Second || opts.Visibility > 12*time.Hour {
				return errs.BadInputf("--visibility must be between 5s and 12h (got %s)", opts.Visibility)
			}
			if opts.UI.Canary < 1 {
				return errs.BadInputf("--canary must be at least 1 (got %d)", opts.UI.Canary)
			}
			if a := opts.UI.ArchiveTo; a != "" && !strings.HasPrefix(a, "s3://") {
				return errs.BadInputf("--archive-to %q is not an s3://BUCKET/PREFIX location", a)
			}
			for _, r := range args {
				if _, err := broker.ParseRef(r); err != nil {
					return err
				}
			}
			if !f.IO.InTTY || !f.IO.OutTTY {
				return errs.BadInputf("dlqctl ui needs a terminal on stdin and stdout; in scripts use 'dlqctl queues', 'group' and 'sample'")
			}
			opts.UI.RampEvery = rampEvery
			opts.UI.NoColor = f.Opts.NoColor || !f.IO.Color
			opts.global = passedGlobalFlags(c.Flags(), c.Root().PersistentFlags())
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return uiRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&opts.UI.ReadOnly, "read-only", false, "no action keys at all: look, never change")
	fl.IntVar(&opts.Sample, "sample", DefaultSample, "read at most N messages of a DLQ for its groups")
	fl.BoolVar(&opts.All, "all", false, "read the whole DLQ for its groups (held invisible until the read ends, then released)")
	fl.DurationVar(&opts.Visibility, "visibility", 30*time.Second, "how long read messages stay hidden between heartbeats")
	fl.DurationVar(&opts.Refresh, "refresh", 10*time.Second, "how often the DLQs screen reads the depths again")
	fl.StringVar(&opts.UI.To, "to", "source", "redrive destination of the actions: source or a queue (t changes it in the UI)")
	fl.IntVar(&opts.UI.Canary, "canary", 10, "messages the canary action moves (10 here, where redrive and restore take 0: the UI offers the canary as an action of its own)")
	fl.DurationVar(&opts.UI.VerifyFor, "verify-for", 0, "the canary action's --verify-for (default: the window its broker computes)")
	fl.StringVar(&opts.UI.Ramp, "ramp", "", "the redrive action's --ramp R1,R2,… (empty here, where redrive shows [] for the same: no ramp)")
	fl.DurationVar(&rampEvery, "ramp-every", 0, "the redrive action's --ramp-every (0 here, where redrive takes 1m: 0 passes none, so redrive's 1m applies)")
	fl.StringVar(&opts.UI.ArchiveTo, "archive-to", "", "s3://BUCKET/PREFIX: enables the archive action (archive --to … --delete)")
	c.MarkFlagsMutuallyExclusive("sample", "all")
	return c
}

// passedGlobalFlags are the global flags given on the command line, as
// arguments for a child run; -o, --yes, --no-color and -v are the UI's own.
func passedGlobalFlags(given, global *pflag.FlagSet) []string {
	var out []string
	given.Visit(func(fl *pflag.Flag) {
		if global.Lookup(fl.Name) == nil {
			return
		}
		switch fl.Name {
		case "output", "yes", "no-color", "verbose", "help":
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+fl.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return out
}

func uiRun(ctx context.Context, opts *UIOptions) error {
	f := opts.F
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find dlqctl's own binary to run actions with: %w", err)
	}
	opts.UI.Global = opts.global
	be := ui.NewLive(uiSources(f), ui.LiveOptions{Refs: opts.Refs, Sample: opts.Sample, All: opts.All, Visibility: opts.Visibility, Exe: exe})
	defer be.Close()
	// Diagnostics the readers print while the screen is up would break
	// it: they are kept and printed after.
	var diag ui.LockedBuffer
	errOut := f.IO.ErrOut
	f.IO.ErrOut = &diag
	defer func() {
		f.IO.ErrOut = errOut
		_, _ = io.Copy(errOut, &diag)
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := ui.New(ctx, be, opts.UI, opts.Refresh)
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(f.IO.In), tea.WithOutput(output.Terminal(f.IO.Out))}
	if opts.UI.NoColor {
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	p := tea.NewProgram(m, popts...)
	_, runErr := p.Run()
	// Release what the read holds before anything else.
	if m.Reading() {
		fmt.Fprintln(errOut, "dlqctl ui: releasing the messages the read holds…")
	}
	m.Wait()
	f.IO.ErrOut = errOut
	if log := m.Log(); len(log) > 0 {
		f.IO.Infof("commands run from the UI:")
		for _, e := range log {
			fmt.Fprintf(errOut, "  %s   # exit %d\n", e.CommandLine, e.Code)
		}
	}
	switch {
	case errors.Is(runErr, tea.ErrInterrupted), errors.Is(runErr, context.Canceled) && ctx.Err() != nil:
		return errs.ErrInterrupted
	case errors.Is(runErr, tea.ErrProgramPanic):
		return fmt.Errorf("the UI crashed (the terminal was restored, held messages released): %w", runErr)
	case runErr != nil:
		return runErr
	}
	return nil
}

// uiSources are the factory's endpoints, listers and readers for the
// UI's live backend.
func uiSources(f *Factory) ui.Sources {
	return ui.Sources{
		Endpoint: f.Endpoint,
		Lister: func(ctx context.Context, scope string) (broker.DLQLister, func(), error) {
			l, _, done, err := f.dlqLister(ctx, scope, "")
			return l, done, err
		},
		Auditors: func(ctx context.Context, ref string) ([]broker.Auditor, func(), error) {
			as, _, opened, err := f.auditors(ctx, []string{ref}, "", nil)
			done := func() {
				for _, ep := range opened {
					broker.CloseEndpoint(ep)
				}
			}
			if err != nil {
				done()
				return nil, nil, err
			}
			return as, done, nil
		},
		Reader: f.reader(),
	}
}
