package archive

import (
	"bufio"
	"context"
	"io"
	"path/filepath"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

// Ref is an archive input: an object of a Source that is a manifest, a part
// or any file of message records.
type Ref struct {
	Src Source
	Key string
}

// Name renders the reference for messages.
func (r Ref) Name() string { return r.Src.Name(r.Key) }

// ParseRef turns s3://BUCKET/KEY (with api) or a local path into a Ref.
func ParseRef(s string, api S3API) (Ref, error) {
	if IsS3URI(s) {
		loc, err := ParseS3URI(s)
		if err != nil {
			return Ref{}, err
		}
		if loc.Key == "" {
			return Ref{}, errs.BadInputf("%s names a bucket, not an object; pass s3://BUCKET/…/manifest.json or a part", s)
		}
		return Ref{Src: S3Source{API: api, Bucket: loc.Bucket}, Key: loc.Key}, nil
	}
	return Ref{Src: DirSource{Dir: filepath.Dir(s)}, Key: filepath.Base(s)}, nil
}

// kind of an opened object, from its first bytes.
type kind int

const (
	kindRecords  kind = iota // NDJSON / JSON array of records (maybe gzip)
	kindManifest             // a dlqctl manifest
)

// open opens ref and tells what it holds without consuming it.
func open(ctx context.Context, ref Ref) (*bufio.Reader, io.Closer, kind, error) {
	rc, err := ref.Src.Open(ctx, ref.Key)
	if err != nil {
		return nil, nil, 0, err
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	head, _ := br.Peek(4096)
	k := kindRecords
	if !(len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b) && LooksLikeManifest(head) {
		k = kindManifest
	}
	return br, rc, k, nil
}

// ReadManifest reads the manifest at ref.
func ReadManifest(ctx context.Context, ref Ref) (*Manifest, error) {
	br, c, k, err := open(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if k != kindManifest {
		return nil, errs.BadInputf("%s is not a dlqctl archive manifest; pass the manifest.json of an archive run", ref.Name())
	}
	return DecodeManifest(br, ref.Name())
}

// ForEachRecord streams the records of ref to fn: every part of a manifest
// in order, or the records of one part / NDJSON file. Each record is
// decoded (envelope, failure) before fn sees it; an error from fn stops.
func ForEachRecord(ctx context.Context, ref Ref, fn func(rec *queue.Record, parsed any) error) error {
	br, c, k, err := open(ctx, ref)
	if err != nil {
		return err
	}
	if k == kindRecords {
		defer c.Close()
		return inspect.ReadRecords(br, ref.Name(), fn)
	}
	m, err := DecodeManifest(br, ref.Name())
	c.Close()
	if err != nil {
		return err
	}
	return ForEachManifestRecord(ctx, ref.Src, m, func(_ int, rec *queue.Record, parsed any) error { return fn(rec, parsed) })
}

// ForEachManifestRecord streams every record of every part of m (read from
// src) to fn with the part's index.
func ForEachManifestRecord(ctx context.Context, src Source, m *Manifest, fn func(part int, rec *queue.Record, parsed any) error) error {
	for i, p := range m.Parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		rc, err := src.Open(ctx, p.Key)
		if err != nil {
			return err
		}
		err = inspect.ReadRecords(rc, src.Name(p.Key), func(rec *queue.Record, parsed any) error { return fn(i, rec, parsed) })
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
