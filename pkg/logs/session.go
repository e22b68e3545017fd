package logs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Session is the --logs search of one command: the finder, the window, and
// the results prefetched for a run's selection (Prefetch).
type Session struct {
	finder *Finder
	window Window
	mu     sync.Mutex
	memo   map[string]*record.Failure
}

// NewSession searches with finder over window.
func NewSession(finder *Finder, window Window) *Session {
	return &Session{finder: finder, window: window}
}

// Attach sets rec's failure from a lookup result: failure context found in
// the logs replaces a failure without context; "nothing found" is
// recorded in failure.source so classify can say why the message stays
// unknown.
func Attach(rec *record.Record, fl *record.Failure) {
	if fl == nil || rec.Failure.HasContext() {
		return
	}
	if fl.HasContext() || rec.Failure == nil {
		rec.Failure = fl
		return
	}
	cp := *rec.Failure // a format that records no reason (SNS, CloudEvents, …)
	cp.Source = fl.Source
	rec.Failure = &cp
}

// Stream wraps fn so that records without failure context are looked up
// in batches before fn sees them; call flush at the end. Order is kept.
func (s *Session) Stream(ctx context.Context, fn func(rec *record.Record, parsed any) error) (wrapped func(rec *record.Record, parsed any) error, flush func() error) {
	type item struct {
		rec    record.Record
		parsed any
	}
	var buf []item
	need, size := 0, 0
	emit := func() error {
		var reqs []Request
		now := time.Now()
		for i := range buf {
			if !buf[i].rec.Failure.HasContext() {
				reqs = append(reqs, s.window.Request(&buf[i].rec, now))
			}
		}
		var res map[string]*record.Failure
		if len(reqs) > 0 {
			var err error
			if res, err = s.finder.Lookup(ctx, reqs); err != nil {
				return err
			}
		}
		items := buf
		buf, need, size = nil, 0, 0
		for i := range items {
			if !items[i].rec.Failure.HasContext() {
				Attach(&items[i].rec, res[items[i].rec.MessageID])
			}
			if err := fn(&items[i].rec, items[i].parsed); err != nil {
				return err
			}
		}
		return nil
	}
	wrapped = func(rec *record.Record, parsed any) error {
		buf = append(buf, item{rec: *rec, parsed: parsed})
		size += len(rec.Body)
		if !rec.Failure.HasContext() {
			need++
		}
		// 1,024 messages per lookup: 16 full batches of ids, and the
		// Lambda request ids of all of them in as few calls as possible;
		// fewer when the bodies held back would take more than 64 MiB.
		if need >= DefaultBatch*16 || len(buf) >= 4096 || size >= 64<<20 {
			return emit()
		}
		return nil
	}
	return wrapped, emit
}

// One looks up a single record (for --explain and a message a prefetch
// did not see).
func (s *Session) One(ctx context.Context, rec *record.Record) error {
	if rec.Failure.HasContext() {
		return nil
	}
	s.mu.Lock()
	fl, ok := s.memo[rec.MessageID]
	s.mu.Unlock()
	if !ok {
		res, err := s.finder.Lookup(ctx, []Request{s.window.Request(rec, time.Now())})
		if err != nil {
			return err
		}
		fl = res[rec.MessageID]
	}
	Attach(rec, fl)
	return nil
}

// Request is the search for rec's failure in the session's window.
func (s *Session) Request(rec *record.Record, now time.Time) Request {
	return s.window.Request(rec, now)
}

// Prefetch looks up reqs at once and keeps the results for One.
func (s *Session) Prefetch(ctx context.Context, reqs []Request) error {
	res, err := s.finder.Lookup(ctx, reqs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.memo = res
	s.mu.Unlock()
	return nil
}

// Summary says what the search did (info, "" when it searched for
// nothing) and, when it found nothing for many messages, what to check
// (warn).
func (s *Session) Summary() (info, warn string) {
	st := s.finder.Stats()
	if st.Messages == 0 {
		return "", ""
	}
	cached := ""
	if st.Cached > 0 {
		cached = fmt.Sprintf(" (%d answered from the cache)", st.Cached)
	}
	if st.Checks > 0 {
		cached += fmt.Sprintf(", and %d to check that the group(s) exist", st.Checks)
	}
	info = fmt.Sprintf("logs: searched %s for %d message(s) without failure context: %d found, %d not found; %d FilterLogEvents call(s)%s",
		strings.Join(s.finder.Groups(), ", "), st.Messages, st.Found, st.Messages-st.Found, st.Calls, cached)
	if st.Found == 0 && st.Messages >= 10 {
		warn = fmt.Sprintf("no log line in %s mentions any of the %d messages: check that these are the consumer's log groups (--logs), that the failures were logged in the window searched (--logs-window; default from each message's send time), and that the consumer logs the SQS message id",
			strings.Join(s.finder.Groups(), ", "), st.Messages)
	}
	return info, warn
}

// SplitGroups splits comma-separated --logs values into log group names,
// blanks and repeats left out.
func SplitGroups(values []string) []string {
	var out []string
	for _, g := range values {
		for _, p := range strings.Split(g, ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// ValidGroup reports whether g can be a CloudWatch Logs group name (1-512
// characters: letters, digits, _ - / . #).
func ValidGroup(g string) bool {
	if len(g) == 0 || len(g) > 512 {
		return false
	}
	for _, r := range g {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("_-/.#", r):
		default:
			return false
		}
	}
	return true
}
