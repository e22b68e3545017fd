package output

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Event types of the NDJSON stream long runs (redrive, archive, restore)
// write to stdout with -o ndjson. Every event is one JSON object with a
// "type" field: "progress", "message", "guard" or "summary".
const (
	EventProgress = "progress"
	EventMessage  = "message"
	EventGuard    = "guard"
	EventSummary  = "summary"
)

// Stats is a progress snapshot of a long run.
type Stats struct {
	Op      string  `json:"op"`              // "redrive", "archive", "restore"
	Done    int64   `json:"done"`            // messages moved / archived so far
	Total   int64   `json:"total,omitempty"` // expected total; 0 when unknown
	Skipped int64   `json:"skipped"`
	Failed  int64   `json:"failed"`
	Rate    float64 `json:"rate"`                  // messages per second, recent
	Target  float64 `json:"target_rate,omitempty"` // configured rate; 0 = unlimited
	Elapsed float64 `json:"elapsed_seconds"`
	ETA     float64 `json:"eta_seconds,omitempty"` // 0 when unknown
	Guard   string  `json:"guard,omitempty"`       // guard state: "ok", "paused", "tripped"
}

// MessageEvent reports what happened to one message.
type MessageEvent struct {
	MessageID   string `json:"message_id"`
	Action      string `json:"action"` // moved, skipped, failed, would-move, …
	Destination string `json:"destination,omitempty"`
	DestID      string `json:"destination_message_id,omitempty"`
	Class       string `json:"class,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// GuardEvent reports a guard check that changed state.
type GuardEvent struct {
	Name   string  `json:"name"`  // e.g. "max-returns", "max-dest-backlog"
	State  string  `json:"state"` // ok, paused, tripped, cleared
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Detail string  `json:"detail,omitempty"`
}

// Progress renders a long run: a one-line progress bar on stderr when
// stderr is a terminal (and the format is not ndjson), and NDJSON events on
// stdout with -o ndjson. Other formats print nothing while running. It is
// safe for concurrent use.
type Progress struct {
	s      *IOStreams
	ndjson *NDJSONWriter
	bar    bool
	every  time.Duration

	mu      sync.Mutex
	last    time.Time
	drawn   bool
	lastLen int
}

// NewProgress returns a progress renderer for the streams and format.
func NewProgress(s *IOStreams, f Format) *Progress {
	p := &Progress{s: s, every: 200 * time.Millisecond}
	if f == NDJSON {
		p.ndjson = NewNDJSON(s.Out)
		p.every = time.Second
	} else {
		p.bar = s.ErrTTY
	}
	return p
}

// Update shows a snapshot; calls more often than the refresh interval
// (200ms on a terminal, 1s for NDJSON) are dropped unless force is set.
func (p *Progress) Update(st Stats, force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !force && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	switch {
	case p.ndjson != nil:
		_ = p.ndjson.Write(typed(EventProgress, st))
	case p.bar:
		line := BarLine(st, 24)
		pad := ""
		if n := p.lastLen - len([]rune(line)); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(p.s.ErrOut, "\r%s%s", line, pad)
		p.drawn, p.lastLen = true, len([]rune(line))
	}
}

// Message emits a per-message event (NDJSON only).
func (p *Progress) Message(ev MessageEvent) {
	if p.ndjson != nil {
		_ = p.ndjson.Write(typed(EventMessage, ev))
	}
}

// Guard emits a guard event: NDJSON on stdout, or a line on stderr.
func (p *Progress) Guard(ev GuardEvent) {
	if p.ndjson != nil {
		_ = p.ndjson.Write(typed(EventGuard, ev))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	msg := fmt.Sprintf("guard %s %s: %s (limit %s)", ev.Name, ev.State, trimFloat(ev.Value), trimFloat(ev.Limit))
	if ev.Detail != "" {
		msg += ": " + ev.Detail
	}
	st := Yellow // paused, resumed
	if ev.State == "tripped" {
		st = BoldRed
	}
	fmt.Fprintln(p.s.ErrOut, p.s.PaintErr(st, msg))
}

// Summary emits v (a struct or map) as the final summary event (NDJSON
// only; other formats print their own summary).
func (p *Progress) Summary(v any) error {
	if p.ndjson == nil {
		return nil
	}
	return p.ndjson.Write(typed(EventSummary, v))
}

// NDJSON reports whether events go to stdout as NDJSON.
func (p *Progress) NDJSON() bool { return p.ndjson != nil }

// Done clears the progress bar so the summary starts on a clean line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *Progress) clearLocked() {
	if p.drawn {
		fmt.Fprintf(p.s.ErrOut, "\r%s\r", strings.Repeat(" ", p.lastLen))
		p.drawn, p.lastLen = false, 0
	}
}

// BarLine renders one progress line: bar (when the total is known), moved
// (archived, sent),
// rate now, target, ETA and guard state.
func BarLine(st Stats, width int) string {
	var b strings.Builder
	if st.Op != "" {
		b.WriteString(st.Op + " ")
	}
	if st.Total > 0 && width > 0 {
		frac := min(float64(st.Done)/float64(st.Total), 1)
		n := int(frac * float64(width))
		b.WriteString("[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "] ")
		fmt.Fprintf(&b, "%d/%d", st.Done, st.Total)
	} else {
		fmt.Fprintf(&b, "%d", st.Done)
	}
	verb := "moved"
	switch st.Op {
	case "archive":
		verb = "archived"
	case "restore":
		verb = "sent"
	}
	fmt.Fprintf(&b, " %s · %s/s", verb, trimFloat(st.Rate))
	if st.Target > 0 {
		fmt.Fprintf(&b, " (target %s/s)", trimFloat(st.Target))
	}
	if st.Skipped > 0 {
		fmt.Fprintf(&b, " · %d skipped", st.Skipped)
	}
	if st.Failed > 0 {
		fmt.Fprintf(&b, " · %d failed", st.Failed)
	}
	if st.ETA > 0 {
		b.WriteString(" · ETA " + Duration(time.Duration(st.ETA*float64(time.Second))))
	}
	if st.Guard != "" {
		b.WriteString(" · guard " + st.Guard)
	}
	return b.String()
}

func trimFloat(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}

// typed returns v's JSON object with "type" set first.
func typed(typ string, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || len(b) < 2 || b[0] != '{' {
		b, _ = json.Marshal(map[string]any{"value": v})
	}
	head := `{"type":` + quote(typ)
	if string(b) == "{}" {
		return json.RawMessage(head + "}")
	}
	return json.RawMessage(head + "," + string(b[1:]))
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
