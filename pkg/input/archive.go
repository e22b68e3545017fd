package input

import (
	"context"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// Archives as offline input. --from takes:
//
//   - a run's manifest (s3://…/_manifest.json, or manifest.json of the
//     layout before partition folders, or a local copy with the run's parts
//     next to it): every part of the run, in order;
//   - a run folder, a queue=<name>/ or dt=<day>/ prefix, the archive's
//     prefix or a local folder of downloaded runs: every run under it, in
//     key order (queue, day, run start);
//   - a part (s3://…/part-00001.ndjson.gz): that part.
//
// Local parts and NDJSON files need no opener (ReadRecords reads gzip).

func (r *Reader) forEachArchiveRecord(ctx context.Context, from string, opt inspect.ReadOptions, fn RecordFunc) (bool, error) {
	if from == "-" {
		return false, nil
	}
	if !archive.IsS3URI(from) && !archive.IsLocalDir(from) && !archive.IsLocalManifest(from) {
		return false, nil
	}
	in, err := r.Archive(ctx, from)
	if err != nil {
		return true, err
	}
	return true, archive.ForEachInputRecordWith(ctx, in, opt, fn)
}

// Archive resolves an s3:// URI or local path of archive objects.
func (r *Reader) Archive(ctx context.Context, s string) (*archive.Input, error) {
	api, err := r.s3For(ctx, s)
	if err != nil {
		return nil, err
	}
	return archive.ResolveInput(ctx, s, api)
}

// ArchiveRun resolves an argument naming one archive run: an s3:// URI or
// local path of its manifest or its folder.
func (r *Reader) ArchiveRun(ctx context.Context, s string) (archive.Ref, error) {
	api, err := r.s3For(ctx, s)
	if err != nil {
		return archive.Ref{}, err
	}
	return archive.ResolveRun(ctx, s, api)
}

// s3For is the S3 client for an s3:// URI's bucket; nil for a local path.
func (r *Reader) s3For(ctx context.Context, s string) (archive.S3API, error) {
	if !archive.IsS3URI(s) {
		return nil, nil
	}
	loc, err := archive.ParseS3URI(s)
	if err != nil {
		return nil, err
	}
	return r.S3For(ctx, loc.Bucket)
}
