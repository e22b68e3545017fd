package archive

import (
	"context"
	"errors"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Plan is what a run would archive (--dry-run). Byte counts are exact for
// the messages read: the records are compressed exactly as a run would,
// into nothing.
type Plan struct {
	Queue             string `json:"queue"`
	Destination       string `json:"destination"`
	Selection         string `json:"selection"`
	Scanned           int    `json:"scanned"`
	Selected          int    `json:"selected"`
	Bytes             int64  `json:"bytes"`
	UncompressedBytes int64  `json:"uncompressed_bytes"`
	Parts             int    `json:"parts"`
	Delete            bool   `json:"delete"`
	Complete          bool   `json:"complete"`
	Note              string `json:"note,omitempty"`
}

var errPlanFull = errors.New("plan: --max reached")

// DryRun reads q without consuming it (inspect.Scan: held, then released)
// and reports what Run with the same options would archive. Nothing is
// written and nothing is deleted.
func DryRun(ctx context.Context, ep broker.Endpoint, opts Options, onProgress func(scanned int)) (*Plan, error) {
	opts.defaults()
	pl := &Plan{Queue: ep.Name(), Destination: opts.Dest.String(), Selection: opts.Selection, Delete: opts.Delete}
	var part *partWriter
	closePart := func() error {
		if part == nil {
			return nil
		}
		if err := part.Finish(); err != nil {
			return err
		}
		pl.Parts++
		pl.Bytes += part.compressedLen
		pl.UncompressedBytes += part.raw.n
		part = nil
		return nil
	}
	res, err := inspect.Scan(ctx, ep, inspect.ScanOptions{Visibility: opts.Visibility, Workers: opts.Workers, MaxHeld: opts.MaxHeld, OnProgress: onProgress},
		func(m *record.Record, parsed any) error {
			pl.Scanned++
			skip, err := selectOne(opts.Select, m, parsed)
			if err != nil {
				return err // the selection's refusal
			}
			if skip != "" {
				return nil
			}
			if part == nil {
				part, _ = newPartWriter("", true)
			}
			if err := part.Write(m); err != nil {
				return err
			}
			pl.Selected++
			if part.records >= opts.PartRecords || part.Size() >= opts.PartSize {
				if err := closePart(); err != nil {
					return err
				}
			}
			if opts.Max > 0 && pl.Selected >= opts.Max {
				return errPlanFull
			}
			return nil
		})
	if err == nil && opts.Select != nil {
		err = opts.Select.Refusal()
	}
	if err != nil && !errors.Is(err, errPlanFull) {
		return nil, err
	}
	if err := closePart(); err != nil {
		return nil, err
	}
	switch {
	case errors.Is(err, errPlanFull):
		pl.Note = "stopped at --max"
	case res != nil && !res.Complete:
		pl.Note = res.Note
	default:
		pl.Complete = true
	}
	return pl, nil
}
