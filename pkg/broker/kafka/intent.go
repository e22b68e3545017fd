package kafka

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/internal/statelock"
)

// The intent log: the group's committed offset is the journal of what a
// redrive finished, but a run killed after a batch was produced and
// before its commit landed leaves those records pending, and the next run
// produces them again — two copies at the destination that nothing
// names. So before a batch is handed to the producer, the consuming source
// (broker.Intender, called by the redrive mover) appends the
// offset ranges it is about to produce (per partition) to this run's
// intent file: one line per batch,
//
//	b PARTITION FROM TO [PARTITION FROM TO …]   (TO exclusive)
//
// under kafka-intents/GROUP/TOPIC/RUN.NONCE.log in the state dir (the line is
// written before the produce, so a killed process's intent is in the
// kernel; it is fsynced in the background, at most every intentSyncEvery:
// a host crash can lose the last intents), after a JSON
// header line ({"run", "group", "topic", "txn", "pid", "started"}). The
// owner holds an exclusive lock on the file while it runs (statelock), so
// a file whose lock is free belongs to a run that died. The next run of
// the same group and topic in that state dir claims such files, keeps the
// ranges the group's commit does not cover (clipped to the records still
// pending), carries them into its own file before anything is produced
// ({"carried": RUN, "txn": …, "ranges": [[P, FROM, TO], …]} lines: a run
// killed twice in a row still names the first), removes the dead files,
// and reports each record it produces again that one of them listed:
// without --exactly-once as possibly delivered twice; with it (txn) the
// dead run's transaction was aborted when this run's producer fenced it,
// so read_committed consumers never saw the first copy. A run that ends
// with every batch committed and every carried record settled removes
// its file; otherwise it leaves it for the next run.

// KilledRun is a run that died with records produced past the group's
// commit (its intent file was left behind).
type KilledRun struct {
	ID string
	// Txn: it produced in transactions (--exactly-once): its open
	// transaction was aborted, read_committed consumers never saw those
	// copies.
	Txn bool
}

type intentHeader struct {
	Run     string    `json:"run"`
	Group   string    `json:"group"`
	Topic   string    `json:"topic"`
	Txn     bool      `json:"txn"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

type carriedLine struct {
	Carried string     `json:"carried"`
	Txn     bool       `json:"txn"`
	Ranges  [][3]int64 `json:"ranges"`
}

// priorSpan is a range of offsets of one partition a killed run recorded
// as being produced, not covered by the group's commit.
type priorSpan struct {
	from, to int64
	run      int // index in priorIntents.runs
}

// priorIntents are the killed runs' intents this run inherited.
type priorIntents struct {
	runs   []KilledRun
	byPart map[int32][]priorSpan // sorted by from, disjoint
	total  int64                 // offsets listed
	found  int64                 // of total, produced again by this run
}

// lookup returns the killed run whose intent listed the record, if any.
func (p *priorIntents) lookup(part int32, off int64) (KilledRun, bool) {
	spans := p.byPart[part]
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to > off })
	if i < len(spans) && spans[i].from <= off {
		return p.runs[spans[i].run], true
	}
	return KilledRun{}, false
}

// intentLog is this run's intent file.
type intentLog struct {
	f     *os.File
	path  string
	buf   []byte
	warn  func(string)
	prior *priorIntents
	// syncing is the background fsync under way (nil: none); dirty: a
	// line was written since the last fsync started, at lastSync.
	syncing  chan error
	dirty    bool
	lastSync time.Time
}

func intentDir(stateDir, group, topic string) string {
	return filepath.Join(stateDir, "kafka-intents", url.PathEscape(group), url.PathEscape(topic))
}

// hasDeadIntents reports whether dir holds intent files other runs left
// (or peers hold): only then is the group's commit read to clip them.
func hasDeadIntents(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			return true
		}
	}
	return false
}

// openIntentLog claims the intent files killed runs of group on topic
// left in stateDir (their ranges the commit in plan does not cover), and
// creates this run's own, carrying those ranges into it. A state dir that
// cannot be written: no intent log, a warning (the run goes on; a kill
// then duplicates without naming the records).
func openIntentLog(stateDir, group, topic, runID string, txn bool, plan *Plan, warn func(string)) *intentLog {
	if stateDir == "" || runID == "" {
		return nil
	}
	dir := intentDir(stateDir, group, topic)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		warnf(warn, "kafka intent log: %v (a re-run after a kill cannot name the records it produces twice)", err)
		return nil
	}
	// One file per process: a resumed run (the same run id) claims the
	// file its killed attempt left like any other's.
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	path := filepath.Join(dir, url.PathEscape(runID)+"."+hex.EncodeToString(nonce[:])+".log")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		warnf(warn, "kafka intent log: %v (a re-run after a kill cannot name the records it produces twice)", err)
		return nil
	}
	if err := statelock.Hold(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil // no flock(2): a dead run's file cannot be told from a live one's
	}
	l := &intentLog{f: f, path: path, warn: warn}
	hdr, _ := json.Marshal(intentHeader{Run: runID, Group: group, Topic: topic, Txn: txn, PID: os.Getpid(), Started: time.Now().UTC()})
	buf := append(hdr, '\n')
	prior, claimed := claimDead(dir, path, plan)
	for i, r := range prior.runs {
		c := carriedLine{Carried: r.ID, Txn: r.Txn}
		for p, spans := range prior.byPart {
			for _, s := range spans {
				if s.run == i {
					c.Ranges = append(c.Ranges, [3]int64{int64(p), s.from, s.to})
				}
			}
		}
		if len(c.Ranges) == 0 {
			continue
		}
		b, _ := json.Marshal(c)
		buf = append(append(buf, b...), '\n')
	}
	if err := l.write(buf); err != nil {
		// The dead files stay: the next run reads them.
		for _, c := range claimed {
			c.Close()
		}
		l.fail(err)
		return nil
	}
	for _, c := range claimed {
		os.Remove(c.Name())
		c.Close()
	}
	if prior.total > 0 {
		l.prior = prior
	}
	return l
}

// claimDead locks and reads the intent files of dead runs in dir (all
// but own), keeping the ranges plan's commit does not cover. The files
// stay locked (returned) until the caller carried their ranges over.
func claimDead(dir, own string, plan *Plan) (*priorIntents, []*os.File) {
	p := &priorIntents{byPart: map[int32][]priorSpan{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return p, nil
	}
	var claimed []*os.File
	runIdx := map[string]int{}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if path == own || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		if statelock.Hold(f) != nil {
			f.Close() // a live run's (a peer of a shared run)
			continue
		}
		// Claimed by another run that removed it since we opened it?
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			f.Close()
			continue
		}
		claimed = append(claimed, f)
		readIntentFile(f, func(r KilledRun, part int32, from, to int64) {
			from, to = pendingPart(plan, part, from, to)
			if from >= to {
				return
			}
			k, ok := runIdx[r.ID]
			if !ok {
				k = len(p.runs)
				runIdx[r.ID] = k
				p.runs = append(p.runs, r)
			}
			p.add(part, from, to, k)
		})
	}
	for part, spans := range p.byPart {
		sort.Slice(spans, func(i, k int) bool { return spans[i].from < spans[k].from })
		p.byPart[part] = spans
	}
	return p, claimed
}

// add lists [from, to) of part, minus offsets already listed (a record
// two killed runs both produced is named once, by the first listed).
func (p *priorIntents) add(part int32, from, to int64, run int) {
	for _, s := range p.byPart[part] {
		if s.from < to && from < s.to {
			// Overlap: keep only the parts outside s (rare: a run killed
			// twice re-produced what it inherited).
			if from < s.from {
				p.add(part, from, s.from, run)
			}
			if s.to < to {
				p.add(part, s.to, to, run)
			}
			return
		}
	}
	p.byPart[part] = append(p.byPart[part], priorSpan{from, to, run})
	p.total += to - from
}

// pendingPart clips [from, to) of part to what plan's commit leaves
// pending: past the committed offset (records the commit metadata lists
// as handled are skipped by the run and never produced again, so they
// need no clipping).
func pendingPart(plan *Plan, part int32, from, to int64) (int64, int64) {
	if plan == nil {
		return from, to
	}
	if j, ok := plan.Journals[part]; ok {
		from = max(from, j.Committed())
	}
	return from, to
}

// readIntentFile calls fn for every range an intent file lists, with the
// run that listed it. A torn last line (killed mid-write) is ignored: its
// batch was not produced (the write comes first).
func readIntentFile(f *os.File, fn func(r KilledRun, part int32, from, to int64)) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	var self KilledRun
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte(`{"carried"`)):
			var c carriedLine
			if json.Unmarshal(line, &c) != nil {
				continue
			}
			for _, r := range c.Ranges {
				fn(KilledRun{ID: c.Carried, Txn: c.Txn}, int32(r[0]), r[1], r[2])
			}
		case bytes.HasPrefix(line, []byte("{")):
			var h intentHeader
			if json.Unmarshal(line, &h) == nil {
				self = KilledRun{ID: h.Run, Txn: h.Txn}
			}
		case bytes.HasPrefix(line, []byte("b ")) && self.ID != "":
			fs := strings.Fields(string(line[2:]))
			if len(fs)%3 != 0 {
				continue
			}
			for i := 0; i+2 < len(fs); i += 3 {
				p, e1 := strconv.ParseInt(fs[i], 10, 32)
				from, e2 := strconv.ParseInt(fs[i+1], 10, 64)
				to, e3 := strconv.ParseInt(fs[i+2], 10, 64)
				if e1 == nil && e2 == nil && e3 == nil && to > from {
					fn(self, int32(p), from, to)
				}
			}
		}
	}
}

// record appends the batch's offset ranges (contiguous runs of msgs, in
// the order the poll gave them: per partition, by offset), fsynced in the
// background (intentSyncEvery). A
// failed write is warned about once and ends the log (the run goes on).
func (l *intentLog) record(msgs []*Message) {
	if l == nil || l.f == nil || len(msgs) == 0 {
		return
	}
	b := append(l.buf[:0], 'b')
	part, from, to := msgs[0].Partition, msgs[0].Offset, msgs[0].Offset+1
	flush := func() {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(part), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, from, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, to, 10)
	}
	for _, m := range msgs[1:] {
		if m.Partition == part && m.Offset == to {
			to++
			continue
		}
		flush()
		part, from, to = m.Partition, m.Offset, m.Offset+1
	}
	flush()
	b = append(b, '\n')
	l.buf = b
	if _, err := l.f.Write(b); err != nil {
		l.fail(err)
		return
	}
	// The line is in the kernel now: a killed process's intent survives
	// it. Its fsync (what a host crash needs) runs in the background, at
	// most one at a time and one every intentSyncEvery: an fsync per batch
	// before the produce cost the loop a quarter to a third of its speed
	// (1 ms of fsync for ~3 ms a batch of 500 on this project's machines).
	l.dirty = true
	l.pollSync()
	if l.syncing == nil && time.Since(l.lastSync) >= intentSyncEvery {
		l.startSync()
	}
}

// intentSyncEvery bounds how often the intent log is fsynced: a host crash
// can lose the intents of at most the last intentSyncEvery (and the fsync
// under way).
const intentSyncEvery = 50 * time.Millisecond

func (l *intentLog) startSync() {
	l.dirty, l.lastSync = false, time.Now()
	l.syncing = make(chan error, 1)
	go func(f *os.File, ch chan<- error) { ch <- f.Sync() }(l.f, l.syncing)
}

// pollSync collects a finished background fsync (without waiting).
func (l *intentLog) pollSync() {
	if l.syncing == nil {
		return
	}
	select {
	case err := <-l.syncing:
		l.syncing = nil
		if err != nil && l.f != nil {
			l.fail(err)
		}
	default:
	}
}

// flush waits for the fsync under way and fsyncs what was written since.
func (l *intentLog) flush() {
	if l == nil || l.f == nil {
		return
	}
	if l.syncing != nil {
		err := <-l.syncing
		l.syncing = nil
		if err != nil {
			l.fail(err)
			return
		}
	}
	if l.dirty {
		l.dirty = false
		if err := l.f.Sync(); err != nil {
			l.fail(err)
		}
	}
}

// write appends b and fsyncs it (the header and carried lines, before
// anything is produced).
func (l *intentLog) write(b []byte) error {
	if _, err := l.f.Write(b); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *intentLog) fail(err error) {
	warnf(l.warn, "kafka intent log %s: %v (from here on, a re-run after a kill cannot name the records it produces twice)", l.path, err)
	l.f.Close()
	l.f = nil
}

// close ends the log: the file is removed when the run left nothing a
// later run must be told about (clean: every batch committed, every
// carried record produced again or committed past), else left for it.
func (l *intentLog) close(clean bool) {
	if l == nil || l.f == nil {
		return
	}
	l.flush()
	if l.f == nil {
		return
	}
	if clean && (l.prior == nil || l.prior.found >= l.prior.total) {
		os.Remove(l.path)
	}
	l.f.Close()
	l.f = nil
}

// describe says what the log inherited, for the run's tell.
func (p *priorIntents) describe() string {
	ids := make([]string, len(p.runs))
	for i, r := range p.runs {
		ids[i] = r.ID
	}
	return fmt.Sprintf("killed run(s) %s recorded %d record(s) as being produced that the group's commit does not cover: those this run produces again are reported (possibly delivered twice, or after an aborted transaction)",
		strings.Join(ids, ", "), p.total)
}
