package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// OriginalsOptions configure an Originals archive.
type OriginalsOptions struct {
	Dest        Location
	Queue       QueueInfo
	Selection   string // what the run selected and the transform, for the manifest
	Encryption  Encryption
	ToolVersion string
	TempDir     string
	// PartRecords bounds one part (default DefaultPartRecords).
	PartRecords int
}

// Originals keeps the originals of the messages a transforming redrive
// repairs, in the archive's own format (gzip NDJSON parts, SHA-256
// verified, a manifest), before their repaired copies are sent: Keep
// returns only once the part holding them is uploaded and verified and
// the caller's onPart (the run's journal) has recorded it.
//
// Parts are group-committed like the journal's fsyncs: the records handed
// to Keep while a part is being uploaded go into the next part, which the
// first of their callers uploads once the previous one is done — one
// upload per round, whatever the number of workers.
type Originals struct {
	api  S3API
	opts OriginalsOptions

	mu       sync.Mutex
	cond     *sync.Cond
	runID    string
	started  time.Time
	runDir   string
	next     int // number of the next part
	onPart   func(part json.RawMessage, ids []string) error
	cur      *partWriter
	curIDs   []string
	gen      uint64 // the part records are being written to
	done     uint64 // parts before this one are resolved
	flushing bool
	err      error
}

// NewOriginals prepares an archive of originals at opts.Dest; Start names
// its run.
func NewOriginals(api S3API, opts OriginalsOptions) *Originals {
	if opts.PartRecords <= 0 {
		opts.PartRecords = DefaultPartRecords
	}
	o := &Originals{api: api, opts: opts}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// Location is where the originals go (s3://bucket/prefix).
func (o *Originals) Location() string { return o.opts.Dest.String() }

// RunDir is the key prefix of this run's parts and manifest.
func (o *Originals) RunDir() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runDir
}

// Start names the run (a resumed run keeps its id, so its parts and its
// manifest stay in one directory), numbers new parts after the prior
// parts an earlier attempt recorded, and sets what records each verified
// part before its callers go on.
func (o *Originals) Start(runID string, started time.Time, prior int, onPart func(part json.RawMessage, ids []string) error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.runID, o.started, o.onPart = runID, started.UTC(), onPart
	o.runDir = RunDir(o.opts.Dest.Key, o.opts.Queue.Name, o.started, runID) + "-originals"
	o.next = prior + 1
}

// Keep archives recs and returns once the part holding them is uploaded,
// verified and recorded (onPart). An error means none of them may be
// changed: the run stops and the messages stay in the queue.
func (o *Originals) Keep(ctx context.Context, recs []*record.Record) error {
	if len(recs) == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.cur == nil {
		p, err := newPartWriter(o.opts.TempDir, false)
		if err != nil {
			return fmt.Errorf("keeping the originals: creating a temporary part file: %w", err)
		}
		o.cur = p
	}
	for _, r := range recs {
		if err := o.cur.Write(r); err != nil {
			o.failLocked(fmt.Errorf("keeping the originals: writing the temporary part file: %w", err))
			return o.err
		}
		o.curIDs = append(o.curIDs, r.MessageID)
	}
	my := o.gen
	for o.done <= my {
		if o.err != nil {
			return o.err
		}
		if o.flushing {
			o.cond.Wait()
			continue
		}
		o.flushLocked(ctx)
	}
	return o.err
}

func (o *Originals) failLocked(err error) {
	if o.err == nil {
		o.err = errs.Partial(err)
	}
	if o.cur != nil {
		o.cur.Discard()
		o.cur = nil
		o.curIDs = nil
	}
}

// flushLocked uploads, verifies and records the current part with the
// lock released during I/O; o.mu must be held.
func (o *Originals) flushLocked(ctx context.Context) {
	p, ids, n := o.cur, o.curIDs, o.next
	o.cur, o.curIDs = nil, nil
	o.flushing = true
	gen := o.gen
	o.gen++
	o.next++
	onPart := o.onPart
	key := PartKey(o.runDir, n)
	o.mu.Unlock()
	part, err := o.upload(ctx, p, key)
	if err == nil {
		raw, _ := json.Marshal(part)
		if onPart != nil {
			err = onPart(raw, ids)
		}
	}
	o.mu.Lock()
	o.flushing = false
	if err != nil && o.err == nil {
		o.err = errs.Partial(err)
	}
	o.done = gen + 1
	o.cond.Broadcast()
}

func (o *Originals) upload(ctx context.Context, p *partWriter, key string) (Part, error) {
	defer p.Discard()
	if err := p.Finish(); err != nil {
		return Part{}, fmt.Errorf("keeping the originals: writing the temporary part file: %w; nothing was sent or deleted", err)
	}
	body, err := p.Reader()
	if err != nil {
		return Part{}, fmt.Errorf("keeping the originals: %w; nothing was sent or deleted", err)
	}
	where := Location{Bucket: o.opts.Dest.Bucket, Key: key}
	if err := Put(ctx, o.api, o.opts.Dest.Bucket, key, body, p.compressedLen, p.sha256Raw, contentType, o.opts.Encryption); err != nil {
		return Part{}, fmt.Errorf("keeping the originals in %s: %v; their messages were neither sent nor deleted", where, err)
	}
	if err := Verify(ctx, o.api, o.opts.Dest.Bucket, key, p.compressedLen, p.sha256Raw); err != nil {
		return Part{}, fmt.Errorf("keeping the originals in %s: %v; their messages were neither sent nor deleted", where, err)
	}
	return Part{Key: key, Records: p.records, Bytes: p.compressedLen, SHA256: p.sha256Hex,
		UncompressedBytes: p.raw.n, FirstMessageID: p.first, LastMessageID: p.last}, nil
}

// Finish writes the manifest listing parts (every part the run's journal
// recorded, earlier attempts' too) and verifies it; it returns its key.
// complete and note say whether the run kept every original it meant to.
func (o *Originals) Finish(ctx context.Context, parts []json.RawMessage, complete bool, note string) (string, error) {
	o.mu.Lock()
	runID, started, runDir := o.runID, o.started, o.runDir
	o.mu.Unlock()
	m := &Manifest{Format: Format, ToolVersion: o.opts.ToolVersion, RunID: runID,
		Bucket: o.opts.Dest.Bucket, Prefix: o.opts.Dest.Key, Queue: o.opts.Queue,
		Selection: o.opts.Selection, StartedAt: started, FinishedAt: time.Now().UTC(),
		Deleted: true, Encryption: o.opts.Encryption.SSE, KMSKeyID: o.opts.Encryption.KMSKeyID,
		Complete: complete, Note: note, Parts: []Part{}}
	for _, raw := range parts {
		var p Part
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", fmt.Errorf("a part recorded in the run's journal is damaged: %w", err)
		}
		m.Parts = append(m.Parts, p)
	}
	m.Sum()
	b, err := m.Marshal()
	if err != nil {
		return "", err
	}
	key := ManifestKey(runDir)
	sum := sha256Sum(b)
	if err := Put(ctx, o.api, o.opts.Dest.Bucket, key, bytesReader(b), int64(len(b)), sum, manifestType, o.opts.Encryption); err != nil {
		return "", err
	}
	if err := Verify(ctx, o.api, o.opts.Dest.Bucket, key, int64(len(b)), sum); err != nil {
		return "", err
	}
	return key, nil
}
