package cmd

import (
	"context"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// errStop ends a record stream early without being an error.
var errStop = input.ErrStop

// InputOptions say where records come from: a live queue (read without
// consuming it) or an offline file of message records (input.Options).
type InputOptions = input.Options

// InputResult describes what was read.
type InputResult = input.Result

// referenceReader makes --from read with the sequential encoding/json
// reader (inspect.ReadOptions.Reference): tests compare outputs of both.
var referenceReader = false

// recordFunc gets each record with its parsed body and what
// InputOptions.Prepare returned for it.
type recordFunc = input.RecordFunc

// reader is the record reader over the factory's endpoints and S3
// clients, reporting on stderr.
func (f *Factory) reader() *input.Reader {
	return &input.Reader{
		Endpoint: f.Endpoint,
		S3For: func(ctx context.Context, bucket string) (archive.S3API, error) {
			c, err := f.S3For(ctx, bucket)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Caps:      capsOf,
		OpenErr:   startErr,
		Stdin:     f.IO.In,
		Reference: referenceReader,
		Report:    stderrReport{f},
	}
}

// stderrReport shows a domain package's warnings on stderr and its
// verbose notes with -v.
type stderrReport struct{ f *Factory }

func (r stderrReport) Warnf(format string, a ...any)    { r.f.IO.Warnf(format, a...) }
func (r stderrReport) Verbosef(format string, a ...any) { r.f.Verbosef(format, a...) }

// ForEachRecord streams records from the input to fn. Returning errStop
// from fn ends the stream cleanly.
func (f *Factory) ForEachRecord(ctx context.Context, in InputOptions, fn func(rec *record.Record, parsed any) error) (*InputResult, error) {
	return f.reader().ForEach(ctx, in, fn)
}

// ForEachPrepared is ForEachRecord with in.Prepare's result passed to fn.
func (f *Factory) ForEachPrepared(ctx context.Context, in InputOptions, fn recordFunc) (*InputResult, error) {
	return f.reader().ForEachPrepared(ctx, in, fn)
}

// warnPeekSideEffects prints what reading queue without consuming it
// changes, before reading (input.Reader.WarnPeek).
func warnPeekSideEffects(ctx context.Context, f *Factory, queue string) error {
	return f.reader().WarnPeek(ctx, queue)
}

// fromFlagHelp is the help of --from on sample, group and classify.
const fromFlagHelp = "read message records from an NDJSON file (- for stdin) or an archive (s3://… or local: a run folder or _manifest.json, a queue=NAME/ or dt=DAY/ prefix, a part) instead of a queue"
