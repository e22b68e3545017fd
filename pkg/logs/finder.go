// Package logs finds why a plain dead-letter message failed in the
// consumer's CloudWatch Logs: the log events that mention its message id
// (and, for Lambda consumers, the error lines of the invocation that
// processed it), turned into failure context (failure.format "logs").
//
// It only reads (logs:FilterLogEvents). Many ids are searched with one OR
// pattern per call, calls are rate-limited below the API quota, throttling
// is retried, results are paged through and cached (see Cache).
package logs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwl "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/smithy-go"
	"golang.org/x/time/rate"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// API is the part of the CloudWatch Logs client the finder uses.
type API interface {
	FilterLogEvents(ctx context.Context, in *cwl.FilterLogEventsInput, optFns ...func(*cwl.Options)) (*cwl.FilterLogEventsOutput, error)
}

// NotFoundNote is the reason a message whose logs say nothing stays
// unknown.
const NotFoundNote = "no log line mentions this message"

// NoErrorNote is the reason for a message the logs mention without
// reporting an error.
const NoErrorNote = "log lines mention this message, but none reports an error"

// DefaultRate is the default number of FilterLogEvents calls per second:
// below the API's quota of 5 per second per account and Region, shared
// with everything else in the account that searches logs.
const DefaultRate = 4.0

// LambdaMaxTimeout is how long after a "processing record" line the
// invocation's error lines can appear (Lambda's longest timeout).
const LambdaMaxTimeout = 15 * time.Minute

// Request is one message to look up: its id and the time window to search.
type Request struct {
	MessageID string
	From, To  time.Time
}

// Options configure a Finder.
type Options struct {
	// Groups are the log groups searched, in order; a message found in one
	// is not searched in the next.
	Groups []string
	// Batch is how many ids one call searches (default DefaultBatch; fewer
	// when long ids would exceed the 1024-character pattern limit).
	Batch int
	// Rate is the call rate limit per second (default DefaultRate).
	Rate float64
	// Cache keeps results between runs (nil: no cache).
	Cache *Cache
	// OnProgress is called after every call with the totals so far.
	OnProgress func(Stats)
	// PageLimit caps the events per page (default: the API's 10,000).
	PageLimit int32
}

// Stats count what a finder did.
type Stats struct {
	Messages int // messages looked up (cached ones included)
	Cached   int // answered from the cache
	Found    int // with failure context from the logs
	Calls    int // FilterLogEvents calls (pages included)
	Checks   int // FilterLogEvents calls of CheckGroups (one per group)
	Events   int // log events read
}

// Finder looks up messages in CloudWatch Logs. It is safe for concurrent
// use (calls are serialised).
type Finder struct {
	api   API
	opt   Options
	lim   *rate.Limiter
	mu    sync.Mutex
	stats Stats
}

// New returns a finder over api.
func New(api API, opt Options) *Finder {
	if opt.Batch <= 0 {
		opt.Batch = DefaultBatch
	}
	if opt.Rate <= 0 {
		opt.Rate = DefaultRate
	}
	return &Finder{api: api, opt: opt, lim: rate.NewLimiter(rate.Limit(opt.Rate), 1)}
}

// Stats returns the counts so far.
func (f *Finder) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Groups returns the log groups searched.
func (f *Finder) Groups() []string { return f.opt.Groups }

// Lookup finds the failure context of every request. The result has one
// entry per message id: a failure with format "logs", evidence and its
// source, or — when the logs say nothing — a failure without evidence
// whose source names the groups searched and the reason (NotFoundNote,
// NoErrorNote).
func (f *Finder) Lookup(ctx context.Context, reqs []Request) (map[string]*record.Failure, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*record.Failure, len(reqs))
	var todo []Request
	seen := map[string]bool{}
	for _, r := range reqs {
		if r.MessageID == "" || seen[r.MessageID] {
			continue
		}
		seen[r.MessageID] = true
		f.stats.Messages++
		if c, ok := f.opt.Cache.get(r.MessageID); ok {
			out[r.MessageID] = c
			f.stats.Cached++
			if c.HasContext() {
				f.stats.Found++
			}
			continue
		}
		todo = append(todo, r)
	}
	slices.SortStableFunc(todo, func(a, b Request) int { return a.From.Compare(b.From) })
	byID := make(map[string]Request, len(todo))
	ids := make([]string, len(todo))
	for i, r := range todo {
		byID[r.MessageID] = r
		ids[i] = r.MessageID
	}
	// First every batch of ids, then — across all of them, so a batch of
	// request ids is as full as a batch of message ids — the Lambda
	// invocations to follow.
	p := &followPass{follow: map[string][]string{}, group: map[string]string{}, mentions: map[string][]Event{}}
	res := map[string]*record.Failure{}
	for _, batch := range Batches(ids, f.opt.Batch) {
		if err := f.lookupBatch(ctx, batch, byID, p, res); err != nil {
			return out, err
		}
	}
	if err := f.resolveFollows(ctx, p, ids, res); err != nil {
		return out, err
	}
	for _, id := range ids {
		fl := res[id]
		out[id] = fl
		if fl.HasContext() {
			f.stats.Found++
		}
	}
	return out, f.opt.Cache.putAll(res)
}

// followPass collects the Lambda request ids to follow.
type followPass struct {
	follow   map[string][]string // request id -> message ids
	group    map[string]string   // request id -> log group
	mentions map[string][]Event  // message id -> its lines
	from, to time.Time           // the processing lines' times
}

// window returns the union of the requests' windows.
func window(ids []string, byID map[string]Request) (from, to time.Time) {
	for i, id := range ids {
		r := byID[id]
		if i == 0 || r.From.Before(from) {
			from = r.From
		}
		if i == 0 || r.To.After(to) {
			to = r.To
		}
	}
	return from, to
}

func (f *Finder) lookupBatch(ctx context.Context, batch []string, byID map[string]Request, p *followPass, out map[string]*record.Failure) error {
	mentions := map[string][]Event{}
	pending := slices.Clone(batch)
	from, to := window(batch, byID)
	for _, g := range f.opt.Groups {
		if len(pending) == 0 {
			break
		}
		events, err := f.filter(ctx, g, Pattern(termsOf(pending)), from, to, "")
		if err != nil {
			return err
		}
		for _, e := range events {
			for _, id := range pending {
				if strings.Contains(e.Message, id) {
					mentions[id] = append(mentions[id], e)
				}
			}
		}
		pending = slices.DeleteFunc(pending, func(id string) bool { return len(mentions[id]) > 0 })
	}
	// Lambda: the id is only on a "processing record" line; follow its
	// request id to the invocation's error lines (resolveFollows).
	for _, id := range batch {
		evs := mentions[id]
		if len(evs) == 0 {
			out[id] = f.none(NotFoundNote, nil)
			continue
		}
		var errEvs []Event
		for _, e := range evs {
			if isErrorEvent(e) {
				errEvs = append(errEvs, e)
			}
		}
		if len(errEvs) > 0 {
			out[id] = extract(errEvs, requestIDOf(errEvs[0]))
			continue
		}
		rid := ""
		for _, e := range evs {
			if rid = requestIDOf(e); rid != "" {
				if len(p.follow[rid]) == 0 {
					p.group[rid] = e.Group
				}
				p.follow[rid] = append(p.follow[rid], id)
				p.mentions[id] = evs
				if p.from.IsZero() || e.Timestamp.Before(p.from) {
					p.from = e.Timestamp
				}
				if e.Timestamp.After(p.to) {
					p.to = e.Timestamp
				}
				break
			}
		}
		if rid == "" {
			out[id] = f.none(NoErrorNote, evs)
		}
	}
	return nil
}

// resolveFollows finds the invocations of the collected request ids and
// gives each message its invocation's error lines.
func (f *Finder) resolveFollows(ctx context.Context, p *followPass, ids []string, out map[string]*record.Failure) error {
	if len(p.follow) == 0 {
		return nil
	}
	// The invocation began before its processing line (START) and ends at
	// most LambdaMaxTimeout later (REPORT).
	inv, err := f.invocations(ctx, p.follow, p.group, p.from.Add(-LambdaMaxTimeout), p.to.Add(LambdaMaxTimeout+time.Minute))
	if err != nil {
		return err
	}
	for rid, mids := range p.follow {
		for _, id := range mids {
			var errEvs []Event
			for _, e := range inv[rid] {
				if aboutOnly(e, id, ids) {
					errEvs = append(errEvs, e)
				}
			}
			if len(errEvs) == 0 {
				out[id] = f.none(NoErrorNote, p.mentions[id])
				continue
			}
			fl := extract(errEvs, rid)
			// Show the line that ties the message to the invocation first.
			fl.Source.Lines = append([]record.LogLine{p.mentions[id][0].line()}, fl.Source.Lines...)
			if len(fl.Source.Lines) > maxUsedLines {
				fl.Source.Lines = fl.Source.Lines[:maxUsedLines]
			}
			out[id] = fl
		}
	}
	return nil
}

// invocations returns the error events of each Lambda invocation: the
// lines carrying its request id (Invoke Error, Task timed out, REPORT with
// a failed status) and, for runtimes whose error lines do not carry the
// request id (Python's "[ERROR] …" traceback), the error lines of its log
// stream between its START and END/REPORT lines.
func (f *Finder) invocations(ctx context.Context, follow map[string][]string, group map[string]string, from, to time.Time) (map[string][]Event, error) {
	byGroup := map[string][]string{}
	for rid := range follow {
		byGroup[group[rid]] = append(byGroup[group[rid]], rid)
	}
	out := map[string][]Event{}
	for g, rids := range byGroup {
		slices.Sort(rids)
		for _, batch := range Batches(rids, f.opt.Batch) {
			events, err := f.filter(ctx, g, Pattern(termsOf(batch)), from, to, "")
			if err != nil {
				return nil, err
			}
			for _, rid := range batch {
				var errEvs []Event
				var start, end *Event
				for i := range events {
					e := events[i]
					if !strings.Contains(e.Message, rid) {
						continue
					}
					switch {
					case strings.HasPrefix(e.Message, "START RequestId: "):
						start = &events[i]
					case strings.HasPrefix(e.Message, "END RequestId: "), strings.HasPrefix(e.Message, "REPORT RequestId: ") && end == nil:
						end = &events[i]
					}
					if isErrorEvent(e) {
						errEvs = append(errEvs, e)
					}
				}
				if !hasCause(errEvs) && start != nil && end != nil && start.Stream == end.Stream {
					// The invocation's own stream, START to END: error
					// lines without the request id.
					evs, err := f.filter(ctx, g, "", start.Timestamp, end.Timestamp, start.Stream)
					if err != nil {
						return nil, err
					}
					for _, e := range evs {
						if isErrorEvent(e) && !slices.ContainsFunc(errEvs, func(x Event) bool { return x.ID == e.ID && x.ID != "" }) {
							errEvs = append(errEvs, e)
						}
					}
					slices.SortStableFunc(errEvs, func(a, b Event) int { return a.Timestamp.Compare(b.Timestamp) })
				}
				out[rid] = errEvs
			}
		}
	}
	return out, nil
}

// aboutOnly reports whether an invocation's error event can be the
// failure of message id: not when it names another record (a structured
// line whose messageId is another id, or a line that mentions another of
// the ids looked up) — with partial batch responses one record's error is
// not another's.
func aboutOnly(e Event, id string, ids []string) bool {
	if obj := jsonObject(e.Message); obj != nil {
		if other := str(obj, "messageId", "message_id", "MessageId", "messageID"); other != "" && other != id {
			return false
		}
	}
	for _, o := range ids {
		if o != id && strings.Contains(e.Message, o) {
			return false
		}
	}
	return true
}

// hasCause reports whether error events say more than a REPORT status.
func hasCause(evs []Event) bool {
	for _, e := range evs {
		if !strings.HasPrefix(e.Message, "REPORT RequestId: ") {
			return true
		}
	}
	return false
}

func (f *Finder) none(note string, mentions []Event) *record.Failure {
	src := &record.FailureSource{LogGroups: slices.Clone(f.opt.Groups), Note: note}
	for i, e := range mentions {
		if i == maxUsedLines {
			break
		}
		src.Lines = append(src.Lines, e.line())
	}
	return &record.Failure{Source: src}
}

// maxPages bounds one search: a pattern matching far more than the ids
// searched (a server that ignores it) is read no further.
const maxPages = 50

// CheckGroups asks each log group for at most one event of the last
// millisecond, so that a group that does not exist (or that the caller may
// not search) is bad input before any message is read, not only when the
// first message without failure context needs it. It needs the same
// logs:FilterLogEvents permission as the search.
func (f *Finder) CheckGroups(ctx context.Context) error {
	now := time.Now()
	for _, g := range f.opt.Groups {
		if err := f.lim.Wait(ctx); err != nil {
			return err
		}
		_, err := f.api.FilterLogEvents(ctx, &cwl.FilterLogEventsInput{
			LogGroupName: aws.String(g),
			StartTime:    aws.Int64(now.Add(-time.Millisecond).UnixMilli()),
			EndTime:      aws.Int64(now.UnixMilli()),
			Limit:        aws.Int32(1),
		})
		f.mu.Lock()
		f.stats.Checks++
		f.mu.Unlock()
		if err != nil {
			return apiError(g, err)
		}
	}
	return nil
}

// filter runs one search to the end: every page, rate-limited.
func (f *Finder) filter(ctx context.Context, group, pattern string, from, to time.Time, stream string) ([]Event, error) {
	in := &cwl.FilterLogEventsInput{LogGroupName: aws.String(group)}
	if pattern != "" {
		in.FilterPattern = aws.String(pattern)
	}
	if !from.IsZero() {
		in.StartTime = aws.Int64(from.UnixMilli())
	}
	if !to.IsZero() {
		in.EndTime = aws.Int64(to.UnixMilli())
	}
	if stream != "" {
		in.LogStreamNames = []string{stream}
	}
	if f.opt.PageLimit > 0 {
		in.Limit = aws.Int32(f.opt.PageLimit)
	}
	var out []Event
	for page := 0; ; page++ {
		if page == maxPages {
			return out, fmt.Errorf("log group %s: a search returned more than %d pages of events; narrow --logs-window", group, maxPages)
		}
		if err := f.lim.Wait(ctx); err != nil {
			return nil, err
		}
		res, err := f.api.FilterLogEvents(ctx, in)
		f.stats.Calls++
		if err != nil {
			return nil, apiError(group, err)
		}
		f.stats.Events += len(res.Events)
		for _, e := range res.Events {
			out = append(out, eventOf(group, e))
		}
		if f.opt.OnProgress != nil {
			f.opt.OnProgress(f.stats)
		}
		next := aws.ToString(res.NextToken)
		if next == "" || next == aws.ToString(in.NextToken) {
			return out, nil
		}
		in.NextToken = aws.String(next)
	}
}

func eventOf(group string, e types.FilteredLogEvent) Event {
	return Event{Group: group, Stream: aws.ToString(e.LogStreamName), Timestamp: time.UnixMilli(aws.ToInt64(e.Timestamp)).UTC(),
		Message: aws.ToString(e.Message), ID: aws.ToString(e.EventId)}
}

// apiError names the log group and the fix.
func apiError(group string, err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return errs.BadInputf("log group %s does not exist in this account and Region; check --logs (and --region)", group)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDeniedException", "AccessDenied", "UnauthorizedOperation":
			return fmt.Errorf("not allowed to search log group %s: dlqctl --logs needs logs:FilterLogEvents on it (%s)", group, ae.ErrorMessage())
		case "InvalidParameterException":
			return fmt.Errorf("log group %s: CloudWatch Logs refused the search: %s", group, ae.ErrorMessage())
		}
	}
	return fmt.Errorf("searching log group %s: %w", group, err)
}
