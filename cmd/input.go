package cmd

import (
	"context"
	"errors"
	"time"

	"github.com/dlqctl/dlqctl/internal/gctune"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
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
	// Chain reads a Kafka topic's whole retry chain (its retry topics and
	// dead-letter topic), for group --by stage.
	Chain bool
	// Prepare, when set, is per-record work (classification, group keys)
	// done before fn sees a record; for files and archives it runs on the
	// decoding goroutines, in parallel (it must be safe for concurrent use
	// on different records), and its result is passed to fn.
	Prepare func(rec *record.Record, parsed any) any
	// Refuse, when set, refuses flags the queue's broker cannot honour
	// (refuseFlags), once the reference is resolved and before reading.
	Refuse func(broker.Capabilities) error
}

// InputResult describes what was read.
type InputResult struct {
	Queue broker.Endpoint     // nil for offline input
	Scan  *inspect.ScanResult // nil for offline input
}

// referenceReader makes --from read with the sequential encoding/json
// reader (inspect.ReadOptions.Reference): tests compare outputs of both.
var referenceReader = false

// recordFunc gets each record with its parsed body and what
// InputOptions.Prepare returned for it.
type recordFunc = func(rec *record.Record, parsed, prepared any) error

// ForEachRecord streams records from the input to fn. Returning errStop
// from fn ends the stream cleanly.
func (f *Factory) ForEachRecord(ctx context.Context, in InputOptions, fn func(rec *record.Record, parsed any) error) (*InputResult, error) {
	return f.ForEachPrepared(ctx, in, func(rec *record.Record, parsed, _ any) error { return fn(rec, parsed) })
}

// ForEachPrepared is ForEachRecord with in.Prepare's result passed to fn.
func (f *Factory) ForEachPrepared(ctx context.Context, in InputOptions, fn recordFunc) (*InputResult, error) {
	opt := inspect.ReadOptions{Prepare: in.Prepare, Reference: referenceReader}
	if in.From != "" {
		// Reading a file decodes as fast as the CPUs go and keeps little:
		// let the collector run less often while the live heap is small.
		defer gctune.Start(offlineHeapTarget)()
		// Archives (s3:// or a local run) first, then a file of records.
		if handled, err := openArchiveInput(ctx, f, in.From, opt, fn); handled {
			if errors.Is(err, errStop) {
				err = nil
			}
			return &InputResult{}, err
		}
		err := inspect.ReadFile(in.From, f.IO.In, opt, fn)
		if errors.Is(err, errStop) {
			err = nil
		}
		return &InputResult{}, err
	}
	if caps, ok := readsToEnd(in.Queue); ok {
		if in.Refuse != nil {
			if err := in.Refuse(caps); err != nil {
				return nil, err
			}
		}
		return f.forEachToEnd(ctx, in, func(rec *record.Record, parsed any) error {
			var prep any
			if in.Prepare != nil {
				prep = in.Prepare(rec, parsed)
			}
			return fn(rec, parsed, prep)
		})
	}
	ep, err := f.Endpoint(ctx, in.Queue)
	if err != nil {
		return nil, err
	}
	if in.Refuse != nil {
		if err := in.Refuse(ep.Capabilities()); err != nil {
			return nil, err
		}
	}
	res, err := inspect.Scan(ctx, ep, inspect.ScanOptions{Max: in.Max, Visibility: in.Visibility},
		func(rec *record.Record, parsed any) error {
			var prep any
			if in.Prepare != nil {
				prep = in.Prepare(rec, parsed)
			}
			return fn(rec, parsed, prep)
		})
	if errors.Is(err, errStop) {
		err = nil
	}
	return &InputResult{Queue: ep, Scan: res}, err
}

// readsToEnd says whether a reference's broker reads by offset, to the
// ends taken when the read starts (Kafka: a peek holds nothing, changes
// nothing, and its source says when it is done), with the broker's
// capabilities as known before anything connects. Such a queue is read
// by forEachToEnd; a queue that hands messages out and takes them back
// (SQS, RabbitMQ) through inspect.Scan.
func readsToEnd(raw string) (broker.Capabilities, bool) {
	ref, err := broker.ParseRef(raw)
	if err != nil {
		return broker.Capabilities{}, false
	}
	c, ok := capsOf(ref.Broker)
	return c, ok && c.Hold == broker.HoldNone && c.Removal == broker.RemoveCommitOffset
}

// forEachToEnd is ForEachRecord for a queue read to its end (readsToEnd):
// a peek of it (or, with in.Chain, of its whole retry chain:
// broker.ChainLister) from the group's committed offsets to the ends
// taken at the start, read_committed, committing nothing.
func (f *Factory) forEachToEnd(ctx context.Context, in InputOptions, fn func(rec *record.Record, parsed any) error) (*InputResult, error) {
	ep, err := f.Endpoint(ctx, in.Queue)
	if err != nil {
		return nil, err
	}
	eps := []broker.Endpoint{ep}
	defer func() {
		for _, e := range eps {
			closeEndpoint(e)
		}
	}()
	if c, ok := ep.(broker.ChainLister); ok && in.Chain {
		refs, err := c.RetryChain(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			e, err := f.Endpoint(ctx, r)
			if err != nil {
				return nil, err
			}
			eps = append(eps, e)
		}
	}
	err = inspect.PeekToEnd(ctx, eps, in.Max, fn, inspect.PeekHooks{
		OpenErr:   startErr,
		Truncated: func(e broker.Endpoint, note string) { f.IO.Warnf("%s: %s", e, note) },
		Done: func(e broker.Endpoint, n int) {
			if g, ok := e.(broker.Grouper); ok {
				f.Verbosef("read %d pending records of %s (group %s; nothing committed)", n, e, g.Group())
			} else {
				f.Verbosef("read %d pending records of %s (nothing committed)", n, e)
			}
		},
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return &InputResult{}, nil
}

// warnPeekSideEffects prints what reading queue without consuming it
// changes, before reading (broker.PeekWarner: SQS's receive counts and
// FIFO group locks; broker.PeekChecker: RabbitMQ's quorum delivery
// counts, or its refusal to peek, exit 2). A queue read to its end
// changes nothing.
func warnPeekSideEffects(ctx context.Context, f *Factory, queue string) error {
	if _, ok := readsToEnd(queue); ok {
		return nil
	}
	ep, err := f.Endpoint(ctx, queue)
	if err != nil {
		return err
	}
	adv, err := inspect.PeekAdvice(ep)
	for _, w := range adv.Warnings {
		f.IO.Warnf("%s", w)
	}
	if err != nil {
		return err
	}
	for _, n := range adv.Notes {
		f.Verbosef("%s", n)
	}
	return nil
}

// offlineHeapTarget is the heap size up to which offline reads let
// garbage accumulate between collections (see internal/gctune): with
// ~8 MB live, a collection every ~24 MB of input decoded instead of every
// ~8 MB (a tenth less CPU; peak RSS ~45 -> ~60 MB, the same at any input
// size).
const offlineHeapTarget = 32 << 20

// fromFlagHelp is the help of --from on sample, group and classify.
const fromFlagHelp = "read message records from an NDJSON file (- for stdin) or an archive (s3://… or local: a run folder or _manifest.json, a queue=NAME/ or dt=DAY/ prefix, a part) instead of a queue"
