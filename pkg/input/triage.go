package input

import (
	"context"
	"errors"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// Triage says how much a triage command (group, classify) reads and what
// it does with each record.
type Triage struct {
	// In is where the records come from; In.Prepare is the command's
	// per-record work (classification, group keys): for files and archives
	// it runs in parallel on the decoding goroutines (it must be safe for
	// concurrent use on different records); with Logs it runs after the
	// record's failure context from the logs is attached.
	In Options
	// All is --all: a queue that cannot be read whole ends partial.
	All bool
	// FileLimit, when above 0, stops a file (or archive) after that many
	// records (--sample given explicitly with --from).
	FileLimit int
	// Logs (--logs), when set, looks records without failure context up
	// in the consumer's logs in batches before fn sees them.
	Logs *logs.Lookup
	// Progress, when set, is told every 100 records how many were read;
	// ProgressDone when the read ends.
	Progress     func(read int)
	ProgressDone func()
}

// ReadTriage streams records for triage: it warns about the side effects
// of peeking, reports progress, honours FileLimit for files too, and
// accounts for how much of the queue was read. fn gets what In.Prepare
// returned, one record at a time, in order; a Prepare that returns an
// error (a selection's refusal) stops the read with it.
func (r *Reader) ReadTriage(ctx context.Context, t Triage, fn RecordFunc) (*report.ReadAccount, error) {
	if t.In.From == "" {
		if err := r.WarnPeek(ctx, t.In.Queue); err != nil {
			return nil, err
		}
	}
	read := 0
	stoppedEarly := false
	in := t.In
	pre := in.Prepare
	var next func(rec *record.Record, parsed, prepared any) error
	flush := func() error { return nil }
	if fn0 := fn; fn0 != nil {
		// A pre that returns an error (a selection's refusal) stops the read.
		fn = func(rec *record.Record, parsed, prepared any) error {
			if err, ok := prepared.(error); ok {
				return err
			}
			return fn0(rec, parsed, prepared)
		}
	}
	if t.Logs == nil {
		next = fn
	} else {
		// Log lookups batch records and attach their failure context
		// before anything classifies them: pre runs after.
		in.Prepare = nil
		var streamed func(rec *record.Record, parsed any) error
		streamed, flush = t.Logs.Stream(func(rec *record.Record, parsed any) error {
			var prep any
			if pre != nil {
				prep = pre(rec, parsed)
			}
			return fn(rec, parsed, prep)
		})
		next = func(rec *record.Record, parsed, _ any) error { return streamed(rec, parsed) }
	}
	res, err := r.ForEachPrepared(ctx, in, func(rec *record.Record, parsed, prepared any) error {
		read++
		if read%100 == 0 && t.Progress != nil {
			t.Progress(read)
		}
		if err := next(rec, parsed, prepared); err != nil {
			return err
		}
		if t.FileLimit > 0 && read >= t.FileLimit {
			stoppedEarly = true
			return ErrStop
		}
		return nil
	})
	if t.ProgressDone != nil {
		t.ProgressDone()
	}
	if err == nil {
		if err = flush(); errors.Is(err, ErrStop) {
			err = nil
		}
	}
	t.Logs.Summary()
	if err != nil {
		return nil, err
	}
	out := &report.ReadAccount{Read: read, Complete: !stoppedEarly}
	if res.Scan != nil {
		c := res.Scan.Depth
		out.Queue = res.Queue
		out.Depth = int(c.Ready + c.Held + c.Delayed)
		out.Complete = res.Scan.Complete
		out.Note = res.Scan.Note
		switch {
		case res.Scan.Partial():
			// A FIFO queue on AWS hands out nothing more of a group while
			// one of its messages is held: say exactly what was read (with
			// --all, as the error that makes the exit code 4).
			out.Partial = t.All
			if !out.Partial {
				r.Report.Warnf("%s", res.Scan.Note)
			}
		case strings.Contains(res.Scan.Note, "in-flight"):
			r.Report.Warnf("%s: read %d of about %d messages; the results are a bounded sample", res.Scan.Note, read, out.Depth)
		case res.Scan.CountsNote != "":
			// The read is complete (it read until SQS had nothing more to
			// give); the counts are advisory and say so.
			r.Report.Warnf("%s", res.Scan.CountsNote)
		}
		r.Report.Verbosef("read %d distinct messages from %s (depth at start: %d); all released", res.Scan.Seen, res.Queue.Name(), out.Depth)
	}
	return out, nil
}
