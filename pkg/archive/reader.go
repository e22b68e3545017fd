package archive

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Ref is an archive input: an object of a Source that is a manifest, a part
// or any file of message records.
type Ref struct {
	Src Source
	Key string
}

// Name renders the reference for messages.
func (r Ref) Name() string { return r.Src.Name(r.Key) }

// Input is what an archive argument names: one object (a manifest, a part,
// any file of message records) or every run under a folder or key prefix
// (a run folder, queue=<name>/, dt=<day>/, the whole archive prefix; the
// layout before partition folders too). Refs are read in order: manifests
// in key order, which is queue, then day, then run start time.
type Input struct {
	Name string // the argument as given
	Refs []Ref
	// Runs is true when the argument was a folder or prefix that was
	// listed: every Ref is then a run manifest.
	Runs bool
}

// recordExts are the file names a reader opens as one object without
// listing a prefix: manifests and files of records.
var recordExts = []string{".json", ".ndjson", ".jsonl", ".gz"}

func looksLikeObject(key string) bool {
	k := strings.ToLower(key)
	for _, e := range recordExts {
		if strings.HasSuffix(k, e) {
			return true
		}
	}
	return false
}

// ResolveInput turns an s3:// URI (with api) or a local path into what it
// names. An s3:// key ending in .json, .ndjson, .jsonl or .gz (and an
// existing local file) is one object. Any other s3:// location (the bucket,
// a prefix, a run folder, with or without a trailing slash) and a local
// directory are searched for run manifests (_manifest.json, or
// manifest.json of the older layout); finding none is a bad-input error.
// An s3:// key without such an extension and without anything under it is
// opened as an object.
func ResolveInput(ctx context.Context, s string, api S3API) (*Input, error) {
	in := &Input{Name: s}
	if IsS3URI(s) {
		loc, err := ParseS3URI(s)
		if err != nil {
			return nil, err
		}
		src := S3Source{API: api, Bucket: loc.Bucket}
		if loc.Key != "" && !strings.HasSuffix(s, "/") && looksLikeObject(loc.Key) {
			in.Refs = []Ref{{Src: src, Key: loc.Key}}
			return in, nil
		}
		prefix := loc.Key
		if prefix != "" {
			prefix += "/"
		}
		keys, others, err := listManifests(ctx, api, loc.Bucket, prefix)
		if err != nil {
			return nil, err
		}
		switch {
		case len(keys) > 0:
			for _, k := range keys {
				in.Refs = append(in.Refs, Ref{Src: src, Key: k})
			}
			in.Runs = true
			return in, nil
		case others > 0:
			return nil, errs.BadInputf("%s holds %d object(s) but no archive manifest (%s); pass a run's %s, a part, or the folder of a run that finished", s, others, ManifestName, ManifestName)
		case loc.Key == "":
			return nil, errs.BadInputf("%s holds no archive runs; pass s3://BUCKET/PREFIX of an archive (the --to of dlqctl archive)", s)
		}
		// Nothing under it: an object without a known extension.
		in.Refs = []Ref{{Src: src, Key: loc.Key}}
		return in, nil
	}
	fi, err := os.Stat(s)
	if err != nil {
		return nil, errs.BadInputf("cannot read %s: %v; pass an archive manifest, part, run folder or NDJSON file of message records", s, firstLine(err))
	}
	if !fi.IsDir() {
		in.Refs = []Ref{{Src: DirSource{Dir: filepath.Dir(s)}, Key: filepath.Base(s)}}
		return in, nil
	}
	var found, checkpoints []string
	err = filepath.WalkDir(s, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
		case IsManifestName(p):
			found = append(found, p)
		case IsCheckpointName(p):
			checkpoints = append(checkpoints, p)
		}
		return nil
	})
	found = pickManifests(found, checkpoints)
	if err != nil {
		return nil, errs.BadInputf("cannot read the folder %s: %v", s, firstLine(err))
	}
	if len(found) == 0 {
		return nil, errs.BadInputf("%s holds no archive manifest (%s); download whole run folders (aws s3 cp --recursive s3://…/run=<id>/ DIR/) or pass a part or NDJSON file", s, ManifestName)
	}
	sort.Strings(found)
	for _, p := range found {
		in.Refs = append(in.Refs, Ref{Src: DirSource{Dir: filepath.Dir(p)}, Key: filepath.Base(p)})
	}
	in.Runs = true
	return in, nil
}

// listManifests lists the run manifests under prefix (every page), in key
// order — per run its final manifest, else its newest checkpoint (a run
// killed before its end) — and counts the other objects it saw.
func listManifests(ctx context.Context, api S3API, bucket, prefix string) (keys []string, others int, err error) {
	var checkpoints []string
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := s3.NewListObjectsV2Paginator(api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			if isNotFound(err) {
				return nil, 0, errs.BadInputf("S3 bucket %q does not exist (or is not visible to these credentials)", bucket)
			}
			if isUnreachable(err) {
				return nil, 0, errs.BadInputf("cannot reach the S3 endpoint (%v); check --s3-endpoint-url / AWS_ENDPOINT_URL_S3 and your network", firstLine(err))
			}
			if statusCode(err) == http.StatusForbidden || apiCode(err) == "AccessDenied" {
				return nil, 0, errs.BadInputf("listing s3://%s/%s was denied: reading a folder or prefix needs s3:ListBucket on arn:aws:s3:::%s; or pass the run's %s (s3:GetObject only)", bucket, prefix, bucket, ManifestName)
			}
			return nil, 0, fmt.Errorf("listing s3://%s/%s: %w", bucket, prefix, describeS3(err))
		}
		for _, o := range out.Contents {
			switch k := aws.ToString(o.Key); {
			case IsManifestName(k):
				keys = append(keys, k)
			case IsCheckpointName(k):
				checkpoints = append(checkpoints, k)
			default:
				others++
			}
		}
	}
	return pickManifests(keys, checkpoints), others, nil
}

// ResolveRun resolves an argument that must name exactly one archive run:
// its manifest, or a folder (s3:// prefix or local directory) holding one
// run. Several runs are a bad-input error listing how to pick one.
func ResolveRun(ctx context.Context, s string, api S3API) (Ref, error) {
	in, err := ResolveInput(ctx, s, api)
	if err != nil {
		return Ref{}, err
	}
	if len(in.Refs) != 1 {
		return Ref{}, errs.BadInputf("%s holds %d archive runs; pass one run: its folder (…/run=<id>/) or its %s (first: %s)", s, len(in.Refs), ManifestName, in.Refs[0].Name())
	}
	return in.Refs[0], nil
}

// ForEachInputRecord streams the records of every ref of in to fn, in
// order (see ForEachRecord).
func ForEachInputRecord(ctx context.Context, in *Input, fn func(rec *record.Record, parsed any) error) error {
	return ForEachInputRecordWith(ctx, in, inspect.ReadOptions{}, dropPrepared(fn))
}

// ForEachInputRecordWith is ForEachInputRecord with read options (parallel
// per-record work, see inspect.ReadRecordsWith).
func ForEachInputRecordWith(ctx context.Context, in *Input, opt inspect.ReadOptions, fn func(rec *record.Record, parsed, prepared any) error) error {
	for _, ref := range in.Refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ForEachRecordWith(ctx, ref, opt, fn); err != nil {
			return err
		}
	}
	return nil
}

func dropPrepared(fn func(rec *record.Record, parsed any) error) func(rec *record.Record, parsed, prepared any) error {
	return func(rec *record.Record, parsed, _ any) error { return fn(rec, parsed) }
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
		return nil, errs.BadInputf("%s is not a dlqctl archive manifest; pass an archive run's %s or its folder", ref.Name(), ManifestName)
	}
	return DecodeManifest(br, ref.Name())
}

// ForEachRecord streams the records of ref to fn: every part of a manifest
// in order, or the records of one part / NDJSON file. Each record is
// decoded (envelope, failure) before fn sees it; an error from fn stops.
func ForEachRecord(ctx context.Context, ref Ref, fn func(rec *record.Record, parsed any) error) error {
	return ForEachRecordWith(ctx, ref, inspect.ReadOptions{}, dropPrepared(fn))
}

// ForEachRecordWith is ForEachRecord with read options.
func ForEachRecordWith(ctx context.Context, ref Ref, opt inspect.ReadOptions, fn func(rec *record.Record, parsed, prepared any) error) error {
	br, c, k, err := open(ctx, ref)
	if err != nil {
		return err
	}
	if k == kindRecords {
		defer c.Close()
		return inspect.ReadRecordsWith(br, ref.Name(), opt, fn)
	}
	m, err := DecodeManifest(br, ref.Name())
	c.Close()
	if err != nil {
		return err
	}
	return forEachManifestRecord(ctx, ref.Src, m, opt, func(_ int, rec *record.Record, parsed, prepared any) error { return fn(rec, parsed, prepared) })
}

// ForEachManifestRecord streams every record of every part of m (read from
// src) to fn with the part's index.
func ForEachManifestRecord(ctx context.Context, src Source, m *Manifest, fn func(part int, rec *record.Record, parsed any) error) error {
	return forEachManifestRecord(ctx, src, m, inspect.ReadOptions{}, func(part int, rec *record.Record, parsed, _ any) error { return fn(part, rec, parsed) })
}

// forEachManifestRecord reads the parts of m in order. While one part is
// read, the next is already being opened (on S3 a GET's first byte takes
// a round trip or more), so the decoders do not wait for it.
func forEachManifestRecord(ctx context.Context, src Source, m *Manifest, opt inspect.ReadOptions, fn func(part int, rec *record.Record, parsed, prepared any) error) error {
	type opened struct {
		rc  io.ReadCloser
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	openPart := func(i int) <-chan opened {
		ch := make(chan opened, 1)
		go func() {
			rc, err := src.Open(ctx, m.Parts[i].Key)
			ch <- opened{rc, err}
		}()
		return ch
	}
	var next <-chan opened
	if len(m.Parts) > 0 {
		next = openPart(0)
	}
	// On an early return, stop opening ahead and close what was opened.
	defer func() {
		cancel()
		if next != nil {
			if o := <-next; o.rc != nil {
				o.rc.Close()
			}
		}
	}()
	for i, p := range m.Parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		o := <-next
		next = nil
		if o.err != nil {
			return o.err
		}
		if i+1 < len(m.Parts) {
			next = openPart(i + 1)
		}
		err := inspect.ReadRecordsWith(o.rc, src.Name(p.Key), opt, func(rec *record.Record, parsed, prepared any) error { return fn(i, rec, parsed, prepared) })
		o.rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
