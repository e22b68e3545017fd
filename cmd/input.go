package cmd

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

// errStop ends a record stream early without being an error.
var errStop = errors.New("stop")

// InputOptions say where records come from: a live queue (read without
// consuming it) or an offline file of message records.
type InputOptions struct {
	Queue      string        // queue reference (ignored with From)
	From       string        // NDJSON/JSON file of records, "-" for stdin
	Max        int           // distinct messages to read from the queue; 0 = all
	Visibility time.Duration // hold time between heartbeats while scanning
	// Prepare, when set, is per-record work (classification, group keys)
	// done before fn sees a record; for files and archives it runs on the
	// decoding goroutines, in parallel (it must be safe for concurrent use
	// on different records), and its result is passed to fn.
	Prepare func(rec *queue.Record, parsed any) any
}

// InputResult describes what was read.
type InputResult struct {
	Queue *queue.Queue        // nil for offline input
	Scan  *inspect.ScanResult // nil for offline input
}

// openers for non-file inputs (s3:// archives) register here.
var inputOpeners []func(ctx context.Context, f *Factory, from string, opt inspect.ReadOptions, fn recordFunc) (handled bool, err error)

// referenceReader makes --from read with the sequential encoding/json
// reader (inspect.ReadOptions.Reference): tests compare outputs of both.
var referenceReader = false

// recordFunc gets each record with its parsed body and what
// InputOptions.Prepare returned for it.
type recordFunc = func(rec *queue.Record, parsed, prepared any) error

// ForEachRecord streams records from the input to fn. Returning errStop
// from fn ends the stream cleanly.
func (f *Factory) ForEachRecord(ctx context.Context, in InputOptions, fn func(rec *queue.Record, parsed any) error) (*InputResult, error) {
	return f.ForEachPrepared(ctx, in, func(rec *queue.Record, parsed, _ any) error { return fn(rec, parsed) })
}

// ForEachPrepared is ForEachRecord with in.Prepare's result passed to fn.
func (f *Factory) ForEachPrepared(ctx context.Context, in InputOptions, fn recordFunc) (*InputResult, error) {
	opt := inspect.ReadOptions{Prepare: in.Prepare, Reference: referenceReader}
	if in.From != "" {
		for _, open := range inputOpeners {
			handled, err := open(ctx, f, in.From, opt, fn)
			if handled {
				if errors.Is(err, errStop) {
					err = nil
				}
				return &InputResult{}, err
			}
		}
		var err error
		if in.From == "-" {
			err = inspect.ReadRecordsWith(f.IO.In, "stdin", opt, fn)
		} else {
			fh, oerr := os.Open(in.From)
			if oerr != nil {
				return nil, errs.BadInputf("cannot read --from %s: %v; pass an NDJSON file of message records or - for stdin", in.From, oerr)
			}
			defer fh.Close()
			err = inspect.ReadRecordsWith(fh, in.From, opt, fn)
		}
		if errors.Is(err, errStop) {
			err = nil
		}
		return &InputResult{}, err
	}
	c, q, err := f.ResolveQueue(ctx, in.Queue)
	if err != nil {
		return nil, err
	}
	res, err := inspect.Scan(ctx, c, q, inspect.ScanOptions{Max: in.Max, Visibility: in.Visibility},
		func(m *queue.Message, parsed any) error {
			var prep any
			if in.Prepare != nil {
				prep = in.Prepare(&m.Record, parsed)
			}
			return fn(&m.Record, parsed, prep)
		})
	if errors.Is(err, errStop) {
		err = nil
	}
	return &InputResult{Queue: q, Scan: res}, err
}

// fromFlagHelp is the help of --from on sample, group and classify.
const fromFlagHelp = "read message records from an NDJSON file (- for stdin) or an archive (s3://… or local: a run folder or _manifest.json, a queue=NAME/ or dt=DAY/ prefix, a part) instead of a queue"
