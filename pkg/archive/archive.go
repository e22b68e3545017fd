package archive

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Defaults of Options.
const (
	DefaultPartSize    = 64 << 20
	DefaultPartRecords = 10_000
	DefaultPartMaxAge  = 10 * time.Minute
	MaxPartSize        = 5 << 30 // one PutObject
	contentType        = "application/gzip"
	manifestType       = "application/json"
)

// Selector decides which messages are archived; *classify.Selector
// satisfies it. Select may annotate the record (class, action, rule)
// before it is written. A non-nil error from Select means the message is
// not archived: a bad-input error (errs.Code 2) is the selection's refusal
// (it failed on every message read) and stops the run before anything is
// written or deleted; any other error is the filter or a rule failing on
// this one message, which stays in the queue ("filter error"). Refusal is
// that refusal at the end of a run shorter than Select's threshold.
type Selector interface {
	Select(rec *record.Record, parsed any) (bool, error)
	Refusal() error
	// Errors counts the messages the selection failed on (nil: none).
	Errors() *inspect.FilterErrors
}

// SelectFunc is a Selector from a function that never fails.
type SelectFunc func(rec *record.Record, parsed any) bool

// Select calls f.
func (f SelectFunc) Select(rec *record.Record, parsed any) (bool, error) { return f(rec, parsed), nil }

// Refusal is nil: f never fails.
func (f SelectFunc) Refusal() error { return nil }

// Errors is nil: f never fails.
func (f SelectFunc) Errors() *inspect.FilterErrors { return nil }

// selectOne applies sel to one message: "" when it is selected, else why
// not; err is the selection's refusal.
func selectOne(sel Selector, rec *record.Record, parsed any) (skip string, err error) {
	if sel == nil {
		return "", nil
	}
	ok, err := sel.Select(rec, parsed)
	switch {
	case err != nil && errs.Code(err) == errs.ExitUsage:
		return "", err
	case err != nil:
		return SkipFilterError, nil
	case !ok:
		return SkipNotSelected, nil
	}
	return "", nil
}

// Why a message was not archived (the pipeline's skip reasons).
const (
	SkipNotSelected = "not selected"
	SkipFilterError = "filter error" // --filter or a rule raised an error on it
)

// Reporter receives progress from a run, always from one goroutine.
type Reporter interface {
	// Progress is called as the run goes and after every part.
	Progress(Stats)
	// PartDone is called when a part was uploaded, verified and (with
	// Delete) its messages deleted.
	PartDone(Part)
	// Warn reports something the user should know that does not stop the run.
	Warn(msg string)
}

// Stats count a run as it goes.
type Stats struct {
	Received   int   `json:"received"`   // distinct messages received
	Selected   int   `json:"selected"`   // matched the selection
	Archived   int   `json:"archived"`   // in verified parts
	Deleted    int   `json:"deleted"`    // deleted after verification
	Parts      int   `json:"parts"`      // verified parts
	Bytes      int64 `json:"bytes"`      // compressed bytes in verified parts
	Duplicates int   `json:"duplicates"` // repeated deliveries of a message already seen
	// NotSelected: left by the selection; Released: reads given back
	// unprocessed (past --max, or the run stopped; a message given back
	// and read again counts again). Both stay in the queue.
	NotSelected int `json:"not_selected"`
	Released    int `json:"released"`
}

// Options configure a run.
type Options struct {
	Dest      Location // bucket and key prefix
	Select    Selector
	Selection string // description of the selection, for the manifest
	Max       int    // archive at most this many messages; 0 = all
	Delete    bool   // delete verified messages from the queue
	// PartSize and PartRecords bound each part (compressed bytes, records);
	// PartMaxAge bounds how long a part stays open, so held messages never
	// approach the 12 h visibility ceiling.
	PartSize    int64
	PartRecords int
	PartMaxAge  time.Duration
	// Visibility is the hold time between lease heartbeats (default 60s).
	Visibility time.Duration
	// Workers receive concurrently (default 4); Wait is the long-poll wait
	// (default 1s).
	Workers int
	Wait    time.Duration
	// MaxHeld caps messages held at once (default below the in-flight limit).
	MaxHeld int
	// Rate paces archiving in messages per second (0 = unpaced).
	Rate float64
	// WaitInFlight is how long the end of the run waits for messages in
	// flight elsewhere (a lost receive) to come back (0: do not wait).
	WaitInFlight time.Duration
	// Peers is the number of processes archiving the queue together
	// (--rate-share I/N; 0 or 1: alone): see pipeline.Options.Peers.
	Peers int
	// Share is this process's part of such a run, handed to the source
	// (a competing-consumer broker tells its peers from other consumers by
	// it). Zero: alone, or a broker that shares otherwise.
	Share       broker.Share
	Encryption  Encryption
	ToolVersion string
	RunID       string           // default: time + random
	Now         func() time.Time // default time.Now
	TempDir     string           // for part files; "" = os.TempDir()
	Reporter    Reporter         // nil = silent
}

func (o *Options) defaults() {
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartRecords <= 0 {
		o.PartRecords = DefaultPartRecords
	}
	if o.PartMaxAge <= 0 {
		o.PartMaxAge = DefaultPartMaxAge
	}
	if o.Visibility <= 0 {
		o.Visibility = 60 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Wait <= 0 {
		o.Wait = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Reporter == nil {
		o.Reporter = nopReporter{}
	}
}

type nopReporter struct{}

func (nopReporter) Progress(Stats) {}
func (nopReporter) PartDone(Part)  {}
func (nopReporter) Warn(string)    {}

// Result is what a run did.
type Result struct {
	Manifest    *Manifest
	ManifestKey string // "" when no part was written
	Stats       Stats
	// NotDeleted lists messages of verified parts that could not be
	// deleted (with --delete), by message id, with the reason. They are in
	// the archive and still in the queue.
	NotDeleted []FailedMessage
	// Complete: the whole queue (or selection) was read and archived; Note
	// says why not. Blocked and InFlightElsewhere count what could not be
	// read (FIFO groups locked behind held messages; messages in flight
	// that the run did not hold).
	Complete          bool
	Note              string
	StoppedAtMax      bool // --max was reached (Stats.Released were read past it)
	Blocked           int
	InFlightElsewhere int
	// CountsNote: what the queue's approximate counts said at the end when
	// they disagreed with what the run saw (advisory; never a failure).
	CountsNote string
	// Share is this process's share of a shared run ("I/N", "" alone);
	// InFlightAtPeers what its peers held when it ended (theirs to
	// account for).
	Share           string
	InFlightAtPeers int
	// FilterErrors: messages the --filter or a rule raised an error on;
	// not archived, they stay in the queue.
	FilterErrors *inspect.FilterErrors
}

// FailedMessage is a message that could not be processed, and why.
type FailedMessage struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
}

// Run archives messages of q to opts.Dest on the one message pipeline
// (package pipeline) with a sink that writes S3 parts. See the package
// documentation for the layout; the guarantees are:
//
//   - a message is deleted only with opts.Delete, and only after the part
//     holding it was uploaded and its SHA-256 and size verified; each part's
//     messages are deleted as soon as that part is verified (on a FIFO
//     queue this unlocks their groups, so the run continues until the queue
//     is drained);
//   - every received message is held with a lease heartbeat and released
//     (visibility 0) when the run ends unless it was deleted — also on
//     errors and cancellation;
//   - an upload or verification failure stops the run with a Partial error;
//     nothing of that part is deleted;
//   - a run that could not read the whole queue (FIFO groups locked behind
//     messages it holds without --delete, messages in flight elsewhere, the
//     in-flight limit) is reported partial, never complete;
//   - memory is bounded by one part's bookkeeping plus the held messages'
//     receipt handles, not by the queue: records stream through gzip into a
//     temporary file.
func Run(ctx context.Context, ep broker.Endpoint, api S3API, opts Options) (res *Result, err error) {
	opts.defaults()
	if opts.PartSize > MaxPartSize {
		return nil, errs.BadInputf("--part-size %d is larger than one S3 PutObject allows (5 GiB)", opts.PartSize)
	}
	started := opts.Now().UTC()
	if opts.RunID == "" {
		opts.RunID = NewRunID(started, randomHex(4))
	}
	s := &partSink{
		ctx: context.WithoutCancel(ctx), api: api, opts: opts,
		runDir:   RunDir(opts.Dest.Key, ep.Name(), started, opts.RunID),
		archived: map[idDigest]struct{}{}, partOf: map[string]int{},
	}
	s.man = &Manifest{
		Format: Format, ToolVersion: opts.ToolVersion, RunID: opts.RunID,
		Bucket: opts.Dest.Bucket, Prefix: opts.Dest.Key,
		Queue:     queueInfo(ep),
		Selection: opts.Selection, StartedAt: started, Deleted: opts.Delete,
		Encryption: opts.Encryption.SSE, KMSKeyID: opts.Encryption.KMSKeyID,
		Parts: []Part{},
	}
	res = &Result{Manifest: s.man}

	// Without --delete the source peeks: what is archived stays held until
	// the run ends, then is given back.
	mode := broker.Peek
	if opts.Delete {
		mode = broker.Consume
	}
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: mode,
		Hold: opts.Visibility, Wait: opts.Wait, MaxHeld: opts.MaxHeld, Decode: inspect.Decode, Share: opts.Share})
	if err != nil {
		return nil, err
	}
	stopAge := s.startAgeFlusher()
	defer func() {
		stopAge()
		s.Discard()
		if rerr := src.Close(ctx); rerr != nil {
			err = errors.Join(err, errs.Partial(fmt.Errorf("releasing held messages failed (%v); they become visible again when their visibility timeout ends", rerr)))
		}
	}()
	pr, runErr := pipeline.Run(ctx, src, s, pipeline.Options{
		Workers: opts.Workers, Rate: opts.Rate, Max: opts.Max,
		WaitInFlight: opts.WaitInFlight, Peers: opts.Peers,
		Reporter: pipeline.Reporter{Progress: func(p pipeline.Snapshot) {
			s.progress(p, duplicatesOf(src))
		}},
	})
	stopAge()
	if runErr == nil && opts.Select != nil {
		// A run shorter than the selection's refusal threshold that failed
		// on every message: nothing was selected, so no part exists.
		runErr = opts.Select.Refusal()
	}
	s.mu.Lock()
	s.sealPartsLocked(pr)
	s.mu.Unlock()

	// Manifest: written for every run that verified at least one part,
	// also after failures and interrupts, listing what is in the archive.
	s.man.FinishedAt = opts.Now().UTC()
	switch {
	case runErr != nil:
		s.man.Note = firstLine(runErr)
	case ctx.Err() != nil:
		s.man.Note = "interrupted: " + pr.Note
	case !pr.Complete:
		s.man.Note = pr.Note
	}
	s.man.Complete = runErr == nil && ctx.Err() == nil && pr.Complete
	s.man.Sum()
	res.Stats = s.stats(pr, duplicatesOf(src))
	if opts.Select != nil {
		res.FilterErrors = opts.Select.Errors()
	}
	for _, f := range pr.NotAckedIDs {
		res.NotDeleted = append(res.NotDeleted, FailedMessage{MessageID: f.MessageID, Reason: f.Reason})
	}
	res.Complete, res.Note, res.StoppedAtMax = s.man.Complete, s.man.Note, pr.StoppedAtMax
	res.Blocked, res.InFlightElsewhere = pr.Blocked, pr.InFlightElsewhere
	res.InFlightAtPeers = pr.InFlightAtPeers
	if opts.Share.N > 1 {
		res.Share = fmt.Sprintf("%d/%d", opts.Share.I, opts.Share.N)
	}
	if pr.Counts != nil {
		res.CountsNote = pr.Counts.Note
	}
	if len(s.man.Parts) > 0 {
		key := ManifestKey(s.runDir)
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		merr := s.putManifest(mctx, key)
		cancel()
		if merr != nil {
			runErr = errors.Join(runErr, errs.Partial(fmt.Errorf("the parts are verified but the manifest could not be written (%v); the parts are under %s", merr, Location{Bucket: opts.Dest.Bucket, Key: s.runDir})))
		} else {
			res.ManifestKey = key
		}
	}
	switch {
	case runErr != nil:
	case ctx.Err() != nil:
		runErr = ctx.Err()
	case pr.NotAcked > 0:
		runErr = errs.Partialf("%d archived message(s) could not be deleted from %s and are still in it (listed in the report); they are in the archive", pr.NotAcked, ep.Name())
	case !pr.Complete && !pr.StoppedAtMax:
		runErr = errs.Partialf("%s", partialNote(pr, opts.Delete))
	}
	if lost := leasesLostOf(src); runErr == nil && lost > 0 {
		s.opts.Reporter.Warn(fmt.Sprintf("the lease of %d message(s) could not be extended; they were archived once and deleted only after being received again", lost))
	}
	return res, runErr
}

// partialNote explains an incomplete run in the archive's terms.
func partialNote(pr *pipeline.Result, deleting bool) string {
	if pr.Blocked > 0 && !deleting {
		return fmt.Sprintf("archived %d message(s), but %d more could not be read: on a FIFO queue a group's later messages cannot be received while its first is held, and without --delete this run holds what it archived; the archive is partial — archive with --delete (every part verified before its messages are deleted), or move the queue to a recovery FIFO queue first", pr.Delivered, pr.Blocked)
	}
	return pr.Note
}

// queueInfo is what the manifest says of the queue read (never with
// credentials: the endpoint's display form).
func queueInfo(ep broker.Endpoint) QueueInfo {
	return QueueInfo{Name: ep.Name(), URL: ep.String(), ARN: ep.ID(), FIFO: ep.Capabilities().Ordering == broker.OrderGroupLock}
}

// duplicatesOf is how many redeliveries of messages it already held the
// source dropped, when it counts them.
func duplicatesOf(src broker.Source) int {
	if d, ok := src.(interface{ Duplicates() int }); ok {
		return d.Duplicates()
	}
	return 0
}

// leasesLostOf is how many holds the source lost, when it counts them.
func leasesLostOf(src broker.Source) int {
	if l, ok := src.(interface{ LeasesLost() int }); ok {
		return l.LeasesLost()
	}
	return 0
}

// partSink writes delivered records into gzip NDJSON parts; a part's
// commit resolves when the part is uploaded and verified.
type partSink struct {
	ctx    context.Context
	api    S3API
	opts   Options
	runDir string
	man    *Manifest

	mu       sync.Mutex
	repMu    sync.Mutex
	part     *partWriter
	opened   time.Time
	commit   *partCommit
	failed   error
	selected int
	deleted  int
	// archived holds id hashes of messages in verified parts: one received
	// again (its lease was lost before it was deleted) is not archived a
	// second time.
	archived map[idDigest]struct{}
	// partOf maps the ids of archived messages not yet deleted to their
	// part index (for the manifest's per-part counts).
	partOf map[string]int
}

// partCommit is the durability of one part.
type partCommit struct {
	done chan struct{}
	err  error
	idx  int
}

func (c *partCommit) Done() <-chan struct{} { return c.done }
func (c *partCommit) Err() error            { return c.err }

func (s *partSink) Prepare(_ context.Context, it pipeline.Item) (pipeline.Decision, error) {
	id := it.Record.MessageID
	s.mu.Lock()
	_, done := s.archived[idHash(id)]
	s.mu.Unlock()
	if done {
		// Already in a verified part: delete it (with --delete) without
		// archiving it again.
		return pipeline.Decision{Verb: pipeline.AckOnly}, nil
	}
	if skip, err := selectOne(s.opts.Select, it.Record, it.Parsed); err != nil || skip != "" {
		// A refusal stops the run: the engine releases the message.
		return pipeline.Decision{Verb: pipeline.Skip, Reason: skip}, err
	}
	return pipeline.Decision{Verb: pipeline.Deliver, Key: "part", Label: s.opts.Dest.String()}, nil
}

func (s *partSink) Deliver(ctx context.Context, _ int, _ string, items []pipeline.Item, _ []any) ([]pipeline.Outcome, pipeline.Commit) {
	outs := make([]pipeline.Outcome, len(items))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		for i := range outs {
			outs[i].Err = pipeline.Undelivered(s.failed)
		}
		return outs, nil
	}
	var commits multiCommit
	for i, it := range items {
		if s.part == nil {
			p, err := newPartWriter(s.opts.TempDir, false)
			if err != nil {
				s.failed = errs.Partial(fmt.Errorf("creating a temporary part file: %w; nothing was deleted", err))
				for j := i; j < len(items); j++ {
					outs[j].Err = pipeline.Undelivered(s.failed)
				}
				return outs, commits.commit()
			}
			s.part, s.opened = p, time.Now()
			s.commit = &partCommit{done: make(chan struct{}), idx: len(s.man.Parts)}
		}
		if len(commits) == 0 || commits[len(commits)-1] != s.commit {
			commits = append(commits, s.commit)
		}
		if err := s.part.Write(it.Record); err != nil {
			s.failed = errs.Partial(fmt.Errorf("writing the temporary part file: %w; nothing of it was deleted", err))
			for j := i; j < len(items); j++ {
				outs[j].Err = pipeline.Undelivered(s.failed)
			}
			s.failPartLocked(s.failed)
			return outs, commits.commit()
		}
		s.partOf[it.Record.MessageID] = s.commit.idx
		s.selected++
		if s.part.records >= s.opts.PartRecords || s.part.Size() >= s.opts.PartSize {
			if err := s.flushLocked(ctx); err != nil {
				for j := i + 1; j < len(items); j++ {
					outs[j].Err = pipeline.Undelivered(err)
				}
				return outs, commits.commit()
			}
		}
	}
	return outs, commits.commit()
}

// multiCommit is the durability of a batch whose items went into more than
// one part: durable when every part is.
type multiCommit []*partCommit

func (m multiCommit) commit() pipeline.Commit {
	switch len(m) {
	case 0:
		return nil
	case 1:
		return m[0]
	}
	return &joinedCommit{parts: m}
}

type joinedCommit struct {
	parts multiCommit
	once  sync.Once
	done  chan struct{}
	err   error
}

func (j *joinedCommit) Done() <-chan struct{} {
	j.once.Do(func() {
		j.done = make(chan struct{})
		go func() {
			for _, p := range j.parts {
				<-p.done
				if p.err != nil && j.err == nil {
					j.err = p.err
				}
			}
			close(j.done)
		}()
	})
	return j.done
}

func (j *joinedCommit) Err() error { return j.err }

// Flush uploads and verifies the open part now.
func (s *partSink) Flush(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.part == nil || s.part.records == 0 {
		return false, s.failed
	}
	err := s.flushLocked(ctx)
	return err == nil, err
}

// Discard drops the open part: its messages are released, not deleted.
func (s *partSink) Discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.part != nil {
		s.failPartLocked(errors.New("the run stopped before this part was uploaded; its messages were released"))
	}
}

func (s *partSink) failPartLocked(err error) {
	if s.part != nil {
		s.part.Discard()
		s.part = nil
	}
	if s.commit != nil {
		for id, idx := range s.partOf {
			if idx == s.commit.idx {
				delete(s.partOf, id)
			}
		}
		s.commit.err = err
		close(s.commit.done)
		s.commit = nil
	}
}

// flushLocked finishes the open part, uploads and verifies it, and resolves
// its commit (the pipeline then deletes its messages, with Delete).
func (s *partSink) flushLocked(ctx context.Context) error {
	p := s.part
	n := len(s.man.Parts) + 1
	key := PartKey(s.runDir, n)
	fail := func(err error) error {
		if s.failed == nil {
			s.failed = err
		}
		s.failPartLocked(err)
		return err
	}
	if err := p.Finish(); err != nil {
		return fail(errs.Partial(fmt.Errorf("part %d: writing the temporary file failed (%v); nothing of it was deleted", n, err)))
	}
	body, err := p.Reader()
	if err != nil {
		return fail(errs.Partial(fmt.Errorf("part %d: %v; nothing of it was deleted", n, err)))
	}
	if err := Put(ctx, s.api, s.opts.Dest.Bucket, key, body, p.compressedLen, p.sha256Raw, contentType, s.opts.Encryption); err != nil {
		return fail(errs.Partial(fmt.Errorf("part %d: %v; its %d message(s) were released, nothing of it was deleted", n, err, p.records)))
	}
	if err := Verify(ctx, s.api, s.opts.Dest.Bucket, key, p.compressedLen, p.sha256Raw); err != nil {
		return fail(errs.Partial(fmt.Errorf("part %d: %v; its %d message(s) were released, nothing of it was deleted", n, err, p.records)))
	}
	part := Part{
		Key: key, Records: p.records, Bytes: p.compressedLen, SHA256: p.sha256Hex,
		UncompressedBytes: p.raw.n, FirstMessageID: p.first, LastMessageID: p.last,
	}
	if s.opts.Delete {
		// Before any of this part's messages is deleted, a checkpoint
		// manifest lists it: a run killed before its end still leaves a
		// manifest naming every part whose messages may be gone.
		cp := *s.man
		cp.Parts = append(append([]Part(nil), s.man.Parts...), part)
		cp.Complete = false
		cp.Note = fmt.Sprintf("checkpoint written after part %d was verified, before any of its messages was deleted; the run's %s replaces it when the run ends (a run without one was stopped before its end: kill -9, a lost host)", n, ManifestName)
		cp.Sum()
		if err := s.putManifestDoc(ctx, CheckpointKey(s.runDir, n), &cp); err != nil {
			return fail(errs.Partial(fmt.Errorf("part %d: its checkpoint manifest could not be written (%v); its %d message(s) were released, nothing of it was deleted", n, err, p.records)))
		}
	}
	p.Discard()
	s.part = nil
	s.man.Parts = append(s.man.Parts, part)
	for id, idx := range s.partOf {
		if idx == s.commit.idx {
			s.archived[idHash(id)] = struct{}{}
		}
	}
	c := s.commit
	s.commit = nil
	close(c.done)
	s.report(func(r Reporter) { r.PartDone(part) })
	return nil
}

// Acked counts deletions per part.
func (s *partSink) Acked(items []pipeline.Item, _ []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		id := it.Record.MessageID
		if idx, ok := s.partOf[id]; ok {
			s.man.Parts[idx].Deleted++
			delete(s.partOf, id)
		}
		s.deleted++
	}
}

// sealPartsLocked fills in what could not be deleted, per part.
func (s *partSink) sealPartsLocked(pr *pipeline.Result) {
	if !s.opts.Delete || pr == nil {
		for i := range s.man.Parts {
			s.man.Parts[i].Deleted = 0
		}
		return
	}
	for _, idx := range s.partOf {
		if idx < len(s.man.Parts) {
			s.man.Parts[idx].DeleteFailed++
		}
	}
}

// startAgeFlusher uploads a part that stays open longer than PartMaxAge, so
// held messages never approach SQS's 12 h visibility ceiling.
func (s *partSink) startAgeFlusher() func() {
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(min(s.opts.PartMaxAge/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.mu.Lock()
				if s.part != nil && s.part.records > 0 && s.failed == nil && time.Since(s.opened) >= s.opts.PartMaxAge {
					_ = s.flushLocked(s.ctx)
				}
				s.mu.Unlock()
			}
		}
	}()
	return func() { once.Do(func() { close(stop) }) }
}

func (s *partSink) report(f func(Reporter)) {
	s.repMu.Lock()
	defer s.repMu.Unlock()
	f(s.opts.Reporter)
}

func (s *partSink) stats(p *pipeline.Result, dups int) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Received: p.Received, Selected: s.selected, Duplicates: dups, Deleted: 0,
		NotSelected: p.Skipped[SkipNotSelected], Released: p.Released}
	for _, part := range s.man.Parts {
		st.Parts++
		st.Archived += part.Records
		st.Bytes += part.Bytes
	}
	if s.opts.Delete {
		st.Deleted = s.deleted
	}
	return st
}

func (s *partSink) progress(p pipeline.Snapshot, dups int) {
	s.mu.Lock()
	st := Stats{Received: int(p.Received), Selected: s.selected, Duplicates: dups}
	for _, part := range s.man.Parts {
		st.Parts++
		st.Archived += part.Records
		st.Bytes += part.Bytes
	}
	if s.opts.Delete {
		st.Deleted = s.deleted
	}
	s.mu.Unlock()
	s.report(func(r Reporter) { r.Progress(st) })
}

// idDigest is a message id's SHA-256 truncated to 128 bits: the set of
// archived ids decides deletes, so a collision must be out of reach.
type idDigest [16]byte

func idHash(id string) idDigest {
	sum := sha256.Sum256([]byte(id))
	var d idDigest
	copy(d[:], sum[:16])
	return d
}

func (s *partSink) putManifest(ctx context.Context, key string) error {
	return s.putManifestDoc(ctx, key, s.man)
}

func (s *partSink) putManifestDoc(ctx context.Context, key string, m *Manifest) error {
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	sum := sha256Sum(b)
	if err := Put(ctx, s.api, s.opts.Dest.Bucket, key, bytesReader(b), int64(len(b)), sum, manifestType, s.opts.Encryption); err != nil {
		return err
	}
	return Verify(ctx, s.api, s.opts.Dest.Bucket, key, int64(len(b)), sum)
}
