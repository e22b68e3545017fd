package archive

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/queue"
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

// In-flight limits of SQS; the run stops short of them so the queue keeps
// serving its real consumers.
const (
	inFlightLimitStandard = 120_000
	inFlightLimitFIFO     = 20_000
)

// SelectFunc decides whether a message is archived. It may annotate the
// record (class, action, rule) before it is written. nil selects everything.
type SelectFunc func(rec *queue.Record, parsed any) bool

// Limiter paces receives; *rate.Limiter satisfies it.
type Limiter interface {
	WaitN(ctx context.Context, n int) error
}

// Reporter receives progress from a run, always from one goroutine.
type Reporter interface {
	// Progress is called after every received batch and every part.
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
}

// Options configure a run.
type Options struct {
	Dest      Location // bucket and key prefix
	Select    SelectFunc
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
	// (default 1s); EmptyReceives ends a worker after that many consecutive
	// empty receives (default 2).
	Workers       int
	Wait          time.Duration
	EmptyReceives int
	// MaxHeld caps messages held at once (default below the in-flight limit).
	MaxHeld     int
	Limiter     Limiter // nil = unpaced
	Encryption  Encryption
	ToolVersion string
	RunID       string           // default: time + random
	Now         func() time.Time // default time.Now
	TempDir     string           // for part files; "" = os.TempDir()
	Reporter    Reporter         // nil = silent
}

func (o *Options) defaults(q *queue.Queue) {
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
	if o.EmptyReceives <= 0 {
		o.EmptyReceives = 2
	}
	if o.MaxHeld <= 0 {
		o.MaxHeld = inFlightLimitStandard - 10_000
		if q != nil && q.FIFO {
			o.MaxHeld = inFlightLimitFIFO - 2_000
		}
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
}

// FailedMessage is a message that could not be processed, and why.
type FailedMessage struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
}

// Run archives messages of q to opts.Dest. See the package documentation
// for the layout; the guarantees are:
//
//   - a message is deleted only with opts.Delete, and only after the part
//     holding it was uploaded and its SHA-256 and size verified;
//   - every received message is held with a lease heartbeat and released
//     (visibility 0) when the run ends unless it was deleted — also on
//     errors and cancellation;
//   - an upload or verification failure stops the run with a Partial error;
//     nothing of that part is deleted;
//   - memory is bounded by one part's bookkeeping plus the held messages'
//     receipt handles, not by the queue: records stream through gzip into a
//     temporary file.
func Run(ctx context.Context, c *queue.Client, q *queue.Queue, api S3API, opts Options) (res *Result, err error) {
	opts.defaults(q)
	if opts.PartSize > MaxPartSize {
		return nil, errs.BadInputf("--part-size %d is larger than one S3 PutObject allows (5 GiB)", opts.PartSize)
	}
	started := opts.Now().UTC()
	if opts.RunID == "" {
		opts.RunID = NewRunID(started, randomHex(4))
	}
	r := &runner{
		c: c, q: q, api: api, opts: opts,
		runDir: RunDir(opts.Dest.Key, q.Name, started, opts.RunID),
		cur:    map[string]*queue.Message{},
		held:   map[string]*queue.Message{},
		done:   map[uint64]struct{}{},
	}
	r.man = &Manifest{
		Format: Format, ToolVersion: opts.ToolVersion, RunID: opts.RunID,
		Bucket: opts.Dest.Bucket, Prefix: opts.Dest.Key,
		Queue:     QueueInfo{Name: q.Name, URL: q.URL, ARN: q.ARN, FIFO: q.FIFO},
		Selection: opts.Selection, StartedAt: started, Deleted: opts.Delete,
		Encryption: opts.Encryption.SSE, KMSKeyID: opts.Encryption.KMSKeyID,
		Parts: []Part{},
	}
	res = &Result{Manifest: r.man}

	r.lease = queue.NewLease(c, q, opts.Visibility)
	r.lease.OnLost = func(m *queue.Message, lerr error) {
		r.lostMu.Lock()
		r.lostIDs = append(r.lostIDs, m.MessageID)
		r.lostMu.Unlock()
	}
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	go r.lease.Run(hbCtx)
	defer func() {
		stopHB()
		if r.part != nil {
			r.part.Discard()
		}
		if rerr := r.lease.ReleaseAll(ctx); rerr != nil {
			err = errors.Join(err, errs.Partial(fmt.Errorf("releasing held messages failed (%v); they become visible again when their visibility timeout ends", rerr)))
		}
	}()

	runErr := r.loop(ctx)

	// Manifest: written for every run that verified at least one part,
	// also after failures and interrupts, listing what is in the archive.
	r.man.FinishedAt = opts.Now().UTC()
	r.man.Complete = runErr == nil && r.note == ""
	r.man.Note = r.note
	if runErr != nil {
		r.man.Note = firstLine(runErr)
	}
	r.man.Sum()
	res.Stats = r.stats
	res.NotDeleted = r.notDeleted
	if len(r.man.Parts) > 0 {
		key := ManifestKey(r.runDir)
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		merr := r.putManifest(mctx, key)
		cancel()
		if merr != nil {
			runErr = errors.Join(runErr, errs.Partial(fmt.Errorf("the parts are verified but the manifest could not be written (%v); the parts are under %s", merr, Location{Bucket: opts.Dest.Bucket, Key: r.runDir})))
		} else {
			res.ManifestKey = key
		}
	}
	if runErr == nil && len(r.notDeleted) > 0 {
		runErr = errs.Partialf("%d archived message(s) could not be deleted from %s and are still in it (listed in the report); they are in the archive", len(r.notDeleted), q.Name)
	}
	if runErr == nil && len(r.lostIDs) > 0 {
		r.opts.Reporter.Warn(fmt.Sprintf("the lease of %d message(s) could not be extended; another consumer may have received them", len(r.lostIDs)))
	}
	return res, runErr
}

type batch struct{ msgs, slims []*queue.Message }

type runner struct {
	c      *queue.Client
	q      *queue.Queue
	api    S3API
	opts   Options
	runDir string
	man    *Manifest
	lease  *queue.Lease

	part *partWriter
	cur  map[string]*queue.Message // selected, in the open part
	held map[string]*queue.Message // not selected, or archived without --delete
	done map[uint64]struct{}       // deleted after verification (id hashes)

	stats      Stats
	selected   atomic.Int64
	note       string
	notDeleted []FailedMessage

	lostMu  sync.Mutex
	lostIDs []string
}

func (r *runner) loop(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batch, r.opts.Workers)
	var (
		wg        sync.WaitGroup
		recvErr   error
		errOnce   sync.Once
		limitedHd atomic.Bool
	)
	for w := 0; w < r.opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			empty := 0
			for wctx.Err() == nil {
				if r.opts.Max > 0 && int(r.selected.Load()) >= r.opts.Max {
					return
				}
				if r.lease.Len() >= r.opts.MaxHeld {
					limitedHd.Store(true)
					return
				}
				if r.opts.Limiter != nil {
					if err := r.opts.Limiter.WaitN(wctx, queue.MaxBatchEntries); err != nil {
						return
					}
				}
				// The receive itself is not cancelled: a long poll aborted
				// client-side may already have hidden messages whose
				// receipt handles would then be lost (invisible until their
				// visibility timeout). It ends within Wait anyway.
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(wctx), r.opts.Wait+30*time.Second)
				msgs, err := r.c.Receive(rctx, r.q, queue.MaxBatchEntries, r.opts.Visibility, r.opts.Wait)
				rcancel()
				if err != nil {
					if wctx.Err() == nil {
						errOnce.Do(func() { recvErr = err })
						cancel()
					}
					return
				}
				if len(msgs) == 0 {
					if empty++; empty >= r.opts.EmptyReceives {
						return
					}
					continue
				}
				empty = 0
				// The lease holds slim copies (id + receipt handle), so held
				// messages do not keep their bodies in memory.
				slims := make([]*queue.Message, len(msgs))
				for i, m := range msgs {
					slims[i] = &queue.Message{Record: queue.Record{MessageID: m.MessageID}, ReceiptHandle: m.ReceiptHandle, ReceivedAt: m.ReceivedAt}
				}
				r.lease.Add(slims...)
				select {
				case batches <- batch{msgs, slims}:
				case <-wctx.Done():
					return // held by the lease; released at the end
				}
			}
		}()
	}
	go func() { wg.Wait(); close(batches) }()

	var failErr error
	ageTimer := time.NewTimer(r.opts.PartMaxAge)
	defer ageTimer.Stop()
	for {
		var b batch
		var ok bool
		select {
		case b, ok = <-batches:
		case <-ageTimer.C:
			if r.part != nil && r.part.records > 0 && failErr == nil && ctx.Err() == nil {
				if err := r.flush(ctx); err != nil {
					failErr = err
					cancel()
				}
			}
			ageTimer.Reset(r.opts.PartMaxAge)
			continue
		}
		if !ok {
			break
		}
		if failErr != nil || ctx.Err() != nil {
			continue // drain; everything received is held and released at the end
		}
		flushed, err := r.take(ctx, b)
		if err != nil {
			failErr = err
			cancel()
			continue
		}
		if flushed {
			ageTimer.Reset(r.opts.PartMaxAge)
		}
	}
	switch {
	case failErr != nil:
		return failErr
	case ctx.Err() != nil:
		// Roll back the open part: its messages are released, not deleted.
		return ctx.Err()
	case recvErr != nil:
		return recvErr
	}
	if r.part != nil && r.part.records > 0 {
		if err := r.flush(ctx); err != nil {
			return err
		}
	}
	switch {
	case limitedHd.Load():
		r.note = fmt.Sprintf("stopped at %d held messages to stay below the queue's in-flight limit; run again (with --delete the next run continues where this one ended)", r.opts.MaxHeld)
	case r.opts.Max > 0 && int(r.selected.Load()) >= r.opts.Max:
		r.note = fmt.Sprintf("stopped at --max %d", r.opts.Max)
	}
	return nil
}

func idHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// take writes the selected messages of a batch into the open part and
// flushes every part that becomes full.
func (r *runner) take(ctx context.Context, b batch) (flushed bool, err error) {
	var redelivered []*queue.Message
	for i, m := range b.msgs {
		slim := b.slims[i]
		id := m.MessageID
		// A repeated delivery carries a new receipt handle; keep the newest.
		if old, ok := r.cur[id]; ok {
			r.stats.Duplicates++
			r.lease.Forget(old)
			r.cur[id] = slim
			continue
		}
		if old, ok := r.held[id]; ok {
			r.stats.Duplicates++
			r.lease.Forget(old)
			r.held[id] = slim
			continue
		}
		if _, ok := r.done[idHash(id)]; ok {
			// Already archived, verified and deleted: this copy is a
			// redelivery of a message that is in the archive.
			r.stats.Duplicates++
			redelivered = append(redelivered, slim)
			continue
		}
		r.stats.Received++
		keep := r.opts.Max <= 0 || int(r.selected.Load()) < r.opts.Max
		if keep {
			parsed := inspect.Decode(&m.Record)
			keep = r.opts.Select == nil || r.opts.Select(&m.Record, parsed)
		}
		if !keep {
			r.held[id] = slim
			continue
		}
		if r.part == nil {
			p, err := newPartWriter(r.opts.TempDir, false)
			if err != nil {
				return flushed, errs.Partial(fmt.Errorf("creating a temporary part file: %w; nothing was deleted", err))
			}
			r.part = p
		}
		if err := r.part.Write(&m.Record); err != nil {
			return flushed, errs.Partial(fmt.Errorf("writing the temporary part file: %w; nothing of it was deleted", err))
		}
		r.cur[id] = slim
		r.selected.Add(1)
		r.stats.Selected++
		if r.part.records >= r.opts.PartRecords || r.part.Size() >= r.opts.PartSize {
			flushed = true
			if err := r.flush(ctx); err != nil {
				// The rest of the batch stays held and is released.
				for _, rest := range b.slims[i+1:] {
					if _, ok := r.cur[rest.MessageID]; !ok {
						r.held[rest.MessageID] = rest
					}
				}
				return flushed, err
			}
		}
	}
	if len(redelivered) > 0 {
		if r.opts.Delete {
			r.deleteArchived(ctx, redelivered)
		} else {
			for _, s := range redelivered {
				r.held[s.MessageID] = s
			}
		}
	}
	r.opts.Reporter.Progress(r.stats)
	return flushed, nil
}

// flush finishes the open part, uploads and verifies it, then deletes (with
// Delete) or keeps holding its messages. An upload or verification failure
// leaves every message of the part held (released at the end).
func (r *runner) flush(ctx context.Context) error {
	p := r.part
	r.part = nil
	defer p.Discard()
	n := len(r.man.Parts) + 1
	key := PartKey(r.runDir, n)
	if err := p.Finish(); err != nil {
		return errs.Partial(fmt.Errorf("part %d: writing the temporary file failed (%v); nothing of it was deleted", n, err))
	}
	body, err := p.Reader()
	if err != nil {
		return errs.Partial(fmt.Errorf("part %d: %v; nothing of it was deleted", n, err))
	}
	if err := Put(ctx, r.api, r.opts.Dest.Bucket, key, body, p.compressedLen, p.sha256Raw, contentType, r.opts.Encryption); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errs.Partial(fmt.Errorf("part %d: %v; its %d message(s) were released, nothing of it was deleted", n, err, p.records))
	}
	if err := Verify(ctx, r.api, r.opts.Dest.Bucket, key, p.compressedLen, p.sha256Raw); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errs.Partial(fmt.Errorf("part %d: %v; its %d message(s) were released, nothing of it was deleted", n, err, p.records))
	}
	part := Part{
		Key: key, Records: p.records, Bytes: p.compressedLen, SHA256: p.sha256Hex,
		UncompressedBytes: p.raw.n, FirstMessageID: p.first, LastMessageID: p.last,
	}
	msgs := make([]*queue.Message, 0, len(r.cur))
	for _, m := range r.cur {
		msgs = append(msgs, m)
	}
	r.cur = map[string]*queue.Message{}
	if r.opts.Delete {
		// The part is durable: finish its deletes even when interrupted.
		part.Deleted, part.DeleteFailed = r.deleteArchived(context.WithoutCancel(ctx), msgs)
	} else {
		for _, m := range msgs {
			r.held[m.MessageID] = m
		}
	}
	r.man.Parts = append(r.man.Parts, part)
	r.stats.Parts++
	r.stats.Archived += part.Records
	r.stats.Bytes += part.Bytes
	r.opts.Reporter.PartDone(part)
	r.opts.Reporter.Progress(r.stats)
	return nil
}

// deleteArchived deletes messages that are in a verified part. Messages that
// could not be deleted are reported and, unless their lease is lost, held
// again so they are released at the end.
func (r *runner) deleteArchived(ctx context.Context, msgs []*queue.Message) (deleted, failed int) {
	// Forget first, so the heartbeat does not extend handles being deleted.
	r.lease.Forget(msgs...)
	fails, callErr := r.c.Delete(ctx, r.q, msgs)
	var again []*queue.Message
	for _, m := range msgs {
		ferr, bad := fails[m]
		if !bad {
			deleted++
			r.done[idHash(m.MessageID)] = struct{}{}
			continue
		}
		failed++
		reason := ferr.Error()
		var ee *queue.EntryError
		if callErr != nil && !errors.As(ferr, &ee) && !errors.Is(ferr, queue.ErrLeaseLost) {
			reason = "delete call failed (" + firstLine(callErr) + "); the message may or may not have been deleted"
		}
		r.notDeleted = append(r.notDeleted, FailedMessage{MessageID: m.MessageID, Reason: reason})
		if !errors.Is(ferr, queue.ErrLeaseLost) {
			again = append(again, m)
		}
	}
	r.lease.Add(again...)
	sort.Slice(r.notDeleted, func(i, j int) bool { return r.notDeleted[i].MessageID < r.notDeleted[j].MessageID })
	r.stats.Deleted += deleted
	return deleted, failed
}

func (r *runner) putManifest(ctx context.Context, key string) error {
	b, err := r.man.Marshal()
	if err != nil {
		return err
	}
	sum := sha256Sum(b)
	if err := Put(ctx, r.api, r.opts.Dest.Bucket, key, bytesReader(b), int64(len(b)), sum, manifestType, r.opts.Encryption); err != nil {
		return err
	}
	return Verify(ctx, r.api, r.opts.Dest.Bucket, key, int64(len(b)), sum)
}
