package redrive

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/internal/jsonenc"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Run statuses recorded in run.json.
const (
	StatusRunning     = "running" // also what a killed run is left as
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusGuard       = "guard-tripped"
	StatusCanaryFail  = "canary-failed"
	StatusPartial     = "partial"
	StatusFailed      = "failed"
)

// RunMeta describes a run; it is stored as run.json next to the journal.
type RunMeta struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"` // "redrive", "restore"
	Source      string `json:"source"`
	SourceURL   string `json:"source_url,omitempty"`
	Destination string `json:"destination"`
	Fingerprint string `json:"fingerprint"`
	// Options are the command's options, so `resume` can repeat the run.
	Options    json.RawMessage `json:"options,omitempty"`
	Visibility float64         `json:"visibility_seconds,omitempty"`
	Created    time.Time       `json:"created"`
	Updated    time.Time       `json:"updated"`
	Status     string          `json:"status"`
	Note       string          `json:"note,omitempty"`
	// Transform is the expression a transforming run repairs messages
	// with, and where it keeps their originals.
	Transform *TransformMeta `json:"transform,omitempty"`
}

// TransformMeta is what the journal records of a transforming run.
type TransformMeta struct {
	Expression string `json:"expression"`
	SHA256     string `json:"expression_sha256"`
	// Originals is where the originals are archived ("" for a restore:
	// the archive read is the originals).
	Originals string `json:"originals,omitempty"`
}

// SentRecord is a journal line: the copy of Orig was accepted by Dest.
type SentRecord struct {
	Orig   string `json:"orig"`
	Dest   string `json:"dest"`
	DestID string `json:"dest_id"`
	SHA    string `json:"sha"`
	// MaybeTwice: the send's answer was lost and the SDK sent it again, so
	// the (standard) destination may hold this copy twice.
	MaybeTwice bool `json:"maybe_twice,omitempty"`
	// Resent: an earlier attempt recorded its intent to send this message
	// and never recorded the outcome (the process died between handing the
	// batch to the broker and journaling it, or the send's outcome was
	// unknown), so this copy may be the second; MaybeTwice is set too.
	Resent bool `json:"resent,omitempty"`
}

// Journal line types (the "t" field of journal.ndjson; docs/redrive.md).
const (
	lineSent = "sent" // a copy accepted by its destination (SentRecord)
	// lineSentRuns: a batch of copies accepted by dest whose DLQ ids are
	// runs of consecutive numbers (Kafka offsets: TOPIC-PARTITION@N), one
	// line a batch instead of a sent line a message; no per-copy dest_id,
	// and the bodies' SHA-256 as a set (shas) while the journal keeps them.
	lineSentRuns = "sentr"
	lineDel      = "del" // originals removed from the source (ids)
	// lineIntent is written (and fsynced) before a batch is handed to the
	// broker: the ids about to be sent to dest. A later sent or unsent line
	// confirms each; an intent left without one means the outcome is
	// unknown (the process died mid-send).
	lineIntent = "intent"
	// lineUnsent: the destination refused these (a definite answer): no
	// copy exists, the intent is settled.
	lineUnsent = "unsent"
	// lineGone: intents a later attempt settled because the messages were
	// no longer in the source when it drained it (counted as sent by the
	// attempt that died).
	lineGone = "gone"
	// lineKept: the originals of a transforming run's messages (ids) are
	// in a verified archive part (part: its manifest entry); written
	// (fsynced) before any of them is sent.
	lineKept = "kept"
)

type line struct {
	T string `json:"t"` // lineSent, lineDel, lineIntent, lineUnsent, lineGone
	SentRecord
	IDs []string `json:"ids,omitempty"`
	// Runs are ids as runs of consecutive numbers (lineSentRuns, lineDel).
	Runs []idRun `json:"runs,omitempty"`
	// SHAs are a lineSentRuns batch's body digests (a set).
	SHAs []string `json:"shas,omitempty"`
	// Part is a lineKept's archive part (its manifest entry).
	Part json.RawMessage `json:"part,omitempty"`
}

// Journal is the durable record of a run: which source messages were sent
// (with their destination message ids) and which were deleted. Sent records
// are fsynced before Sent returns, and the pipeline deletes a message only
// after that, so after a crash a resume deletes what was already sent
// without sending it again. Before a batch is sent, its ids are fsynced
// as an intent (Intend): an intent a resume finds without its sent record
// is a send whose outcome nobody recorded, reported as possibly delivered
// twice when the message is sent again. Concurrent Sent and Intend calls
// share one fsync (group commit).
type Journal struct {
	dir  string
	f    *os.File
	meta RunMeta

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	gen     uint64
	synced  uint64
	syncing bool
	err     error
	// In memory the journal keeps only what a run needs to decide about a
	// message it receives: the full records of copies sent but not yet
	// deleted (pending), and 128-bit digests of every id sent and deleted
	// and of every body sent — a few dozen bytes per message, so a run's
	// memory stays flat; journal.ndjson on disk has everything.
	pending map[string]SentRecord
	sent    map[digest]struct{}
	shas    map[uint64]struct{}
	// twice counts the sent records marked MaybeTwice; twiceRecs keeps the
	// first maxTwiceRecords of them.
	twice     int
	twiceRecs []SentRecord
	// intents are the unconfirmed intents: original id -> the destination
	// key the copy was (perhaps) sent to. An entry is removed by the sent,
	// unsent or gone line of the id. At most the batches in flight are
	// here during a run, plus sends whose outcome was unknown.
	intents map[string]string
	// atOpen are the intents left unconfirmed by earlier attempts (what a
	// resume finds): their messages may already have a copy.
	atOpen map[string]string
	// kept are the digests of the messages whose originals are in a
	// verified archive part (a transforming run); parts those parts'
	// manifest entries, in order.
	kept  map[digest]struct{}
	parts []json.RawMessage
	// runs are the ids sent in lineSentRuns lines, by prefix (runN of
	// them); pendingRuns those of them not yet deleted (pendingRunN).
	runs        map[string]*intervals
	pendingRuns map[string]*intervals
	runN        int64
	pendingRunN int64
}

// maxTwiceRecords bounds the possibly-doubled records kept in memory.
const maxTwiceRecords = 1000

// digest is a message id's SHA-256, truncated to 128 bits: a collision
// (which would delete a message as already sent) is about as likely as
// 2^-64 for a billion messages.
type digest [16]byte

func digestOf(id string) digest {
	sum := sha256.Sum256([]byte(id))
	var d digest
	copy(d[:], sum[:16])
	return d
}

// bodyKey is a body SHA-256 (hex) reduced to 64 bits; it only helps the
// canary recognise returned copies, it never decides a delete.
func bodyKey(sha string) uint64 {
	var k uint64
	for i := 0; i < len(sha) && i < 16; i++ {
		c := sha[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		}
		k = k<<4 | uint64(v)
	}
	if len(sha) < 16 {
		h := sha256.Sum256([]byte(sha))
		k ^= uint64(h[0])<<56 | uint64(h[1])<<48 | uint64(h[2])<<40 | uint64(h[3])<<32
	}
	return k
}

func newJournalState() *Journal {
	return &Journal{pending: map[string]SentRecord{}, sent: map[digest]struct{}{}, shas: map[uint64]struct{}{}, intents: map[string]string{}, kept: map[digest]struct{}{},
		runs: map[string]*intervals{}, pendingRuns: map[string]*intervals{}}
}

// maxBodyKeys bounds the body digests kept for the canary's recognition of
// returned copies (a canary moves a few messages; a large run needs none).
const maxBodyKeys = 10_000

func (j *Journal) recordSentLocked(r SentRecord) {
	delete(j.intents, r.Orig)
	if j.inRunsLocked(r.Orig) {
		return // sent in a batch line already: the first record stands
	}
	d := digestOf(r.Orig)
	if _, again := j.sent[d]; again {
		return // a re-send after a lost answer: the first record stands
	}
	j.sent[d] = struct{}{}
	j.pending[r.Orig] = r
	if r.MaybeTwice {
		j.twice++
		if len(j.twiceRecs) < maxTwiceRecords {
			j.twiceRecs = append(j.twiceRecs, r)
		}
	}
	if len(j.shas) < maxBodyKeys {
		j.shas[bodyKey(r.SHA)] = struct{}{}
	}
}

// inRunsLocked reports whether id was recorded in a lineSentRuns line.
func (j *Journal) inRunsLocked(id string) bool {
	if len(j.runs) == 0 {
		return false
	}
	p, n, ok := splitRunID(id)
	if !ok {
		return false
	}
	iv := j.runs[p]
	return iv != nil && iv.has(n)
}

// recordRunsSentLocked records a lineSentRuns batch: every id of runs is
// sent and pending until deleted; their intents are settled.
func (j *Journal) recordRunsSentLocked(runs []idRun, shas []string) {
	for _, r := range runs {
		iv := j.runs[r.Prefix]
		if iv == nil {
			iv = &intervals{}
			j.runs[r.Prefix] = iv
		}
		j.runN += iv.add(r.From, r.To)
		pv := j.pendingRuns[r.Prefix]
		if pv == nil {
			pv = &intervals{}
			j.pendingRuns[r.Prefix] = pv
		}
		j.pendingRunN += pv.add(r.From, r.To)
		if len(j.intents) > 0 {
			for n := r.From; n <= r.To; n++ {
				delete(j.intents, runID(r.Prefix, n))
			}
		}
	}
	for _, sha := range shas {
		if len(j.shas) >= maxBodyKeys {
			break
		}
		j.shas[bodyKey(sha)] = struct{}{}
	}
}

// recordRunsDeletedLocked marks the ids of runs deleted.
func (j *Journal) recordRunsDeletedLocked(runs []idRun) {
	for _, r := range runs {
		if pv := j.pendingRuns[r.Prefix]; pv != nil {
			j.pendingRunN -= pv.remove(r.From, r.To)
		}
	}
}

// sentCountLocked and pendingCountLocked count every id sent (pending:
// not yet deleted), in per-message and in batch lines.
func (j *Journal) sentCountLocked() int    { return len(j.sent) + int(j.runN) }
func (j *Journal) pendingCountLocked() int { return len(j.pending) + int(j.pendingRunN) }

// recordDeletedLocked marks a sent message's original as deleted: the
// journal then keeps only its digest (the deleted count is what was sent
// and is no longer pending).
func (j *Journal) recordDeletedLocked(id string) {
	delete(j.pending, id)
}

// RunsDir is where run directories live under the state dir.
func RunsDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

// NewRunID returns a fresh, sortable run id.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// CreateJournal starts the journal of a new run.
func CreateJournal(stateDir string, meta RunMeta) (*Journal, error) {
	dir := filepath.Join(RunsDir(stateDir), meta.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errs.BadInputf("cannot create the run journal in %s: %v; pass a writable --state-dir", dir, err)
	}
	meta.Status = StatusRunning
	meta.Updated = meta.Created
	j, err := openJournal(dir, meta)
	if err != nil {
		return nil, err
	}
	if err := j.writeMeta(); err != nil {
		j.f.Close()
		return nil, err
	}
	return j, nil
}

// OpenJournal reopens the journal of run id to resume it.
func OpenJournal(stateDir, id string) (*Journal, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return nil, errs.BadInputf("%q is not a run id; `dlqctl runs` lists them", id)
	}
	dir := filepath.Join(RunsDir(stateDir), id)
	meta, err := readMeta(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errs.BadInputf("no run %s under %s; `dlqctl runs` lists runs (check --state-dir)", id, stateDir)
		}
		return nil, err
	}
	return openJournal(dir, meta)
}

func openJournal(dir string, meta RunMeta) (*Journal, error) {
	j := newJournalState()
	j.dir, j.meta = dir, meta
	j.cond = sync.NewCond(&j.mu)
	path := filepath.Join(dir, "journal.ndjson")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	// One process per run: two writing one journal would each miss what
	// the other sent (processes sharing a DLQ and a --state-dir resume only
	// their own runs; this catches the same command started twice).
	if err := lockJournal(f); err != nil {
		f.Close()
		if errors.Is(err, errRunLocked) {
			return nil, errs.BadInputf("run %s is in use by another dlqctl process (%s); wait for it to end, or give each process its own --state-dir or --rate-share number", meta.ID, dir)
		}
		return nil, fmt.Errorf("locking the journal of run %s: %w", meta.ID, err)
	}
	if err := j.load(path); err != nil {
		f.Close()
		return nil, err
	}
	j.atOpen = make(map[string]string, len(j.intents))
	for id, dest := range j.intents {
		j.atOpen[id] = dest
	}
	j.f = f
	return j, nil
}

func (j *Journal) load(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // a torn last line after a crash: its fsync never completed
		}
		switch l.T {
		case lineSent:
			j.recordSentLocked(l.SentRecord)
		case lineSentRuns:
			j.recordRunsSentLocked(l.Runs, l.SHAs)
		case lineDel:
			for _, id := range l.IDs {
				j.recordDeletedLocked(id)
			}
			j.recordRunsDeletedLocked(l.Runs)
		case lineIntent:
			j.recordIntentLocked(l.Dest, l.IDs)
		case lineKept:
			j.recordKeptLocked(l.Part, l.IDs)
		case lineUnsent, lineGone:
			for _, id := range l.IDs {
				delete(j.intents, id)
			}
		}
	}
	return sc.Err()
}

// recordIntentLocked notes an intent to send ids to dest; an id with an
// unconfirmed intent already keeps the first one's destination (where the
// copy that may exist went).
func (j *Journal) recordIntentLocked(dest string, ids []string) {
	for _, id := range ids {
		if _, ok := j.intents[id]; !ok {
			j.intents[id] = dest
		}
	}
}

func (j *Journal) recordKeptLocked(part json.RawMessage, ids []string) {
	if len(part) > 0 {
		j.parts = append(j.parts, append(json.RawMessage(nil), part...))
	}
	for _, id := range ids {
		j.kept[digestOf(id)] = struct{}{}
	}
}

// Kept records that the originals of ids are in a verified archive part,
// described by part (its manifest entry): an attempt that finds them kept
// does not archive them again, and the run's manifest lists the part. The
// line is buffered like Deleted, and still on disk before any of those
// messages is sent: a copy is sent only after its batch's Intend, whose
// fsync writes the buffer, this line first. A kept line lost with its
// process (no intent of its messages written yet) only leaves a part no
// manifest names; the next attempt archives those originals again.
func (j *Journal) Kept(part json.RawMessage, ids []string) error {
	b, err := json.Marshal(line{T: lineKept, IDs: ids, Part: part})
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recordKeptLocked(part, ids)
	j.buf = append(append(j.buf, b...), '\n')
	return j.err
}

// WasKept reports whether the original of orig is in a verified archive
// part of this run (by this attempt or an earlier one).
func (j *Journal) WasKept(orig string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.kept[digestOf(orig)]
	return ok
}

// KeptParts returns the archive parts holding the run's originals (every
// attempt's), as manifest entries.
func (j *Journal) KeptParts() []json.RawMessage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]json.RawMessage(nil), j.parts...)
}

// Meta returns the run description.
func (j *Journal) Meta() RunMeta {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.meta
}

// Dir is the run directory.
func (j *Journal) Dir() string { return j.dir }

// Sent durably records copies accepted by their destination. It returns
// after the records are on disk (fsync), sharing the fsync with concurrent
// callers.
func (j *Journal) Sent(recs []SentRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if b, runs, shas, ok := j.sentRunsLine(recs); ok {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.recordRunsSentLocked(runs, shas)
		return j.appendDurableLocked(b)
	}
	b := make([]byte, 0, len(recs)*(80+len(recs[0].Orig)+len(recs[0].Dest)+len(recs[0].DestID)+len(recs[0].SHA)))
	for _, r := range recs {
		b = appendSentLine(b, r)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range recs {
		j.recordSentLocked(r)
	}
	return j.appendDurableLocked(b)
}

// sentRunsLine builds the lineSentRuns line of a batch when it is one:
// every record plain (not marked maybe twice or resent), of one
// destination, with ids that make at most one run per four records. The
// bodies' digests go with it while the journal still keeps them (the
// canary's recognition of copies that lost their marker).
func (j *Journal) sentRunsLine(recs []SentRecord) (b []byte, runs []idRun, shas []string, ok bool) {
	if len(recs) < 4 {
		return nil, nil, nil, false
	}
	dest := recs[0].Dest
	var rest []string
	for _, r := range recs {
		if r.Dest != dest || r.MaybeTwice || r.Resent {
			return nil, nil, nil, false
		}
		if runs, rest = appendRuns(runs, rest, r.Orig); len(rest) > 0 || len(runs)*4 > len(recs) {
			return nil, nil, nil, false
		}
	}
	j.mu.Lock()
	wantBodies := len(j.shas) < maxBodyKeys
	j.mu.Unlock()
	if wantBodies {
		for _, r := range recs {
			if r.SHA != "" {
				shas = append(shas, r.SHA)
			}
		}
	}
	b = append(b, `{"t":"sentr","dest":`...)
	b = jsonenc.String(b, dest)
	b = append(b, ',')
	b = appendRunsJSON(b, runs)
	if len(shas) > 0 {
		b = append(b, `,"shas":`...)
		b = jsonenc.Strings(b, shas)
	}
	return append(b, "}\n"...), runs, shas, true
}

// Intend durably records, before a batch is handed to the broker, the ids
// of the source messages about to be sent to dest (one intent line per
// batch, fsynced like Sent and sharing its group commit). Sent confirms
// each; Unsent settles those the destination refused. An intent found
// unconfirmed by a later attempt (Unconfirmed) means the process died
// between sending and recording: the copy may exist.
func (j *Journal) Intend(dest string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	b := appendIDsLine(nil, lineIntent, dest, ids)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recordIntentLocked(dest, ids)
	return j.appendDurableLocked(b)
}

// appendIDsLine appends a {"t":T,"dest":D,"ids":[…]} line ("dest" left
// out when empty).
func appendIDsLine(b []byte, t, dest string, ids []string) []byte {
	b = append(b, `{"t":`...)
	b = jsonenc.String(b, t)
	if dest != "" {
		b = append(b, `,"dest":`...)
		b = jsonenc.String(b, dest)
	}
	b = append(b, `,"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.String(b, id)
	}
	return append(b, "]}\n"...)
}

// Unsent settles the intents of messages the destination refused (no copy
// exists). Buffered like Deleted: a lost unsent line only makes a later
// resume report those messages as possibly delivered twice.
func (j *Journal) Unsent(ids []string) { j.settle(lineUnsent, ids) }

// Gone settles intents an earlier attempt left unconfirmed whose messages
// were no longer in the source when this attempt drained it: they count
// as sent by the attempt that died. Buffered like Deleted.
func (j *Journal) Gone(ids []string) { j.settle(lineGone, ids) }

func (j *Journal) settle(t string, ids []string) {
	if len(ids) == 0 {
		return
	}
	b := appendIDsLine(nil, t, "", ids)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		delete(j.intents, id)
	}
	j.buf = append(j.buf, b...)
}

// Unconfirmed returns the destination of the unconfirmed intent to send
// orig (by an earlier attempt, or by this one when the send's outcome was
// unknown), if there is one: a copy may already exist there.
func (j *Journal) Unconfirmed(orig string) (dest string, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	dest, ok = j.intents[orig]
	return dest, ok
}

// unconfirmedAll is Unconfirmed for each of ids under one lock: dests[i]
// and ok[i] are ids[i]'s.
func (j *Journal) unconfirmedAll(ids []string, dests []string, ok []bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.intents) == 0 {
		return
	}
	for i, id := range ids {
		dests[i], ok[i] = j.intents[id]
	}
}

// UnconfirmedAtOpen returns the intents earlier attempts left unconfirmed
// (original id -> destination key): what a resume treats as "outcome
// unknown".
func (j *Journal) UnconfirmedAtOpen() map[string]string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[string]string, len(j.atOpen))
	for id, d := range j.atOpen {
		out[id] = d
	}
	return out
}

// appendDurableLocked appends b to the journal and returns once it is
// written and fsynced (group commit); j.mu must be held.
func (j *Journal) appendDurableLocked(b []byte) error {
	j.buf = append(j.buf, b...)
	my := j.gen
	for j.synced <= my {
		if j.err != nil {
			return j.err
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.flushLocked()
	}
	return j.err
}

// appendSentLine appends r's journal line: what json.Marshal writes for
// line{T: "sent", SentRecord: r}, and a newline, without reflection (a
// line per message moved).
func appendSentLine(b []byte, r SentRecord) []byte {
	b = append(b, `{"t":"sent","orig":`...)
	b = jsonenc.String(b, r.Orig)
	b = append(b, `,"dest":`...)
	b = jsonenc.String(b, r.Dest)
	b = append(b, `,"dest_id":`...)
	b = jsonenc.String(b, r.DestID)
	b = append(b, `,"sha":`...)
	b = jsonenc.String(b, r.SHA)
	if r.MaybeTwice {
		b = append(b, `,"maybe_twice":true`...)
	}
	if r.Resent {
		b = append(b, `,"resent":true`...)
	}
	return append(b, "}\n"...)
}

// flushLocked writes and fsyncs the buffer with the lock released during
// I/O; j.mu must be held.
func (j *Journal) flushLocked() {
	j.syncing = true
	data := j.buf
	j.buf = nil
	gen := j.gen
	j.gen++
	j.mu.Unlock()
	var err error
	if len(data) > 0 {
		_, err = j.f.Write(data)
	}
	if err == nil {
		err = j.f.Sync()
	}
	j.mu.Lock()
	j.syncing = false
	if err != nil && j.err == nil {
		j.err = fmt.Errorf("writing the run journal %s: %w", j.dir, err)
	}
	j.synced = gen + 1
	j.cond.Broadcast()
}

// Deleted records that source messages were removed. It is buffered and
// written with the next Sent or Close: a lost delete record only makes a
// resume look for a message that is gone.
func (j *Journal) Deleted(ids []string) {
	if len(ids) == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// Ids sent in batch lines are deleted as runs; the others (and any
	// recorded per message) one by one.
	var runs []idRun
	rest := ids
	if j.pendingRunN > 0 {
		rest = nil
		for _, id := range ids {
			if _, one := j.pending[id]; !one && j.inRunsLocked(id) {
				runs, _ = appendRuns(runs, nil, id)
				continue
			}
			rest = append(rest, id)
		}
	}
	for _, id := range rest {
		j.recordDeletedLocked(id)
	}
	j.recordRunsDeletedLocked(runs)
	b := append(j.buf, `{"t":"del"`...)
	if len(rest) > 0 {
		b = append(b, `,"ids":`...)
		b = jsonenc.Strings(b, rest)
	}
	if len(runs) > 0 {
		b = append(b, ',')
		b = appendRunsJSON(b, runs)
	}
	j.buf = append(b, "}\n"...)
}

// WasSent reports whether a copy of the source message was sent by the run
// (by this attempt or an earlier one). The record is complete while the
// source message is not yet deleted; afterwards only Orig is known.
func (j *Journal) WasSent(orig string) (SentRecord, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r, ok := j.pending[orig]; ok {
		return r, true
	}
	if j.inRunsLocked(orig) {
		return SentRecord{Orig: orig}, true
	}
	if len(j.sent) == 0 {
		return SentRecord{}, false
	}
	if _, ok := j.sent[digestOf(orig)]; ok {
		return SentRecord{Orig: orig}, true
	}
	return SentRecord{}, false
}

// HasBody reports whether a body with this SHA-256 was sent by the run.
func (j *Journal) HasBody(sha string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.shas[bodyKey(sha)]
	return ok
}

// Counts returns how many messages the journal records as sent and deleted.
func (j *Journal) Counts() (sent, deleted int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sentCountLocked(), j.sentCountLocked() - j.pendingCountLocked()
}

// MaybeTwice returns how many copies the journal records as possibly
// delivered twice (a send whose answer was lost and was retried), and the
// first of their records.
func (j *Journal) MaybeTwice() (int, []SentRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.twice, append([]SentRecord(nil), j.twiceRecs...)
}

// PendingRecords returns the sent records whose source message is not yet
// recorded as deleted.
func (j *Journal) PendingRecords() []SentRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]SentRecord, 0, j.pendingCountLocked())
	for _, r := range j.pending {
		out = append(out, r)
	}
	for p, iv := range j.pendingRuns {
		for _, r := range *iv {
			for n := r[0]; n <= r[1]; n++ {
				out = append(out, SentRecord{Orig: runID(p, n)})
			}
		}
	}
	return out
}

// SetStatus records the run's status (and a note) in run.json.
func (j *Journal) SetStatus(status, note string) error {
	j.mu.Lock()
	j.meta.Status = status
	j.meta.Note = note
	j.meta.Updated = time.Now().UTC()
	j.mu.Unlock()
	return j.writeMeta()
}

// Close flushes and fsyncs buffered records and closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	for j.syncing {
		j.cond.Wait()
	}
	j.flushLocked()
	err := j.err
	c := runCounts{Sent: j.sentCountLocked(), Deleted: j.sentCountLocked() - j.pendingCountLocked(), MaybeTwice: j.twice, Unconfirmed: len(j.intents)}
	j.mu.Unlock()
	if err == nil {
		if st, serr := j.f.Stat(); serr == nil {
			c.JournalBytes = st.Size()
			writeCounts(j.dir, c)
		}
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runCounts (counts.json) are a journal's counts, saved when the journal
// is closed or was last read whole, so listing runs does not read every
// journal again: valid while journal.ndjson still has JournalBytes bytes
// (it is only ever appended to: a resume, a live run).
type runCounts struct {
	JournalBytes int64 `json:"journal_bytes"`
	Sent         int   `json:"sent"`
	Deleted      int   `json:"deleted"`
	MaybeTwice   int   `json:"maybe_twice"`
	Unconfirmed  int   `json:"unconfirmed,omitempty"`
}

const countsFile = "counts.json"

// writeCounts saves c in the run directory dir; a failure (a read-only
// state directory) only makes the next listing read the journal again.
func writeCounts(dir string, c runCounts) {
	b, _ := json.Marshal(c)
	tmp := filepath.Join(dir, countsFile+".tmp")
	if os.WriteFile(tmp, append(b, '\n'), 0o600) == nil {
		_ = os.Rename(tmp, filepath.Join(dir, countsFile))
	}
}

// cachedCounts returns the counts saved when the run's journal was last
// closed, if the journal has not changed size since.
func cachedCounts(dir string) (runCounts, bool) {
	b, err := os.ReadFile(filepath.Join(dir, countsFile))
	if err != nil {
		return runCounts{}, false
	}
	var c runCounts
	if json.Unmarshal(b, &c) != nil {
		return runCounts{}, false
	}
	st, err := os.Stat(filepath.Join(dir, "journal.ndjson"))
	if err != nil || st.Size() != c.JournalBytes {
		return runCounts{}, false
	}
	return c, true
}

func (j *Journal) writeMeta() error {
	j.mu.Lock()
	b, _ := json.MarshalIndent(j.meta, "", "  ")
	j.mu.Unlock()
	tmp := filepath.Join(j.dir, "run.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(j.dir, "run.json"))
}

func readMeta(dir string) (RunMeta, error) {
	var m RunMeta
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("run description %s is damaged: %w", dir, err)
	}
	return m, nil
}

// RunInfo is a run with the counts read from its journal.
type RunInfo struct {
	RunMeta
	Sent    int `json:"sent"`
	Deleted int `json:"deleted"`
	// MaybeTwice: copies possibly delivered twice (a send whose answer was
	// lost and was retried).
	MaybeTwice int `json:"maybe_twice,omitempty"`
	// Unconfirmed: messages whose intent to send the journal records
	// without the outcome — the process died between handing them to the
	// broker and recording it (or the send's outcome was unknown). A
	// resume sends those still in the DLQ again and reports them as
	// possibly delivered twice.
	Unconfirmed int `json:"unconfirmed,omitempty"`
}

// ListRuns returns every run under stateDir with its counts, newest first.
// It reads every run's journal (`dlqctl runs`); finding a run to resume or
// skip reads only the descriptions (ListRunMetas).
func ListRuns(stateDir string) ([]RunInfo, error) {
	metas, err := ListRunMetas(stateDir)
	if err != nil {
		return nil, err
	}
	out := make([]RunInfo, 0, len(metas))
	for _, m := range metas {
		info, err := LoadRunInfo(stateDir, m)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// ListRunMetas returns the description of every run under stateDir, newest
// first, without reading their journals: a state directory keeps every
// past run, and their journals (a line per message moved) add up to
// hundreds of megabytes after a few large incidents.
func ListRunMetas(stateDir string) ([]RunMeta, error) {
	ents, err := os.ReadDir(RunsDir(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []RunMeta
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		meta, err := readMeta(filepath.Join(RunsDir(stateDir), e.Name()))
		if err != nil {
			continue
		}
		out = append(out, meta)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID > out[b].ID })
	return out, nil
}

// LoadRunInfo returns the counts of the run meta describes: those saved
// when its journal was last closed, else read from the journal.
func LoadRunInfo(stateDir string, meta RunMeta) (RunInfo, error) {
	dir := filepath.Join(RunsDir(stateDir), meta.ID)
	if c, ok := cachedCounts(dir); ok {
		return RunInfo{RunMeta: meta, Sent: c.Sent, Deleted: c.Deleted, MaybeTwice: c.MaybeTwice, Unconfirmed: c.Unconfirmed}, nil
	}
	// The size before reading: if the journal grows meanwhile (a live run),
	// the counts saved below never match its size and are not used.
	path := filepath.Join(dir, "journal.ndjson")
	st, statErr := os.Stat(path)
	j := newJournalState()
	if err := j.load(path); err != nil {
		return RunInfo{}, fmt.Errorf("reading the journal of run %s: %w", meta.ID, err)
	}
	info := RunInfo{RunMeta: meta, Sent: j.sentCountLocked(), Deleted: j.sentCountLocked() - j.pendingCountLocked(), MaybeTwice: j.twice, Unconfirmed: len(j.intents)}
	if statErr == nil && st.Mode().IsRegular() {
		writeCounts(dir, runCounts{JournalBytes: st.Size(), Sent: info.Sent, Deleted: info.Deleted, MaybeTwice: info.MaybeTwice, Unconfirmed: info.Unconfirmed})
	}
	return info, nil
}

// newestRun returns the newest run that match accepts, with its counts, or
// nil; only that run's journal is read.
func newestRun(stateDir string, match func(RunMeta) bool) (*RunInfo, error) {
	metas, err := ListRunMetas(stateDir)
	if err != nil {
		return nil, err
	}
	for _, m := range metas {
		if match(m) {
			info, err := LoadRunInfo(stateDir, m)
			if err != nil {
				return nil, err
			}
			return &info, nil
		}
	}
	return nil, nil
}

// FindUnfinished returns the newest run with the fingerprint that did not
// complete (killed, interrupted, partial), or nil.
func FindUnfinished(stateDir, fingerprint string) (*RunInfo, error) {
	return newestRun(stateDir, func(m RunMeta) bool {
		return m.Fingerprint == fingerprint && (m.Status == StatusRunning || m.Status == StatusInterrupted || m.Status == StatusPartial)
	})
}
