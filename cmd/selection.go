package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// SelectionFlags are the message-selection flags shared by classify,
// redrive and archive: --rules FILE, --class C[,C] and --filter EXPR.
type SelectionFlags struct {
	Filter  string
	Rules   string
	Classes []string
	// MinConfidence is --min-confidence when given (nil: the default,
	// classify.DefaultMinConfidence); omitted from JSON when unset so run
	// fingerprints of runs without it do not change.
	MinConfidence *float64 `json:",omitempty"`
	// Logs is --logs (failure context from CloudWatch Logs); omitted from
	// JSON when unset so run fingerprints of runs without it do not change.
	Logs LogsFlags `json:",omitzero"`
}

// SelectionHelp explains the selection flags for long help texts.
const SelectionHelp = `Selecting messages: --class C[,C] keeps messages the rules put in those
classes (the built-in rules unless --rules FILE is given; see 'dlqctl
classify --help' and 'dlqctl help rules'), only where the decision's
confidence is at least --min-confidence (default 0.6; unknown is always
kept, so a weak guess is never moved as transient); --filter EXPR keeps messages for which
the jq expression is true (it also sees .class, .action and .rule).
A filter or rule that raises an error on a message ('.body | tonumber' on
a text body) does not select it: the message stays where it is and is
counted in the summary (filter_errors; -v prints the first errors). When it
fails on every message read (the first 100, or all of a shorter run), the
command stops with exit 2 before anything moves, naming the expression, the
error and a message id; '(EXPR)?' skips such messages explicitly.
classify, group, redrive and archive also take --logs GROUP[,GROUP]: messages
without failure context of their own are classified by what the consumer's
CloudWatch Logs say about them ('dlqctl help logs'); redrive and archive first
read the queue once, without consuming it, to search the logs in batches.`

// AddFlags registers --filter, --rules and --class on fs.
func (s *SelectionFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Filter, "filter", "", "jq expression over the message record; keep messages where it is true (see 'dlqctl help filters'); a message it raises an error on is not selected and counted, and a filter that fails on every message read stops the command (exit 2) before anything moves")
	fs.StringVar(&s.Rules, "rules", "", "classification rules file (YAML, see 'dlqctl help rules'); default: the built-in rules")
	fs.StringSliceVar(&s.Classes, "class", nil, "keep only messages classified as these classes (comma-separated)")
	fs.Var(minConfidenceValue{&s.MinConfidence}, "min-confidence", fmt.Sprintf("with --class, keep only decisions at or above this confidence (0..1, default %g; unknown is always kept)", classify.DefaultMinConfidence))
}

// MinConf is the --min-confidence in effect.
func (s *SelectionFlags) MinConf() float64 {
	if s.MinConfidence == nil {
		return classify.DefaultMinConfidence
	}
	return *s.MinConfidence
}

// minConfidenceValue is --min-confidence: a number from 0 to 1, remembered
// only when given.
type minConfidenceValue struct{ p **float64 }

func (v minConfidenceValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatFloat(**v.p, 'g', -1, 64)
}

func (v minConfidenceValue) Set(raw string) error {
	x, err := classify.ParseMinConfidence(raw)
	if err != nil {
		return err
	}
	*v.p = &x
	return nil
}

func (v minConfidenceValue) Type() string { return "float" }

// AddLogsFlags registers --logs, --logs-window and --logs-refresh for the
// selection (commands that call prepareLogs or read through newLogsLookup).
func (s *SelectionFlags) AddLogsFlags(fs *pflag.FlagSet) { s.Logs.AddFlags(fs) }

// Selector compiles the flags: the rules file is loaded and validated, the
// filter compiled and every class checked against the rules. Errors are
// bad-input errors (exit 2). It never reads messages.
func (s *SelectionFlags) Selector() (*classify.Selector, error) { return s.selector(false) }

// selector is Selector; with classifyAlways the messages are classified
// (built-in rules unless --rules) even without --class.
func (s *SelectionFlags) selector(classifyAlways bool) (*classify.Selector, error) {
	if err := s.Logs.Validate(); err != nil {
		return nil, err
	}
	return classify.Compile(classify.Spec{Filter: s.Filter, Rules: s.Rules, Classes: s.Classes, MinConfidence: s.MinConf(), Always: classifyAlways})
}

// watchFilterErrors makes -v print the first evaluation errors of sel.
func watchFilterErrors(f *Factory, sel *classify.Selector) { report.WatchFilterErrors(sel, f.Verbosef) }

// warnFilterErrors forwards to report.WarnFilterErrors.
func warnFilterErrors(f *Factory, fe *inspect.FilterErrors, left string) {
	report.WarnFilterErrors(f.IO, fe, left)
}

// endSelection is report.EndSelection on stderr.
func endSelection(f *Factory, sel interface {
	Refusal() error
	Errors() *inspect.FilterErrors
}, left string) (*inspect.FilterErrors, error) {
	return report.EndSelection(f.IO, sel, left)
}

// Active reports whether any selection flag was given.
func (s *SelectionFlags) Active() bool {
	return strings.TrimSpace(s.Filter) != "" || strings.TrimSpace(s.Rules) != "" || len(s.Classes) > 0
}

// LogsFlags are --logs, --logs-window and --logs-refresh: find the failure
// context of plain dead-letter messages in the consumer's CloudWatch Logs
// (package logs). sample, group, classify, redrive and archive take them.
type LogsFlags struct {
	Groups  []string `json:"logs,omitempty"`
	Window  string   `json:"logs_window,omitempty"`
	Refresh bool     `json:"-"`
	// cfg is the flags parsed (Validate): what the lookup is opened with.
	cfg logs.Config
}

// LogsHelp explains --logs for long help texts.
const LogsHelp = `Failure context from the consumer's logs: SQS records no reason when a
redrive policy dead-letters a message. --logs GROUP[,GROUP] searches those
CloudWatch Logs groups for lines that mention each message id (many ids per
FilterLogEvents call, rate-limited, paged, cached under --state-dir) and
attaches the error they report as failure context (failure.format "logs",
failure.source: log group, stream, time, lines). For Lambda consumers a
"processing record" line is followed through its request id to the
invocation's error lines. Messages the logs do not mention stay unknown
("no log line mentions this message"). --logs-window: a duration back from
now (6h, 3d) or FROM..TO in RFC 3339; default from each message's first
send time minus 15 min (6 h on FIFO queues) to now. A group that does not
exist is bad input (exit 2), checked before any message is read. Needs
logs:FilterLogEvents ('dlqctl help logs'); AWS_ENDPOINT_URL_CLOUDWATCH_LOGS sets
the endpoint.`

// AddFlags registers --logs, --logs-window and --logs-refresh on fs.
func (l *LogsFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&l.Groups, "logs", nil, "CloudWatch Logs groups of the consumer to search for the failure of messages without failure context (comma-separated)")
	fs.StringVar(&l.Window, "logs-window", "", "with --logs: time range to search: a duration back from now (6h, 3d) or FROM..TO (RFC 3339); default: each message's first send time minus 15m (6h on FIFO) to now")
	fs.BoolVar(&l.Refresh, "logs-refresh", false, "with --logs: search again instead of using results cached under --state-dir")
}

// Validate checks the flags without any AWS call (bad input: exit 2) and
// keeps them parsed (logs.Config) for the lookup.
func (l *LogsFlags) Validate() error {
	cfg, err := logs.ParseConfig(l.Groups, l.Window, l.Refresh)
	if err != nil {
		return err
	}
	l.cfg = cfg
	return nil
}

// newLogsLookup builds the --logs session of a command from its validated
// flags (Validate), or returns nil without --logs.
func newLogsLookup(ctx context.Context, f *Factory, l *LogsFlags) (*logs.Lookup, error) {
	return openLogsLookup(ctx, f, l.cfg)
}

// openLogsLookup opens the --logs session c asks for (nil without --logs).
func openLogsLookup(ctx context.Context, f *Factory, c logs.Config) (*logs.Lookup, error) {
	if !c.Active() {
		return nil, nil
	}
	api, err := f.aws().Logs(ctx)
	if err != nil {
		return nil, err
	}
	return logs.NewLookup(ctx, f.IO, api, f.StateDir(), c)
}

// prepareLogs readies --logs for a redrive or archive selection
// (logs.Lookup.Prepare) from its validated flags, reading the queue once
// without consuming it. Without --logs it does nothing.
func prepareLogs(ctx context.Context, f *Factory, queueRef string, sel *classify.Selector, l *LogsFlags) error {
	lk, err := openLogsLookup(ctx, f, l.cfg)
	if err != nil || lk == nil {
		return err
	}
	return lk.Prepare(ctx, queueRef, sel, func(fn func(rec *record.Record, parsed any) error) error {
		_, err := f.ForEachRecord(ctx, InputOptions{Queue: queueRef, Visibility: 30 * time.Second}, fn)
		return err
	})
}
