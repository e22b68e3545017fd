package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/output"
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
	x, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || x < 0 || x > 1 {
		return fmt.Errorf("--min-confidence %s is outside 0..1: pass a number from 0 to 1 (e.g. 0.9)", strings.TrimSpace(raw))
	}
	*v.p = &x
	return nil
}

func (v minConfidenceValue) Type() string { return "float" }

// AddLogsFlags registers --logs, --logs-window and --logs-refresh for the
// selection (commands that call prepareLogs or read through logsLookup).
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
	filter, err := inspect.CompileFilter(s.Filter)
	if err != nil {
		return nil, err
	}
	var rules *classify.Rules
	if strings.TrimSpace(s.Rules) != "" {
		if rules, err = classify.Load(s.Rules); err != nil {
			return nil, err
		}
	} else if classifyAlways {
		rules = classify.Builtin()
	}
	sel, err := classify.NewSelector(rules, s.Classes, filter)
	if err != nil {
		return nil, err
	}
	if err := sel.SetMinConfidence(s.MinConf()); err != nil {
		return nil, errs.BadInputf("--min-confidence: %v", err)
	}
	return sel, nil
}

// watchFilterErrors makes -v print the first evaluation errors of sel as
// they happen (classify.VerboseErrors of them; the rest are counted).
func watchFilterErrors(f *Factory, sel *classify.Selector) {
	var told atomic.Int32
	sel.OnError(func(e classify.EvalError) {
		more := ""
		if told.Add(1) == classify.VerboseErrors {
			more = fmt.Sprintf(" (the first %d errors are shown; the rest are only counted)", classify.VerboseErrors)
		}
		f.Verbosef("%s; not selected%s", e.Error(), more)
	})
}

// filterErrorsRow forwards to report.FilterErrorsRow (the redrive paths
// call it).
func filterErrorsRow(fe *inspect.FilterErrors, left string) string {
	return report.FilterErrorsRow(fe, left)
}

// warnFilterErrors forwards to report.WarnFilterErrors.
func warnFilterErrors(f *Factory, fe *inspect.FilterErrors, left string) {
	report.WarnFilterErrors(f.IO, fe, left)
}

// endSelection ends the selection of a command that read without moving
// (sample, group, classify, a dry run): the refusal when it failed on every
// message read, else what it failed on (nil: nothing), also said on
// stderr. left says what became of those messages.
func endSelection(f *Factory, sel interface {
	Refusal() error
	Errors() *inspect.FilterErrors
}, left string) (*inspect.FilterErrors, error) {
	if sel == nil {
		return nil, nil
	}
	if err := sel.Refusal(); err != nil {
		return nil, err
	}
	fe := sel.Errors()
	warnFilterErrors(f, fe, left)
	return fe, nil
}

// selectPrepared is the per-record work of a read-only command's
// selection (on the decoding goroutines): the selection's refusal as an
// error value (readRecords stops with it), else whether rec is selected.
func selectPrepared(sel *classify.Selector, rec *record.Record, parsed any) (bool, error) {
	ok, err := sel.Select(rec, parsed)
	if classify.IsRefusal(err) {
		return false, err
	}
	return ok, nil
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
send time minus 15 min (6 h on FIFO queues) to now. Needs
logs:FilterLogEvents ('dlqctl help logs'); AWS_ENDPOINT_URL_CLOUDWATCH_LOGS sets
the endpoint.`

// AddFlags registers --logs, --logs-window and --logs-refresh on fs.
func (l *LogsFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&l.Groups, "logs", nil, "CloudWatch Logs groups of the consumer to search for the failure of messages without failure context (comma-separated)")
	fs.StringVar(&l.Window, "logs-window", "", "with --logs: time range to search: a duration back from now (6h, 3d) or FROM..TO (RFC 3339); default: each message's first send time minus 15m (6h on FIFO) to now")
	fs.BoolVar(&l.Refresh, "logs-refresh", false, "with --logs: search again instead of using results cached under --state-dir")
}

// Active reports whether --logs was given.
func (l *LogsFlags) Active() bool { return len(l.groups()) > 0 }

func (l *LogsFlags) groups() []string { return logs.SplitGroups(l.Groups) }

// Validate checks the flags without any AWS call (bad input: exit 2).
func (l *LogsFlags) Validate() error {
	if !l.Active() {
		if strings.TrimSpace(l.Window) != "" || l.Refresh {
			return errs.BadInputf("--logs-window and --logs-refresh need --logs LOG_GROUP")
		}
		return nil
	}
	for _, g := range l.groups() {
		if !logs.ValidGroup(g) {
			return errs.BadInputf("--logs %q is not a CloudWatch Logs group name (1-512 characters: letters, digits, _ - / . # and the group name only, not an ARN or a URL)", g)
		}
	}
	_, err := logs.ParseWindow(l.Window)
	return err
}

// logsLookup is a --logs session of one command (logs.Session) and the
// progress and summary it shows on stderr.
type logsLookup struct {
	f    *Factory
	sess *logs.Session
	prog *output.Progress
	ctx  context.Context
}

// newLogsLookup builds the session, or returns nil without --logs.
func newLogsLookup(ctx context.Context, f *Factory, l *LogsFlags) (*logsLookup, error) {
	if !l.Active() {
		return nil, nil
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	w, _ := logs.ParseWindow(l.Window)
	api, err := f.Logs(ctx)
	if err != nil {
		return nil, err
	}
	groups := l.groups()
	lk := &logsLookup{f: f, prog: output.NewProgress(f.IO, output.Table), ctx: ctx}
	lk.sess = logs.NewSession(logs.New(api, logs.Options{
		Groups: groups,
		Cache:  logs.OpenCache(f.StateDir(), groups, w.Spec, l.Refresh),
		OnProgress: func(st logs.Stats) {
			lk.prog.Update(output.Stats{Op: "logs search", Done: int64(st.Messages)}, false)
		},
	}), w)
	return lk, nil
}

// stream is logs.Session.Stream (fn itself without --logs).
func (lk *logsLookup) stream(fn func(rec *record.Record, parsed any) error) (wrapped func(rec *record.Record, parsed any) error, flush func() error) {
	if lk == nil {
		return fn, func() error { return nil }
	}
	return lk.sess.Stream(lk.ctx, fn)
}

// one is logs.Session.One (nothing without --logs).
func (lk *logsLookup) one(rec *record.Record) error {
	if lk == nil {
		return nil
	}
	return lk.sess.One(lk.ctx, rec)
}

// summary prints what the search did, on stderr.
func (lk *logsLookup) summary() {
	if lk == nil {
		return
	}
	lk.prog.Done()
	info, warn := lk.sess.Summary()
	if info != "" {
		lk.f.IO.Infof("%s", info)
	}
	if warn != "" {
		lk.f.IO.Warnf("%s", warn)
	}
}

// prepareLogs readies --logs for a redrive or archive selection: it reads
// the queue once (nothing is consumed, as classify does), searches the
// logs for every message without failure context in batches, and makes
// the selector attach the results while the run classifies; a message the
// read did not see is looked up on its own. Without --logs it does
// nothing.
func prepareLogs(ctx context.Context, f *Factory, queueRef string, sel *classify.Selector, l *LogsFlags) error {
	if !l.Active() {
		return nil
	}
	lk, err := newLogsLookup(ctx, f, l)
	if err != nil {
		return err
	}
	if sel == nil || (!sel.Classifies() && !sel.Filters()) {
		f.IO.Warnf("--logs has no effect without --class, --filter or --rules: every message is selected anyway")
		return nil
	}
	var reqs []logs.Request
	now := time.Now()
	name := record.ARNName(queueRef, "sqs")
	if name == "" { // a queue URL or name
		name = queueRef[strings.LastIndex(queueRef, "/")+1:]
	}
	f.IO.Infof("logs: reading %s once (nothing is consumed) to search the logs for its messages in batches", name)
	if _, err := f.ForEachRecord(ctx, InputOptions{Queue: queueRef, Visibility: 30 * time.Second}, func(rec *record.Record, parsed any) error {
		if !rec.Failure.HasContext() {
			reqs = append(reqs, lk.sess.Request(rec, now))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := lk.sess.Prefetch(ctx, reqs); err != nil {
		return err
	}
	lk.summary()
	var once sync.Once
	sel.SetEnrich(func(rec *record.Record) {
		if err := lk.one(rec); err != nil {
			// Such a message stays unclassified (unknown): never selected
			// by a class on a guess.
			once.Do(func() { f.IO.Warnf("logs: %v; messages that could not be looked up keep no failure context", err) })
		}
	})
	return nil
}
