package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// RestoreSource offers the records of an archive run to the redrive
// pipeline (restore is a redrive whose source is an archive): parts in
// manifest order, records in part order. There is nothing to delete at the
// source, so Ack and Release do nothing; what was sent is in the run's
// journal, which is how a resumed restore skips it.
type RestoreSource struct {
	src Source
	m   *Manifest

	mu     sync.Mutex
	part   int // index of the open part; len(m.Parts) when done
	rc     io.ReadCloser
	gz     *gzip.Reader
	br     *bufio.Reader
	line   int
	closed bool
}

// NewRestoreSource reads the parts of m from src.
func NewRestoreSource(src Source, m *Manifest) *RestoreSource {
	return &RestoreSource{src: src, m: m, part: -1}
}

// Name identifies the archive run.
func (s *RestoreSource) Name() string {
	return fmt.Sprintf("archive %s of %s", s.m.RunID, s.m.Queue.Name)
}

// readBatch is the most records one Next returns (the engine's batches).
const readBatch = 10

// Next returns up to max records; ErrSourceDone after the last one.
func (s *RestoreSource) Next(ctx context.Context, max int) ([]redrive.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max <= 0 || max > readBatch {
		max = readBatch
	}
	var items []redrive.Item
	for len(items) < max {
		if s.closed {
			break
		}
		if s.br == nil {
			if s.part+1 >= len(s.m.Parts) {
				break
			}
			if err := s.openNext(ctx); err != nil {
				return items, err
			}
		}
		raw, err := s.br.ReadBytes('\n')
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 {
			s.line++
			var rec record.Record
			if uerr := unmarshalRecord(raw, &rec); uerr != nil {
				return items, errs.Verdictf("%s line %d is not a message record (%v); run 'dlqctl archive verify' on the manifest", s.src.Name(s.m.Parts[s.part].Key), s.line, uerr)
			}
			if rec.BodySHA256 != record.SHA256Hex(rec.Body) {
				return items, errs.Verdictf("%s line %d: body does not match its body_sha256; the archive is damaged, run 'dlqctl archive verify'", s.src.Name(s.m.Parts[s.part].Key), s.line)
			}
			if rec.Attributes == nil {
				rec.Attributes = map[string]record.Attribute{}
			}
			parsed := inspect.Decode(&rec)
			items = append(items, redrive.Item{Record: &rec, Parsed: parsed, Handle: fmt.Sprintf("%s:%d", s.m.Parts[s.part].Key, s.line)})
		}
		if errors.Is(err, io.EOF) {
			s.closePart()
			continue
		}
		if err != nil {
			return items, fmt.Errorf("reading %s: %w", s.src.Name(s.m.Parts[s.part].Key), err)
		}
	}
	if len(items) == 0 {
		return nil, redrive.ErrSourceDone
	}
	return items, nil
}

func (s *RestoreSource) openNext(ctx context.Context) error {
	s.part++
	p := s.m.Parts[s.part]
	rc, err := s.src.Open(ctx, p.Key)
	if err != nil {
		return err
	}
	gz, err := gzip.NewReader(bufio.NewReaderSize(rc, 256<<10))
	if err != nil {
		rc.Close()
		return errs.Verdictf("%s is not gzip (%v); run 'dlqctl archive verify' on the manifest", s.src.Name(p.Key), err)
	}
	s.rc, s.gz, s.br, s.line = rc, gz, bufio.NewReaderSize(gz, 1<<20), 0
	return nil
}

func (s *RestoreSource) closePart() {
	if s.rc != nil {
		s.gz.Close()
		s.rc.Close()
	}
	s.rc, s.gz, s.br = nil, nil, nil
}

// Ack has nothing to remove: archived records stay in the archive.
func (s *RestoreSource) Ack(_ context.Context, items []redrive.Item) []error {
	return make([]error, len(items))
}

// Release has nothing to give back.
func (s *RestoreSource) Release(context.Context, []redrive.Item) error { return nil }

// Close closes the open part.
func (s *RestoreSource) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closePart()
	s.closed = true
	return nil
}

// Records counts the records the manifest lists.
func (m *Manifest) Records() int {
	n := 0
	for _, p := range m.Parts {
		n += p.Records
	}
	return n
}

var _ redrive.Source = (*RestoreSource)(nil)
