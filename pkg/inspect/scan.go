package inspect

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ScanOptions control a non-destructive read of a queue.
type ScanOptions struct {
	// Max is the number of distinct messages to read; 0 reads the whole queue.
	Max int
	// Visibility is how long each received message stays hidden between
	// heartbeats (default 30s).
	Visibility time.Duration
	// Workers is the number of concurrent receivers (default 4).
	Workers int
	// Wait is the long-poll wait of each receive (default 1s).
	Wait time.Duration
	// MaxHeld caps how many messages are held at once (default: below the
	// queue's in-flight limit).
	MaxHeld int
	// OnProgress is called after each receive with the distinct messages seen.
	OnProgress func(seen int)
}

// ScanResult summarises a scan.
type ScanResult struct {
	Seen       int          // distinct messages read
	Duplicates int          // messages received more than once (ignored)
	Depth      broker.Depth // depths when the scan began (zero when the broker has no counts)
	Complete   bool         // the whole queue was read
	Note       string       // why the scan stopped early, when it did
	// Blocked counts messages that could not be read because their FIFO
	// group is locked behind a message the scan holds (AWS hands out
	// nothing more of a group while one of its messages is in flight).
	Blocked int
	// InFlightElsewhere is at most how many messages a receive whose
	// answer was lost took while the scan ran: they were not read.
	InFlightElsewhere int
	// CountsNote is what the queue's approximate counts said at the end
	// when they disagreed with what the scan saw (advisory: they trail).
	CountsNote string
}

// Partial reports whether the scan had to read everything and could not.
func (r *ScanResult) Partial() bool {
	return !r.Complete && (r.Blocked > 0 || r.InFlightElsewhere > 0)
}

// Scan reads messages from ep without consuming them, on the one message
// pipeline (package pipeline) with a sink that keeps every message held:
// each message read stays invisible (with a lease heartbeat) until the scan
// ends, so each is seen once; duplicates are dropped by message id; at the
// end — also on errors and cancellation — everything is released
// (visibility 0). fn is called once per distinct message, one call at a
// time, with the parsed body (nil when not JSON) after Decode. Returning an
// error from fn stops the scan.
//
// On a FIFO queue of a server that locks message groups as AWS does, a
// group's later messages cannot be read while its first is held: a full
// scan then reads the first message of each group, and the result says how
// many it could not read (Blocked, Note).
func Scan(ctx context.Context, ep broker.Endpoint, opt ScanOptions, fn func(rec *record.Record, parsed any) error) (res *ScanResult, err error) {
	if opt.Visibility <= 0 {
		opt.Visibility = 30 * time.Second
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	caps := ep.Capabilities()
	if batch := max(1, caps.MaxBatchEntries); opt.Max > 0 && opt.Max < opt.Workers*batch {
		opt.Workers = max(1, (opt.Max+batch-1)/batch)
	}
	res = &ScanResult{}
	if caps.Counts != broker.CountsNone {
		if d, derr := ep.Depth(ctx); derr == nil {
			res.Depth = d
		}
	}
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Peek,
		Hold: opt.Visibility, Wait: opt.Wait, MaxHeld: opt.MaxHeld, Decode: Decode})
	if err != nil {
		return res, err
	}
	defer func() {
		if rerr := src.Close(ctx); rerr != nil && err == nil {
			err = rerr
		}
	}()
	s := &readSink{fn: fn, max: opt.Max, seen: map[string]bool{}, onProgress: opt.OnProgress}
	pr, runErr := pipeline.Run(ctx, src, s, pipeline.Options{Workers: opt.Workers, StopWhen: s.full})
	s.mu.Lock()
	res.Seen, res.Duplicates = s.n, s.dups
	if d, ok := src.(interface{ Duplicates() int }); ok {
		res.Duplicates += d.Duplicates()
	}
	fnErr := s.fnErr
	s.mu.Unlock()
	switch {
	case fnErr != nil:
		return res, fnErr
	case ctx.Err() != nil:
		return res, ctx.Err()
	case runErr != nil:
		return res, runErr
	}
	res.Blocked, res.InFlightElsewhere = pr.Blocked, pr.InFlightElsewhere
	if pr.Counts != nil {
		res.CountsNote = pr.Counts.Note
	}
	switch {
	case pr.HeldLimit && res.Seen == 0:
		return res, fmt.Errorf("%s refuses receives: its in-flight limit is reached (OverLimit), so no message could be read; wait until its consumers release messages or work from an archive with --from", ep.Name())
	case pr.HeldLimit:
		res.Note = "stopped at the in-flight limit: this is a bounded sample of a very large queue"
	case opt.Max > 0 && res.Seen >= opt.Max:
		res.Note = "sample"
	case pr.Blocked > 0:
		res.Note = fmt.Sprintf("read %d of ~%d: a FIFO group's later messages cannot be read while its first is held (~%d not read, behind %d group(s)); to read all of it, archive it with --delete (every part is verified before its messages are deleted) and triage the archive with --from", res.Seen, res.Seen+pr.Blocked, pr.Blocked, pr.BlockedGroups)
	case pr.InFlightElsewhere > 0 && pr.Note != "":
		res.Note = fmt.Sprintf("read %d; %s", res.Seen, pr.Note)
	case pr.InFlightElsewhere > 0:
		res.Note = fmt.Sprintf("read %d; up to %d more were taken by a receive whose answer was lost and could not be read (they are back within %s)", res.Seen, pr.InFlightElsewhere, pr.ReturnAfter.Round(time.Second))
	default:
		res.Complete = true
	}
	return res, nil
}

// readSink hands each distinct message to fn and keeps it held until the
// scan ends: nothing is ever delivered or acknowledged.
type readSink struct {
	fn         func(rec *record.Record, parsed any) error
	max        int
	onProgress func(int)

	mu    sync.Mutex
	seen  map[string]bool
	n     int
	dups  int
	fnErr error
}

func (s *readSink) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fnErr != nil || (s.max > 0 && s.n >= s.max)
}

func (s *readSink) Prepare(_ context.Context, it pipeline.Item) (pipeline.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := it.Record.MessageID
	switch {
	case s.seen[id]:
		s.dups++
		return pipeline.Decision{Verb: pipeline.Skip, Reason: "duplicate"}, nil
	case s.fnErr != nil, s.max > 0 && s.n >= s.max:
		return pipeline.Decision{Verb: pipeline.Release, Reason: "beyond the sample"}, nil
	}
	s.seen[id] = true
	s.n++
	rec := *it.Record // fn may keep or change its own copy
	if err := s.fn(&rec, it.Parsed); err != nil {
		s.fnErr = err
	}
	if s.onProgress != nil {
		s.onProgress(s.n)
	}
	return pipeline.Decision{Verb: pipeline.Skip, Reason: "read"}, nil
}

func (s *readSink) Deliver(context.Context, int, string, []pipeline.Item, []any) ([]pipeline.Outcome, pipeline.Commit) {
	return nil, nil // never called: every decision is Skip or Release
}

func (s *readSink) Flush(context.Context) (bool, error) { return false, nil }
