package report

import (
	"fmt"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// ReadAccount is what a triage read (sample, group, classify) saw.
type ReadAccount struct {
	Queue    broker.Endpoint // nil for a file or an archive
	Read     int             // records read
	Complete bool            // the whole queue (or file) was read
	Depth    int             // queue depth at the start (0: unknown)
	Note     string
	// Partial: --all was asked for and the queue could not be read whole
	// (FIFO groups locked behind held messages, messages in flight
	// elsewhere); the command exits 4 after printing what it read.
	Partial bool
}

// Finish turns a partial full read into exit 4, after the results were
// printed.
func (r *ReadAccount) Finish(err error) error {
	if err == nil && r != nil && r.Partial {
		return errs.Partialf("partial result: %s", r.Note)
	}
	return err
}

// Describe is the one-line account of what was read, for stderr; matched
// of the records read matched the selection described by selection.
func (r *ReadAccount) Describe(matched int, selection string) string {
	var b strings.Builder
	switch {
	case r.Queue == nil:
		fmt.Fprintf(&b, "read %d records", r.Read)
	case r.Complete:
		fmt.Fprintf(&b, "read all %d messages of %s", r.Read, r.Queue.Name())
	case r.Depth > r.Read:
		fmt.Fprintf(&b, "read a sample of %d of about %d messages of %s; totals marked ~ are estimates (95%% Wilson interval)", r.Read, r.Depth, r.Queue.Name())
	default:
		fmt.Fprintf(&b, "read %d messages of %s", r.Read, r.Queue.Name())
	}
	if selection != "all messages" && matched != r.Read {
		fmt.Fprintf(&b, "; %d matched %s", matched, selection)
	}
	return b.String()
}
