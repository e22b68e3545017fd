// Package input says where the records of the triage commands (sample,
// group, classify, the UI) come from and reads them: a live queue read
// without consuming it, a topic read to the ends taken at the start, an
// NDJSON file of message records or an archive. It knows no broker
// package: the caller gives it a way to open a reference (Reader).
package input

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/dlqctl/dlqctl/internal/gctune"
	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ErrStop ends a record stream early without being an error.
var ErrStop = errors.New("stop")

// Options say where records come from: a live queue (read without
// consuming it) or an offline file of message records.
type Options struct {
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

// Result describes what was read.
type Result struct {
	Queue broker.Endpoint     // nil for offline input
	Scan  *inspect.ScanResult // nil for offline input
}

// RecordFunc gets each record with its parsed body and what
// Options.Prepare returned for it.
type RecordFunc = func(rec *record.Record, parsed, prepared any) error

// Reporter is where a read says what it does besides reading: warnings
// (always shown) and verbose notes (shown with -v).
type Reporter interface {
	Warnf(format string, a ...any)
	Verbosef(format string, a ...any)
}

// Reader opens what Options name. Its fields are the caller's (cmd's
// factory): the package itself opens no broker and no S3 client.
type Reader struct {
	// Endpoint opens a queue or topic reference.
	Endpoint func(ctx context.Context, ref string) (broker.Endpoint, error)
	// S3For opens an S3 client for a bucket (archives as input).
	S3For func(ctx context.Context, bucket string) (archive.S3API, error)
	// Caps are a broker's capabilities as known before anything connects.
	Caps func(brokerID string) (broker.Capabilities, bool)
	// OpenErr maps an error opening a source read to its end (nothing read
	// from it yet); nil returns it as it is.
	OpenErr func(error) error
	// Stdin is read for From "-".
	Stdin io.Reader
	// Reference makes a file read with the sequential encoding/json reader
	// (inspect.ReadOptions.Reference): tests compare outputs of both.
	Reference bool
	Report    Reporter
}

// ForEach streams records from the input to fn. Returning ErrStop from
// fn ends the stream cleanly.
func (r *Reader) ForEach(ctx context.Context, in Options, fn func(rec *record.Record, parsed any) error) (*Result, error) {
	return r.ForEachPrepared(ctx, in, func(rec *record.Record, parsed, _ any) error { return fn(rec, parsed) })
}

// ForEachPrepared is ForEach with in.Prepare's result passed to fn.
func (r *Reader) ForEachPrepared(ctx context.Context, in Options, fn RecordFunc) (*Result, error) {
	opt := inspect.ReadOptions{Prepare: in.Prepare, Reference: r.Reference}
	if in.From != "" {
		// Reading a file decodes as fast as the CPUs go and keeps little:
		// let the collector run less often while the live heap is small.
		defer gctune.Start(offlineHeapTarget)()
		// Archives (s3:// or a local run) first, then a file of records.
		if handled, err := r.forEachArchiveRecord(ctx, in.From, opt, fn); handled {
			if errors.Is(err, ErrStop) {
				err = nil
			}
			return &Result{}, err
		}
		err := inspect.ReadFile(in.From, r.Stdin, opt, fn)
		if errors.Is(err, ErrStop) {
			err = nil
		}
		return &Result{}, err
	}
	if caps, ok := r.ReadsToEnd(in.Queue); ok {
		if in.Refuse != nil {
			if err := in.Refuse(caps); err != nil {
				return nil, err
			}
		}
		return r.forEachToEnd(ctx, in, func(rec *record.Record, parsed any) error {
			var prep any
			if in.Prepare != nil {
				prep = in.Prepare(rec, parsed)
			}
			return fn(rec, parsed, prep)
		})
	}
	ep, err := r.Endpoint(ctx, in.Queue)
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
	if errors.Is(err, ErrStop) {
		err = nil
	}
	return &Result{Queue: ep, Scan: res}, err
}

// ReadsToEnd says whether a reference's broker reads by offset, to the
// ends taken when the read starts (Kafka: a peek holds nothing, changes
// nothing, and its source says when it is done), with the broker's
// capabilities as known before anything connects. Such a queue is read
// by forEachToEnd; a queue that hands messages out and takes them back
// (SQS, RabbitMQ) through inspect.Scan.
func (r *Reader) ReadsToEnd(raw string) (broker.Capabilities, bool) {
	ref, err := broker.ParseRef(raw)
	if err != nil {
		return broker.Capabilities{}, false
	}
	c, ok := r.Caps(ref.Broker)
	return c, ok && c.Hold == broker.HoldNone && c.Removal == broker.RemoveCommitOffset
}

// forEachToEnd is ForEach for a queue read to its end (ReadsToEnd): a
// peek of it (or, with in.Chain, of its whole retry chain:
// broker.ChainLister) from the group's committed offsets to the ends
// taken at the start, read_committed, committing nothing.
func (r *Reader) forEachToEnd(ctx context.Context, in Options, fn func(rec *record.Record, parsed any) error) (*Result, error) {
	ep, err := r.Endpoint(ctx, in.Queue)
	if err != nil {
		return nil, err
	}
	eps := []broker.Endpoint{ep}
	defer func() {
		for _, e := range eps {
			broker.CloseEndpoint(e)
		}
	}()
	if c, ok := ep.(broker.ChainLister); ok && in.Chain {
		refs, err := c.RetryChain(ctx)
		if err != nil {
			return nil, err
		}
		for _, ref := range refs {
			e, err := r.Endpoint(ctx, ref)
			if err != nil {
				return nil, err
			}
			eps = append(eps, e)
		}
	}
	err = inspect.PeekToEnd(ctx, eps, in.Max, fn, inspect.PeekHooks{
		OpenErr:   r.OpenErr,
		Truncated: func(e broker.Endpoint, note string) { r.Report.Warnf("%s: %s", e, note) },
		Done: func(e broker.Endpoint, n int) {
			if np, ok := e.(broker.NothingPendingNoter); ok && n == 0 && !in.Chain {
				// Not for a retry chain's topics: empty retry topics
				// are normal.
				r.Report.Warnf("%s", np.NothingPendingNote())
			} else if g, ok := e.(broker.Grouper); ok {
				r.Report.Verbosef("read %d pending records of %s (group %s; nothing committed)", n, e, g.Group())
			} else {
				r.Report.Verbosef("read %d pending records of %s (nothing committed)", n, e)
			}
		},
	})
	if err != nil && !errors.Is(err, ErrStop) {
		return nil, err
	}
	return &Result{}, nil
}

// WarnPeek prints what reading queue without consuming it changes,
// before reading (broker.PeekWarner: SQS's receive counts and FIFO group
// locks; broker.PeekChecker: RabbitMQ's quorum delivery counts, or its
// refusal to peek, exit 2). A queue read to its end changes nothing.
func (r *Reader) WarnPeek(ctx context.Context, queue string) error {
	if _, ok := r.ReadsToEnd(queue); ok {
		return nil
	}
	ep, err := r.Endpoint(ctx, queue)
	if err != nil {
		return err
	}
	adv, err := inspect.PeekAdvice(ep)
	for _, w := range adv.Warnings {
		r.Report.Warnf("%s", w)
	}
	if err != nil {
		return err
	}
	for _, n := range adv.Notes {
		r.Report.Verbosef("%s", n)
	}
	return nil
}

// offlineHeapTarget is the heap size up to which offline reads let
// garbage accumulate between collections (see internal/gctune): with
// ~8 MB live, a collection every ~24 MB of input decoded instead of every
// ~8 MB (a tenth less CPU; peak RSS ~45 -> ~60 MB, the same at any input
// size).
const offlineHeapTarget = 32 << 20
