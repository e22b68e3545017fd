package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/internal/statelock"
)

// The member ledger: a run that joins dlqctl's consumer group records its
// member id and session timeout in the state dir (one file per process,
// kafka-members/GROUP/), and holds an exclusive lock on that file while it
// runs. A run killed with -9 leaves its file behind, unlocked, and its
// member in the group until the member's session times out: its partitions
// are held by nobody. The next run in the same state dir finds those
// files, asks the group whether their members are still in it, and waits
// for them to be dropped (their session timeout + deadMemberMargin) before
// it joins, so it is assigned their partitions and finishes them — instead
// of ending with their records "held by other members". A file whose lock
// is held belongs to a live process: a peer of a shared run, never waited
// for here.

// deadMemberMargin is added to a dead member's session timeout: the
// coordinator's own timer and the rebalance that follows.
const deadMemberMargin = 5 * time.Second

// ledgerSeq tells apart the entries of consumers one process opens.
var ledgerSeq atomic.Int64

// memberRecord is one process's entry in the member ledger.
type memberRecord struct {
	Group     string    `json:"group"`
	Topic     string    `json:"topic"`
	MemberID  string    `json:"member_id"`
	PID       int       `json:"pid"`
	SessionMS int64     `json:"session_timeout_ms"`
	Started   time.Time `json:"started"`
}

func (r memberRecord) session() time.Duration { return time.Duration(r.SessionMS) * time.Millisecond }

func memberDir(stateDir, group string) string {
	return filepath.Join(stateDir, "kafka-members", url.PathEscape(group))
}

// memberLedger is this process's entry: written when the group assigns it
// partitions (its member id is known then), removed when it leaves the
// group cleanly.
type memberLedger struct {
	mu   sync.Mutex
	f    *os.File
	path string
	rec  memberRecord
	warn func(string)
}

// openMemberLedger creates this process's ledger file and locks it ("" or
// a state dir that cannot be written: no ledger, a warning).
func openMemberLedger(stateDir, group, topic string, session time.Duration, warn func(string)) *memberLedger {
	if stateDir == "" {
		return nil
	}
	dir := memberDir(stateDir, group)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		warnf(warn, "kafka member ledger: %v (a re-run after a kill will not know this run's members)", err)
		return nil
	}
	now := time.Now()
	path := filepath.Join(dir, fmt.Sprintf("%d-%d-%d.json", os.Getpid(), now.UnixNano(), ledgerSeq.Add(1)))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		warnf(warn, "kafka member ledger: %v (a re-run after a kill will not know this run's members)", err)
		return nil
	}
	if err := statelock.Hold(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil // no flock(2): a dead member cannot be told from a live one
	}
	return &memberLedger{f: f, path: path, warn: warn,
		rec: memberRecord{Group: group, Topic: topic, PID: os.Getpid(), SessionMS: session.Milliseconds(), Started: now.UTC()}}
}

// setMember records the member id the group gave this process (rewritten
// in place: the lock stays on the open file).
func (l *memberLedger) setMember(id string) {
	if l == nil || id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.MemberID == id || l.f == nil {
		return
	}
	l.rec.MemberID = id
	b, _ := json.Marshal(l.rec)
	if err := l.f.Truncate(0); err == nil {
		_, err = l.f.WriteAt(b, 0)
		if err == nil {
			err = l.f.Sync()
		}
		if err != nil {
			warnf(l.warn, "kafka member ledger: %v", err)
		}
	}
}

// close removes the entry (the member left the group).
func (l *memberLedger) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		os.Remove(l.path)
		l.f.Close()
		l.f = nil
	}
}

func warnf(warn func(string), format string, a ...any) {
	if warn != nil {
		warn(fmt.Sprintf(format, a...))
	}
}

// deadRecord is a ledger entry whose process is dead.
type deadRecord struct {
	memberRecord
	path string
}

// deadMembers lists the entries of group whose process is dead (their
// lock is free). Unreadable or empty entries of dead processes (killed
// before the group answered) are removed.
func deadMembers(stateDir, group string) []deadRecord {
	if stateDir == "" {
		return nil
	}
	dir := memberDir(stateDir, group)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []deadRecord
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if statelock.Probe(f) != nil {
			f.Close() // a live process: a peer
			continue
		}
		var r memberRecord
		b, _ := os.ReadFile(path)
		f.Close()
		if json.Unmarshal(b, &r) != nil || r.MemberID == "" {
			os.Remove(path)
			continue
		}
		out = append(out, deadRecord{r, path})
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Started.Before(out[k].Started) })
	return out
}

// waitDeadMembers waits, before this run joins group, for the members of
// killed dlqctl runs (the member ledger in stateDir) that the group still
// lists to be dropped, at most their session timeout + deadMemberMargin;
// tell says what it waits for and how long. Entries whose members are gone
// are removed. It returns the members still listed when it stopped
// waiting.
func waitDeadMembers(ctx context.Context, adm *kadm.Client, stateDir, group string, tell func(string)) (int, error) {
	dead := deadMembers(stateDir, group)
	if len(dead) == 0 {
		return 0, nil
	}
	listed := func() (map[string]bool, error) {
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return nil, err
		}
		in := map[string]bool{}
		if g, ok := gs[group]; ok && g.Err == nil {
			for _, m := range g.Members {
				in[m.MemberID] = true
			}
		}
		return in, nil
	}
	in, err := listed()
	if err != nil {
		return 0, nil // the join reports a group the run cannot describe
	}
	var wait time.Duration
	var pids []string
	var stale []deadRecord
	for _, d := range dead {
		if !in[d.MemberID] {
			os.Remove(d.path)
			continue
		}
		stale = append(stale, d)
		pids = append(pids, fmt.Sprint(d.PID))
		wait = max(wait, d.session()+deadMemberMargin)
	}
	if len(stale) == 0 {
		return 0, nil
	}
	if tell != nil {
		tell(fmt.Sprintf("group %s still lists %d member(s) of dlqctl run(s) killed earlier in this state dir (pid %s): waiting up to %s (their session timeout %s + %s) for the group to drop them, so this run is assigned their partitions",
			group, len(stale), strings.Join(pids, ", "), wait.Round(time.Second), stale[0].session(), deadMemberMargin))
	}
	deadline := time.Now().Add(wait)
	for {
		left := stale[:0]
		for _, d := range stale {
			if in[d.MemberID] {
				left = append(left, d)
			} else {
				os.Remove(d.path)
			}
		}
		stale = left
		if len(stale) == 0 || !time.Now().Before(deadline) {
			return len(stale), nil
		}
		select {
		case <-ctx.Done():
			return len(stale), ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if in, err = listed(); err != nil {
			return len(stale), nil
		}
	}
}
