package logs

import (
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Default window margins: logs are searched from a message's first send
// time minus SendMargin (clock skew, a consumer that logs before SQS
// stamps the message) to now. On a FIFO queue SQS resets the send time
// when it dead-letters a message, so the search starts FIFOMargin
// earlier; a record with no time at all is searched over the last
// UnknownSpan.
const (
	SendMargin  = 15 * time.Minute
	FIFOMargin  = 6 * time.Hour
	UnknownSpan = 24 * time.Hour
)

// Window is the --logs-window setting: the default per-message window, a
// span back from now, or fixed times.
type Window struct {
	Spec     string // as given ("" = default)
	Last     time.Duration
	From, To time.Time // fixed; To zero = now
}

// ParseWindow parses --logs-window: "" (default: from each message's first
// send time, minus a margin, to now), a duration back from now ("6h",
// "90m", "3d"), or "FROM..TO" with RFC 3339 times (TO may be empty: now).
func ParseWindow(s string) (Window, error) {
	s = strings.TrimSpace(s)
	w := Window{Spec: s}
	if s == "" {
		return w, nil
	}
	if from, to, ok := strings.Cut(s, ".."); ok {
		var err error
		if w.From, err = time.Parse(time.RFC3339, strings.TrimSpace(from)); err != nil {
			return w, errs.BadInputf("--logs-window %q: %q is not an RFC 3339 time (e.g. 2024-05-01T12:00:00Z); use FROM..TO, FROM.. or a duration such as 6h", s, from)
		}
		if to = strings.TrimSpace(to); to != "" {
			if w.To, err = time.Parse(time.RFC3339, to); err != nil {
				return w, errs.BadInputf("--logs-window %q: %q is not an RFC 3339 time (e.g. 2024-05-01T18:00:00Z); use FROM..TO, FROM.. or a duration such as 6h", s, to)
			}
			if !w.To.After(w.From) {
				return w, errs.BadInputf("--logs-window %q ends before it starts; pass FROM..TO with FROM earlier than TO", s)
			}
		}
		return w, nil
	}
	d, err := parseSpan(s)
	if err != nil || d <= 0 {
		return w, errs.BadInputf("--logs-window %q is neither a duration (6h, 90m, 3d) nor FROM..TO with RFC 3339 times", s)
	}
	w.Last = d
	return w, nil
}

func parseSpan(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, err
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// Request returns the lookup for rec at time now.
func (w Window) Request(rec *record.Record, now time.Time) Request {
	r := Request{MessageID: rec.MessageID, To: now.Add(time.Minute)}
	switch {
	case !w.From.IsZero():
		r.From = w.From
		if !w.To.IsZero() {
			r.To = w.To
		}
	case w.Last > 0:
		r.From = now.Add(-w.Last)
	default:
		first := rec.System.SentAt
		if fr := rec.System.FirstReceivedAt; !fr.IsZero() && (first.IsZero() || fr.Before(first)) {
			first = fr
		}
		switch {
		case first.IsZero():
			r.From = now.Add(-UnknownSpan)
		case rec.System.MessageGroupID != "":
			r.From = first.Add(-FIFOMargin)
		default:
			r.From = first.Add(-SendMargin)
		}
	}
	return r
}
