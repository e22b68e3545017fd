package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
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
// Parts are group-committed like the journal's fsyncs: records handed to
// Keep go into the open part, which the first caller that finds an upload
// slot free takes and uploads (at most MaxUploads at once); callers whose
// records it holds wait for it. Under load a part gathers the batches of
// several workers, so the uploads per message fall as the load grows.
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
	cur      *keptPart
	inflight int
	err      error
}

// MaxUploads is how many parts of originals upload at once.
const MaxUploads = 4

// keptPart is a part being filled or uploaded, and its outcome.
type keptPart struct {
	w    *partWriter
	ids  []string
	done bool
	err  error
}

// OpenOriginals checks the bucket of opts.Dest (it exists, and this caller
// may write to it: CheckBucket) before anything changes, then prepares the
// archive of originals there (NewOriginals).
func OpenOriginals(ctx context.Context, api S3API, opts OriginalsOptions) (*Originals, error) {
	if err := CheckBucket(ctx, api, opts.Dest.Bucket); err != nil {
		return nil, err
	}
	return NewOriginals(api, opts), nil
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
		w, err := newPartWriter(o.opts.TempDir, false)
		if err != nil {
			return fmt.Errorf("keeping the originals: creating a temporary part file: %w", err)
		}
		o.cur = &keptPart{w: w}
	}
	p := o.cur
	for _, r := range recs {
		if err := p.w.Write(r); err != nil {
			o.err = errs.Partial(fmt.Errorf("keeping the originals: writing the temporary part file: %w; nothing was sent or deleted", err))
			p.w.Discard()
			o.cur = nil
			p.done, p.err = true, o.err
			o.cond.Broadcast()
			return o.err
		}
		p.ids = append(p.ids, r.MessageID)
	}
	for !p.done {
		if o.cur == p && o.inflight < MaxUploads {
			o.uploadLocked(ctx, p)
			break
		}
		o.cond.Wait()
	}
	return p.err
}

// uploadLocked takes p (the open part), uploads, verifies and records it
// with the lock released during I/O; o.mu must be held.
func (o *Originals) uploadLocked(ctx context.Context, p *keptPart) {
	o.cur = nil
	o.inflight++
	onPart := o.onPart
	o.mu.Unlock()
	part, err := o.upload(ctx, p.w)
	if err == nil {
		raw, _ := json.Marshal(part)
		if onPart != nil {
			err = onPart(raw, p.ids)
		}
	}
	o.mu.Lock()
	o.inflight--
	if err != nil {
		err = errs.Partial(err)
		if o.err == nil {
			o.err = err
		}
	}
	p.done, p.err = true, err
	o.cond.Broadcast()
}

// maxNumberTries bounds the part numbers an upload tries past parts that
// exist already.
const maxNumberTries = 1000

// partNumber hands out the next part number.
func (o *Originals) partNumber() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.next
	o.next++
	return n
}

// upload writes p under the next free part number: a part an attempt
// killed before its journal recorded it holds a number the journal does
// not know (S3 refuses to overwrite it: conditional put), so the number
// after it is tried.
func (o *Originals) upload(ctx context.Context, p *partWriter) (Part, error) {
	defer p.Discard()
	if err := p.Finish(); err != nil {
		return Part{}, fmt.Errorf("keeping the originals: writing the temporary part file: %w; nothing was sent or deleted", err)
	}
	var key string
	var where Location
	for try := 0; ; try++ {
		key = PartKey(o.runDir, o.partNumber())
		where = Location{Bucket: o.opts.Dest.Bucket, Key: key}
		body, err := p.Reader()
		if err != nil {
			return Part{}, fmt.Errorf("keeping the originals: %w; nothing was sent or deleted", err)
		}
		err = Put(ctx, o.api, o.opts.Dest.Bucket, key, body, p.compressedLen, p.sha256Raw, contentType, o.opts.Encryption)
		if errors.Is(err, ErrExists) && try < maxNumberTries {
			continue
		}
		if err != nil {
			return Part{}, fmt.Errorf("keeping the originals in %s: %v; their messages were neither sent nor deleted", where, err)
		}
		break
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
	// In part order (parts upload concurrently and are recorded as they
	// finish): a FIFO group's later messages are in later parts.
	sort.Slice(m.Parts, func(a, b int) bool { return m.Parts[a].Key < m.Parts[b].Key })
	m.Sum()
	b, err := m.Marshal()
	if err != nil {
		return "", err
	}
	key := ManifestKey(runDir)
	sum := sha256Sum(b)
	// A resumed run rewrites its manifest: it lists every part the
	// journal recorded, a superset of what an earlier attempt listed.
	if err := put(ctx, o.api, o.opts.Dest.Bucket, key, bytesReader(b), int64(len(b)), sum, manifestType, o.opts.Encryption, true); err != nil {
		return "", err
	}
	if err := Verify(ctx, o.api, o.opts.Dest.Bucket, key, int64(len(b)), sum); err != nil {
		return "", err
	}
	return key, nil
}
