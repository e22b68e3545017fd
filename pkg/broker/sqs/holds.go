package sqs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// The hold ledger (docs/state.md, "holds/") lets a run know what a dlqctl
// process that died without releasing its messages (kill -9, OOM, a lost
// host) still hides in a queue. SQS keeps such messages invisible until
// their visibility timeout ends, and nothing in the queue says who holds
// them: without the ledger a re-run finds the queue empty, reports the
// run complete, and the dead process's messages reappear a minute later.
//
// Every process that receives from a queue keeps one small file under
// STATE_DIR/holds/<queue key>/, locked (flock) for as long as it lives,
// saying until when at most its messages may stay hidden and how many it
// may hold. The file is written ahead of every receive and every
// heartbeat extension, so it always covers what SQS may hide. A clean end
// (everything deleted or released) removes it. A file nobody holds the
// lock on belongs to a dead process: while its time has not passed, a new
// run of the queue treats those messages like those of a receive whose
// answer was lost — it waits for them at its end (--wait-inflight) or
// reports them and exits 4 — instead of calling the queue drained.

// holdRecordSize is the fixed length of a ledger file: each update is one
// pwrite(2) of the whole record (a kill cannot leave half of one).
const holdRecordSize = 512

// holdHeadroom: a write covers this much beyond what is needed now, so a
// busy run rewrites its file about every 3 s (at the default 60 s
// visibility), not per receive; a re-run after a kill waits at most this
// much longer than it must.
func holdHeadroom(visibility time.Duration) time.Duration {
	return max(time.Second, visibility/20)
}

// holdFile is the content of one process's ledger file.
type holdFile struct {
	Queue   string    `json:"queue"`
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	// Until: no message this process received from the queue stays hidden
	// past this time (unless its heartbeat extends it, which rewrites the
	// file first).
	Until time.Time `json:"until"`
	// Held: at most this many messages are hidden by this process.
	Held int `json:"held"`
	// Visibility is how long a receive of this process hides what it takes
	// (its --visibility): a receive the server answers later than Until
	// allows (a server slowed down, the process dead by then) hides its
	// messages that long from then.
	Visibility time.Duration `json:"visibility,omitempty"`
}

// DeadHold is what a dead dlqctl process may still hide in a queue.
type DeadHold struct {
	PID   int
	Host  string
	Held  int
	Until time.Time
	// Visibility: how long its receives hid what they took (0: not
	// recorded, a file of an older dlqctl).
	Visibility time.Duration
	// Seen: when it last wrote its file (about when it died, at the latest).
	Seen time.Time
	// Expired: Until has passed, but by less than a visibility: a receive
	// of the dead process that the server answered late may still hide
	// what it took (a run asks the queue's counts before it ends).
	Expired bool
	path    string
}

// lateAnswerGrace is how long after a dead hold's time it is still listed
// (Expired): a receive answered late hides what it took for a visibility
// from the answer. Files without a recorded visibility use SQS's default.
func (h DeadHold) lateAnswerGrace() time.Duration {
	if h.Visibility > 0 {
		return h.Visibility
	}
	return 30 * time.Second
}

// Waiting is the holds whose time has not passed (what a run waits for).
func Waiting(holds []DeadHold) []DeadHold {
	var out []DeadHold
	for _, h := range holds {
		if !h.Expired {
			out = append(out, h)
		}
	}
	return out
}

// HoldLedger is this process's ledger file for one queue.
type HoldLedger struct {
	dir  string
	path string

	mu      sync.Mutex
	f       *os.File
	rec     holdFile
	written time.Time
	broken  bool
	warn    func(string)
}

// queueKey names a queue's ledger folder: the queue URL, hashed (URLs hold
// characters no file name should).
func queueKey(queueURL string) string {
	sum := sha256.Sum256([]byte(queueURL))
	return hex.EncodeToString(sum[:12])
}

// HoldsDir is the ledger folder of the queue in stateDir.
func HoldsDir(stateDir, queueURL string) string {
	return filepath.Join(stateDir, "holds", queueKey(queueURL))
}

// OpenHoldLedger creates this process's ledger file for queueURL in
// stateDir and locks it. It writes nothing until the first Cover. warn is
// told once if the file cannot be written later (the run goes on).
func OpenHoldLedger(stateDir, queueURL string, warn func(string)) (*HoldLedger, error) {
	dir := HoldsDir(stateDir, queueURL)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	started := time.Now().UTC()
	path := filepath.Join(dir, fmt.Sprintf("%d-%d.hold", os.Getpid(), started.UnixNano()))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockHold(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &HoldLedger{dir: dir, path: path, f: f, warn: warn,
		rec: holdFile{Queue: queueURL, PID: os.Getpid(), Host: host, Started: started}}, nil
}

// Cover makes the file say that messages may stay hidden until until, and
// that up to held are hidden. It writes only when the file says less
// (then with headroom), before the call that would hide them.
func (l *HoldLedger) Cover(until time.Time, held int, headroom time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.broken {
		return
	}
	needTime := until.After(l.rec.Until)
	needHeld := held > l.rec.Held
	if !needTime && !needHeld {
		return
	}
	if needTime {
		l.rec.Until = until.Add(headroom).UTC().Truncate(time.Millisecond)
	}
	if needHeld {
		// Headroom on the count too: a busy run's held count moves with
		// every receive.
		l.rec.Held = held + held/4 + 10
	}
	l.writeLocked()
}

// Lower sets what the file says to exactly held (fewer messages hidden now,
// after deletes and releases), keeping its time. Cheap: at most one write
// a second.
func (l *HoldLedger) Lower(held int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.broken || held >= l.rec.Held || time.Since(l.written) < time.Second {
		return
	}
	l.rec.Held = held + held/4 + 10
	l.writeLocked()
}

func (l *HoldLedger) writeLocked() {
	b, err := json.Marshal(l.rec)
	if err == nil && len(b) >= holdRecordSize {
		err = errors.New("ledger record too long")
	}
	if err == nil {
		buf := bytes.Repeat([]byte{' '}, holdRecordSize)
		copy(buf, b)
		buf[holdRecordSize-1] = '\n'
		_, err = l.f.WriteAt(buf, 0)
	}
	if err != nil {
		l.broken = true
		if l.warn != nil {
			l.warn(fmt.Sprintf("the hold ledger %s cannot be written (%v): if this process dies, a re-run cannot know which messages it still hides", l.path, err))
		}
		return
	}
	l.written = time.Now()
}

// Close ends the ledger. done: every message this process received is
// deleted or released (nothing hidden): the file is removed. Otherwise it
// stays, unlocked, for a later run to find until its time has passed.
func (l *HoldLedger) Close(done bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if done || l.rec.Until.IsZero() {
		os.Remove(l.path)
	}
	l.f.Close() // drops the lock
	l.f = nil
}

// DeadHolds lists what dead processes may still hide in the queue: ledger
// files nobody holds the lock on, whose time has not passed, and (Expired)
// those whose time passed less than a visibility ago. Files older than
// that (and unreadable leftovers older than a day) are removed.
// Files of live processes (a peer of a shared run, another dlqctl working
// on the queue) are not listed: they release what they hold themselves.
func DeadHolds(stateDir, queueURL string) ([]DeadHold, error) {
	dir := HoldsDir(stateDir, queueURL)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []DeadHold
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".hold") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		h, ok, alive := readDeadHold(path)
		switch {
		case alive:
			continue
		case !ok:
			if st, err := os.Stat(path); err == nil && now.Sub(st.ModTime()) > 24*time.Hour {
				os.Remove(path)
			}
			continue
		case !h.Until.After(now.Add(-h.lateAnswerGrace())):
			os.Remove(path) // its messages are surely visible again
			continue
		case !h.Until.After(now):
			h.Expired = true
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Until.Before(out[j].Until) })
	return out, nil
}

// readDeadHold reads a ledger file if nobody holds its lock (its process is
// gone). ok: it parsed; alive: a live process holds it.
func readDeadHold(path string) (h DeadHold, ok, alive bool) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return h, false, false
	}
	defer f.Close()
	if err := tryLockHold(f, false); err != nil {
		return h, false, errors.Is(err, errHoldLocked)
	}
	b := make([]byte, holdRecordSize)
	n, _ := f.ReadAt(b, 0)
	var rec holdFile
	if err := json.Unmarshal(bytes.TrimSpace(b[:n]), &rec); err != nil || rec.Until.IsZero() {
		return h, false, false
	}
	seen := rec.Started
	if st, err := f.Stat(); err == nil {
		seen = st.ModTime()
	}
	return DeadHold{PID: rec.PID, Host: rec.Host, Held: rec.Held, Until: rec.Until, Visibility: rec.Visibility, Seen: seen, path: path}, true, false
}

// ForgetDeadHolds removes the ledger files of holds whose time has passed
// (their messages are visible again and a run read past them).
func ForgetDeadHolds(holds []DeadHold) {
	now := time.Now()
	for _, h := range holds {
		if !h.Until.After(now) && h.path != "" {
			// Only if still unlocked: never remove a live process's file.
			if f, err := os.OpenFile(h.path, os.O_RDWR, 0); err == nil {
				if tryLockHold(f, true) == nil {
					os.Remove(h.path)
				}
				f.Close()
			}
		}
	}
}

// DescribeDeadHolds says what dead processes hide, for a person.
func DescribeDeadHolds(holds []DeadHold) string {
	if len(holds) == 0 {
		return ""
	}
	n, until := 0, time.Time{}
	pids := make([]string, 0, len(holds))
	for _, h := range holds {
		n += h.Held
		if h.Until.After(until) {
			until = h.Until
		}
		pids = append(pids, fmt.Sprint(h.PID))
	}
	proc := "a dlqctl process"
	if len(holds) > 1 {
		proc = fmt.Sprintf("%d dlqctl processes", len(holds))
	}
	return fmt.Sprintf("%s that ended without releasing its messages (pid %s) may still hide up to %d message(s) of this queue, until %s (in %s)",
		proc, strings.Join(pids, ", "), n, until.Local().Format("15:04:05"), max(0, time.Until(until)).Round(time.Second))
}
