package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/finding"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
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
	be := &uiBackend{f: f, opts: opts, exe: exe, eps: map[string]broker.Endpoint{}, rules: classify.Builtin(),
		redactor: inspect.NewRedactor(nil)}
	be.prep = ui.NewPreparer(be.rules, be.redactor)
	defer be.close()
	// Diagnostics the readers print while the screen is up would break
	// it: they are kept and printed after.
	var diag lockedBuffer
	errOut := f.IO.ErrOut
	f.IO.ErrOut = &diag
	defer func() {
		f.IO.ErrOut = errOut
		_, _ = io.Copy(errOut, &diag)
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := ui.New(ctx, be, opts.UI, opts.Refresh)
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(f.IO.In), tea.WithOutput(terminalOut(f.IO.Out))}
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

// lockedBuffer is a bytes.Buffer safe for the readers' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Read(p)
}

// uiBackend is ui.Backend over the commands' own readers.
type uiBackend struct {
	f        *Factory
	opts     *UIOptions
	exe      string
	rules    *classify.Rules
	redactor *inspect.Redactor
	prep     *ui.Preparer

	mu  sync.Mutex
	eps map[string]broker.Endpoint
}

func (b *uiBackend) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ep := range b.eps {
		closeEndpoint(ep)
	}
}

// endpoint opens ref once for depth readings and peek warnings.
func (b *uiBackend) endpoint(ctx context.Context, ref string) (broker.Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ep, ok := b.eps[ref]; ok {
		return ep, nil
	}
	ep, err := b.f.Endpoint(ctx, ref)
	if err != nil {
		return nil, err
	}
	b.eps[ref] = ep
	return ep, nil
}

// scope says whether ref names a place to list DLQs in (a RabbitMQ vhost
// amqp://HOST/VHOST/, a Kafka cluster kafka://HOST:PORT or …/) rather than
// one queue.
func uiScope(ref string) bool {
	r, err := broker.ParseRef(ref)
	if err != nil {
		return false
	}
	switch r.Broker {
	case broker.AMQP:
		return strings.HasSuffix(ref, "/")
	case broker.Kafka:
		rest := strings.TrimPrefix(strings.TrimSpace(ref), "kafka://")
		_, path, _ := strings.Cut(rest, "/")
		return path == ""
	}
	return false
}

func (b *uiBackend) ListDLQs(ctx context.Context) ([]ui.DLQ, error) {
	refs := b.opts.Refs
	if len(refs) == 0 {
		refs = []string{""} // the SQS region
	}
	var out []ui.DLQ
	for _, ref := range refs {
		if ref != "" && !uiScope(ref) {
			d := ui.DLQ{Ref: ref, Name: ref, Broker: brokerName(ref)}
			if ep, err := b.endpoint(ctx, ref); err != nil {
				d.Err = err.Error()
			} else {
				d.Name = ep.Name()
				b.fillDepth(ctx, &d)
				d.Warnings = append(d.Warnings, b.audit(ctx, ref, ep)...)
			}
			out = append(out, d)
			continue
		}
		listed, err := b.list(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, listed...)
	}
	return out, nil
}

// list lists the DLQs of a scope ("" for the SQS region) with 'queues'.
func (b *uiBackend) list(ctx context.Context, scope string) ([]ui.DLQ, error) {
	l, _, done, err := b.f.dlqLister(ctx, scope, "")
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := l.ListDLQs(ctx, broker.ListOptions{Duration: output.Duration})
	if err != nil {
		return nil, err
	}
	var out []ui.DLQ
	for _, it := range res.Items {
		raw, _ := json.Marshal(it)
		var fields struct {
			Name     string   `json:"name"`
			Ref      string   `json:"ref"`
			URL      string   `json:"url"`
			Stage    string   `json:"stage"`
			Warnings []string `json:"warnings"`
		}
		_ = json.Unmarshal(raw, &fields)
		d := ui.DLQ{Name: fields.Name, Warnings: fields.Warnings}
		switch {
		case scope == "":
			d.Ref, d.Broker = fields.URL, "sqs"
		case fields.Ref != "":
			d.Ref, d.Broker = fields.Ref, "rabbitmq"
		default:
			hosts, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(scope), "kafka://"), "/")
			d.Ref, d.Broker = "kafka://"+hosts+"/"+fields.Name, "kafka"
		}
		for _, w := range res.Warnings {
			if s, ok := strings.CutPrefix(w, fields.Name+": "); ok && !contains(d.Warnings, s) {
				d.Warnings = append(d.Warnings, s)
			}
		}
		if _, err := b.endpoint(ctx, d.Ref); err != nil {
			d.Err = err.Error()
		} else {
			b.fillDepth(ctx, &d)
		}
		out = append(out, d)
	}
	return out, nil
}

// audit is what 'dlqctl audit' finds about one DLQ (warnings and
// errors), from its configuration only: no message is read for it. A
// RabbitMQ queue is audited with its vhost (list it with
// amqp://HOST/VHOST/ to see the vhost's warnings).
func (b *uiBackend) audit(ctx context.Context, ref string, ep broker.Endpoint) []string {
	var a broker.Auditor
	if r, err := broker.ParseRef(ref); err == nil && r.Broker == broker.SQS {
		as, _, _, err := b.f.auditors(ctx, []string{ref}, "", nil)
		if err != nil || len(as) != 1 {
			return nil
		}
		a = as[0]
	} else if x, ok := ep.(broker.Auditor); ok {
		a = x
	} else {
		return nil
	}
	res, err := a.Audit(ctx, broker.AuditOptions{InvestigationWindow: health.DefaultInvestigationWindow})
	if err != nil {
		return []string{"audit: " + err.Error()}
	}
	var out []string
	for _, x := range res.Findings {
		if x.Severity.Rank() >= finding.SevWarn.Rank() && (x.Queue == ep.Name() || x.Related == ep.Name()) {
			out = append(out, x.Problem)
		}
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func brokerName(ref string) string {
	r, err := broker.ParseRef(ref)
	if err != nil {
		return "?"
	}
	switch r.Broker {
	case broker.AMQP:
		return "rabbitmq"
	case broker.Kafka:
		return "kafka"
	}
	return "sqs"
}

func (b *uiBackend) fillDepth(ctx context.Context, d *ui.DLQ) {
	dd, err := b.Depth(ctx, d.Ref)
	if err != nil {
		d.Err = err.Error()
		return
	}
	d.Depth = dd
}

func (b *uiBackend) Depth(ctx context.Context, ref string) (ui.Depth, error) {
	ep, err := b.endpoint(ctx, ref)
	if err != nil {
		return ui.Depth{}, err
	}
	r, err := health.ReadDepth(ctx, ep, true)
	if err != nil {
		return ui.Depth{}, err
	}
	return ui.Depth{Ready: r.Ready, Held: r.Held, Exact: r.Exact, Oldest: r.Oldest, OldestKnown: r.OldestKnown, At: time.Now()}, nil
}

// Read is the read of 'group': ForEachPrepared with the built-in rules,
// the group keys of every screen computed per message, records redacted.
func (b *uiBackend) Read(ctx context.Context, ref string, emit func(ui.ReadUpdate)) error {
	f := b.f
	start := ui.ReadUpdate{Start: true}
	if _, toEnd := readsToEnd(ref); !toEnd {
		ep, err := b.endpoint(ctx, ref)
		if err != nil {
			return err
		}
		if w, ok := ep.(broker.PeekWarner); ok {
			start.Warnings = append(start.Warnings, w.PeekWarnings()...)
		}
		if c, ok := ep.(broker.PeekChecker); ok {
			adv, err := c.CheckPeek()
			if err != nil {
				return errs.BadInput(err) // nothing read, nothing held
			}
			start.Warnings = append(start.Warnings, adv.Warnings...)
		}
	}
	if d, err := b.Depth(ctx, ref); err == nil {
		start.Depth = d.Ready + d.Held
	}
	emit(start)
	// The flags were checked against the references' brokers before
	// anything connected (refusals.go: commandRefs "ui").
	in := InputOptions{Queue: ref, Visibility: b.opts.Visibility}
	if !b.opts.All {
		in.Max = b.opts.Sample
	}
	in.Prepare = func(rec *record.Record, parsed any) any { return b.prep.Item(rec, parsed) }
	var batch []ui.Item
	last := time.Now()
	read := 0
	res, err := f.ForEachPrepared(ctx, in, func(_ *record.Record, _, prepared any) error {
		read++
		batch = append(batch, *prepared.(*ui.Item))
		if len(batch) >= 256 || time.Since(last) >= 100*time.Millisecond {
			emit(ui.ReadUpdate{Items: batch})
			batch, last = nil, time.Now()
		}
		return nil
	})
	end := ui.ReadUpdate{End: true, Items: batch, Err: err}
	switch {
	case res != nil && res.Scan != nil:
		end.Complete, end.Note = res.Scan.Complete, res.Scan.Note
		if (end.Note == "" || end.Note == "sample") && !end.Complete && !b.opts.All {
			end.Note = fmt.Sprintf("a sample of --sample %d; --all reads everything", b.opts.Sample)
		}
	case err == nil:
		// Read to the end offsets taken at the start (Kafka), unless
		// --sample stopped it.
		end.Complete = b.opts.All || read < b.opts.Sample
		if !end.Complete {
			end.Note = fmt.Sprintf("a sample of --sample %d; --all reads everything", b.opts.Sample)
		}
	}
	if errors.Is(err, context.Canceled) {
		end.Err, end.Note = nil, "stopped"
	}
	emit(end)
	return nil
}

// Describe is the message screen: the body pretty-printed, the decoded
// payload, the explanation of 'classify --explain', the origin.
func (b *uiBackend) Describe(rec *record.Record) ui.Detail {
	r := *rec
	if b.redactor != nil {
		r = b.redactor.Record(r) // already masked by the read; never shown raw
	}
	parsed := inspect.Decode(&r)
	var d ui.Detail
	var body bytes.Buffer
	if json.Indent(&body, []byte(r.Body), "", "  ") == nil {
		d.Body = body.String()
	} else {
		d.Body = r.Body
	}
	if r.PayloadEncoding != "" && r.PayloadEncoding != "json" && r.PayloadEncoding != "text" {
		if p := inspect.PayloadOf(&r, parsed); p != nil {
			if pb, err := json.MarshalIndent(p, "", "  "); err == nil {
				d.Body += "\n\ndecoded payload (" + r.PayloadEncoding + "):\n" + string(pb)
			}
		}
	}
	found := b.rules.Explain(&r, parsed)
	var ex bytes.Buffer
	report.WriteExplanation(&ex, r, found, classify.DefaultMinConfidence, b.redactor)
	d.Explain = ex.String()
	d.Origin = r.SourceQueue()
	if d.Origin == "" {
		d.Origin = "(no source recorded: the DLQ's only source queue, if it has one; else --to QUEUE)"
	}
	return d
}

// Run runs dlqctl ARGS as a child process of this binary and reports its
// NDJSON events.
func (b *uiBackend) Run(ctx context.Context, args []string, event func(ui.RunEvent)) ui.RunResult {
	c := exec.Command(b.exe, args...)
	c.Stdin = nil
	var stderr lockedBuffer
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		return ui.RunResult{Code: -1, Err: err}
	}
	if err := c.Start(); err != nil {
		return ui.RunResult{Code: -1, Err: err}
	}
	// Ctrl-C in the UI stops the child the way Ctrl-C stops it in a
	// shell: SIGINT, then it finishes its batch and prints its summary.
	stop := context.AfterFunc(ctx, func() { _ = c.Process.Signal(syscall.SIGINT) })
	defer stop()
	var res ui.RunResult
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		typ, _ := m["type"].(string)
		if typ == "summary" || typ == "" {
			res.Summary = m
		}
		event(ui.RunEvent{Type: typ, Fields: m})
	}
	err = c.Wait()
	res.Code = 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
		if res.Code < 0 {
			res.Code = errs.ExitInterrupted
		}
	case err != nil:
		res.Code, res.Err = -1, err
	}
	var all bytes.Buffer
	_, _ = io.Copy(&all, &stderr)
	res.Stderr = all.String()
	return res
}
