package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// EstimateCell is a group's estimated total in the queue, with its 95%
// interval ("" when the whole queue was read).
func EstimateCell(e *inspect.Estimate) string {
	if e == nil {
		return ""
	}
	return fmt.Sprintf("~%d (%d–%d)", e.Total, e.Low, e.High)
}

// AgeCell is how long ago sent was ("-": unknown).
func AgeCell(now, sent time.Time) string {
	if sent.IsZero() {
		return "-"
	}
	return output.Duration(now.Sub(sent))
}

// ExpiryCell says when exp comes ("in 3d2h", "expired"; "-": unknown).
func ExpiryCell(now, exp time.Time) string {
	if exp.IsZero() {
		return "-"
	}
	if !exp.After(now) {
		return "expired"
	}
	return "in " + output.Duration(exp.Sub(now))
}

// RecvCell is a group's receive counts: "3" or "1-7".
func RecvCell(g *inspect.Group) string {
	if g.ReceiveCount.Min == g.ReceiveCount.Max {
		return fmt.Sprint(g.ReceiveCount.Min)
	}
	return fmt.Sprintf("%d-%d", g.ReceiveCount.Min, g.ReceiveCount.Max)
}

// EventCell is a record's event type and version ("OrderCreated v3").
func EventCell(r *record.Record) string {
	if r.Envelope == nil {
		return ""
	}
	s := r.Envelope.EventType
	if r.Envelope.EventVersion != nil {
		s += fmt.Sprintf(" v%v", r.Envelope.EventVersion)
	}
	return s
}

// ErrorCell is a record's failure ("Type: reason"), or where the logs
// search for it ended ("(logs: …)").
func ErrorCell(r *record.Record) string {
	if r.Failure == nil {
		return ""
	}
	if src := r.Failure.Source; src != nil && src.Note != "" && !r.Failure.HasContext() {
		return "(logs: " + src.Note + ")"
	}
	return strings.Trim(strings.TrimSpace(r.Failure.Type+": "+r.Failure.Reason), ": ")
}
