package logs

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Config is --logs, --logs-window and --logs-refresh as typed values
// (ParseConfig): the log groups (split, blanks and repeats left out), the
// window and whether cached results are ignored. The zero Config is no
// --logs.
type Config struct {
	Groups  []string
	Window  Window
	Refresh bool
}

// ParseConfig checks and parses --logs (groups), --logs-window and
// --logs-refresh without any AWS call (bad input: exit 2).
func ParseConfig(groups []string, window string, refresh bool) (Config, error) {
	gs := SplitGroups(groups)
	if len(gs) == 0 {
		if strings.TrimSpace(window) != "" || refresh {
			return Config{}, errs.BadInputf("--logs-window and --logs-refresh need --logs LOG_GROUP")
		}
		return Config{}, nil
	}
	for _, g := range gs {
		if !ValidGroup(g) {
			return Config{}, errs.BadInputf("--logs %q is not a CloudWatch Logs group name (1-512 characters: letters, digits, _ - / . # and the group name only, not an ARN or a URL)", g)
		}
	}
	w, err := ParseWindow(window)
	if err != nil {
		return Config{}, err
	}
	return Config{Groups: gs, Window: w, Refresh: refresh}, nil
}

// Active reports whether c searches any log group (--logs was given).
func (c Config) Active() bool { return len(c.Groups) > 0 }

// Lookup is the --logs session of one command (a Session) and the
// progress and summary it shows on stderr. A nil *Lookup (no --logs) does
// nothing.
type Lookup struct {
	io   *output.IOStreams
	sess *Session
	prog *output.Progress
	ctx  context.Context
}

// NewLookup searches the groups of c through api over its window,
// caching under stateDir unless c.Refresh. It first checks that every
// group exists and may be searched (Finder.CheckGroups): a missing group
// is bad input even when no message will need the logs.
func NewLookup(ctx context.Context, io *output.IOStreams, api API, stateDir string, c Config) (*Lookup, error) {
	lk := &Lookup{io: io, prog: output.NewProgress(io, output.Table), ctx: ctx}
	fd := New(api, Options{
		Groups: c.Groups,
		Cache:  OpenCache(stateDir, c.Groups, c.Window.Spec, c.Refresh),
		OnProgress: func(st Stats) {
			lk.prog.Update(output.Stats{Op: "logs search", Done: int64(st.Messages)}, false)
		},
	})
	if err := fd.CheckGroups(ctx); err != nil {
		return nil, err
	}
	lk.sess = NewSession(fd, c.Window)
	return lk, nil
}

// Stream is Session.Stream (fn itself without --logs).
func (lk *Lookup) Stream(fn func(rec *record.Record, parsed any) error) (wrapped func(rec *record.Record, parsed any) error, flush func() error) {
	if lk == nil {
		return fn, func() error { return nil }
	}
	return lk.sess.Stream(lk.ctx, fn)
}

// One is Session.One (nothing without --logs).
func (lk *Lookup) One(rec *record.Record) error {
	if lk == nil {
		return nil
	}
	return lk.sess.One(lk.ctx, rec)
}

// Summary prints what the search did, on stderr.
func (lk *Lookup) Summary() {
	if lk == nil {
		return
	}
	lk.prog.Done()
	info, warn := lk.sess.Summary()
	if info != "" {
		lk.io.Infof("%s", info)
	}
	if warn != "" {
		lk.io.Warnf("%s", warn)
	}
}

// Selection is what Prepare asks of a run's selection
// (classify.Selector).
type Selection interface {
	Classifies() bool
	Filters() bool
	SetEnrich(fn func(rec *record.Record))
}

// Prepare readies lk for a redrive or archive selection: it reads the
// queue once through read (nothing is consumed, as classify does),
// searches the logs for every message without failure context in batches,
// and makes sel attach the results while the run classifies; a message the
// read did not see is looked up on its own. queueRef names the queue on
// stderr.
func (lk *Lookup) Prepare(ctx context.Context, queueRef string, sel Selection, read func(fn func(rec *record.Record, parsed any) error) error) error {
	if sel == nil || (!sel.Classifies() && !sel.Filters()) {
		lk.io.Warnf("--logs has no effect without --class, --filter or --rules: every message is selected anyway")
		return nil
	}
	var reqs []Request
	now := time.Now()
	name := record.ARNName(queueRef, "sqs")
	if name == "" { // a queue URL or name
		name = queueRef[strings.LastIndex(queueRef, "/")+1:]
	}
	lk.io.Infof("logs: reading %s once (nothing is consumed) to search the logs for its messages in batches", name)
	if err := read(func(rec *record.Record, parsed any) error {
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
	lk.Summary()
	var once sync.Once
	sel.SetEnrich(func(rec *record.Record) {
		if err := lk.One(rec); err != nil {
			// Such a message stays unclassified (unknown): never selected
			// by a class on a guess.
			once.Do(func() { lk.io.Warnf("logs: %v; messages that could not be looked up keep no failure context", err) })
		}
	})
	return nil
}
