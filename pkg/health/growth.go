package health

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Counts are a queue's depth in neutral terms (check and watch JSON,
// docs/schema/health.schema.json#/$defs/counts): Visible is what a read
// could return now (SQS visible, RabbitMQ ready, Kafka pending for
// dlqctl's group), InFlight what is held by readers (SQS in flight,
// RabbitMQ unacknowledged), Delayed what is not deliverable yet (SQS).
type Counts struct {
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	Delayed  int `json:"delayed"`
	// Exact is false when the broker's counts are approximate (SQS:
	// eventually consistent, up to a minute behind).
	Exact bool `json:"exact"`
	// terms are the broker's words for the counts (zero: SQS's).
	terms broker.DepthTerms
}

func countsOf(d broker.DepthReading) Counts {
	return Counts{Visible: int(d.Ready), InFlight: int(d.Held), Delayed: int(d.Delayed), Exact: d.Exact, terms: d.Terms}
}

// words are the broker's words for the counts, SQS's when it gave none.
func (c Counts) words() broker.DepthTerms {
	if c.terms.Ready == "" {
		return broker.DepthTerms{Ready: "visible", Held: "in flight", Delayed: "delayed"}
	}
	return c.terms
}

// Reading is one depth reading of a queue.
type Reading struct {
	At     time.Time `json:"at"`
	Counts Counts    `json:"counts"`
}

// Depth is every message in the queue: visible, in flight (someone is
// looking at it, it is still there) and delayed.
func (r Reading) Depth() int { return r.Counts.Visible + r.Counts.InFlight + r.Counts.Delayed }

// Rate is a depth change scaled to a window.
type Rate struct {
	// PerWindow is the change in depth per Window (negative when draining).
	PerWindow float64
	Window    time.Duration
	// Over is how far apart the two readings were.
	Over time.Duration
	// Base is the earlier reading, Now the later one.
	Base, Now Reading
}

// GrowthRate compares now with the earlier reading whose age is closest to
// window, among readings at least minAge old, and scales the difference to
// window. ok is false when no earlier reading qualifies. check uses it with
// minAge = window/2 (a cron run a few seconds early still counts); watch
// with minAge = one tick.
func GrowthRate(history []Reading, now Reading, window, minAge time.Duration) (Rate, bool) {
	var (
		best    Reading
		bestGap time.Duration = -1
	)
	for _, r := range history {
		age := now.At.Sub(r.At)
		if age <= 0 || age < minAge {
			continue
		}
		gap := age - window
		if gap < 0 {
			gap = -gap
		}
		if bestGap < 0 || gap < bestGap {
			best, bestGap = r, gap
		}
	}
	if bestGap < 0 {
		return Rate{}, false
	}
	over := now.At.Sub(best.At)
	per := float64(now.Depth()-best.Depth()) * float64(window) / float64(over)
	return Rate{PerWindow: per, Window: window, Over: over, Base: best, Now: now}, true
}

// GrowthLimit is a --max-growth threshold: at most N new messages per Window.
type GrowthLimit struct {
	N      int
	Window time.Duration
}

func (g GrowthLimit) String() string { return fmt.Sprintf("%d/%s", g.N, shortDur(g.Window)) }

var growthRE = regexp.MustCompile(`^\s*(\d+)\s*(?:/\s*(\S+))?\s*$`)

// ParseGrowthLimit parses "N/WINDOW" (e.g. "50/5m", "10/1h"); a bare "N"
// means per 5 minutes.
func ParseGrowthLimit(s string) (GrowthLimit, error) {
	m := growthRE.FindStringSubmatch(s)
	if m == nil {
		return GrowthLimit{}, errs.BadInputf("--max-growth %q is not N/WINDOW; write it like 50/5m (at most 50 new messages per 5 minutes)", s)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return GrowthLimit{}, errs.BadInputf("--max-growth %q: %s is not a whole number; write it like 50/5m", s, m[1])
	}
	w := 5 * time.Minute
	if m[2] != "" {
		ws := m[2]
		if ws[0] < '0' || ws[0] > '9' {
			ws = "1" + ws // "10/m" = per 1m
		}
		w, err = time.ParseDuration(ws)
		if err != nil || w < time.Second {
			return GrowthLimit{}, errs.BadInputf("--max-growth %q: window %q is not a duration of at least 1s; write it like 50/5m", s, m[2])
		}
	}
	return GrowthLimit{N: n, Window: w}, nil
}

func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// History keeps depth readings between one-shot runs.
type History interface {
	Load(key string) ([]Reading, error)
	Save(key string, rs []Reading) error
}

// FileHistory stores readings as one small JSON file per queue in Dir.
type FileHistory struct{ Dir string }

// historyKeep bounds what a history file holds.
const (
	historyMaxAge   = 25 * time.Hour
	historyMaxCount = 500
)

func (h FileHistory) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	name := historyName(key)
	return filepath.Join(h.Dir, fmt.Sprintf("%s-%s.json", name, hex.EncodeToString(sum[:6])))
}

// historyName is the queue's name in a history file name: what follows
// the last ':' or '/' of its key (an SQS ARN's queue name, a RabbitMQ
// queue, a Kafka topic), with any other character than letters, digits,
// '.', '_' and '-' replaced.
func historyName(key string) string {
	name := key[strings.LastIndexAny(key, ":/")+1:]
	name = strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, name)
	if name == "" || strings.Trim(name, ".") == "" {
		return "queue"
	}
	return name
}

// Load returns the stored readings (none when there is no file yet).
func (h FileHistory) Load(key string) ([]Reading, error) {
	b, err := os.ReadFile(h.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []Reading
	if err := json.Unmarshal(b, &rs); err != nil {
		// A damaged file only costs one growth reading: start over.
		return nil, nil
	}
	return rs, nil
}

// Save writes the readings atomically (temp file and rename).
func (h FileHistory) Save(key string, rs []Reading) error {
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(h.Dir, ".reading-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), h.path(key))
}

// Trim drops readings older than 25 h (relative to now) and keeps at most
// the newest 500.
func Trim(rs []Reading, now time.Time) []Reading {
	out := rs[:0:0]
	for _, r := range rs {
		if now.Sub(r.At) <= historyMaxAge {
			out = append(out, r)
		}
	}
	if len(out) > historyMaxCount {
		out = out[len(out)-historyMaxCount:]
	}
	return out
}
