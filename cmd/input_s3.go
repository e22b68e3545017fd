package cmd

import (
	"bufio"
	"context"
	"os"

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

func openArchiveInput(ctx context.Context, f *Factory, from string, opt inspect.ReadOptions, fn recordFunc) (bool, error) {
	if from == "-" {
		return false, nil
	}
	if !archive.IsS3URI(from) && !isLocalDir(from) && !isLocalManifest(from) {
		return false, nil
	}
	in, err := archiveInput(ctx, f, from)
	if err != nil {
		return true, err
	}
	return true, archive.ForEachInputRecordWith(ctx, in, opt, fn)
}

// archiveInput resolves an s3:// URI or local path of archive objects.
func archiveInput(ctx context.Context, f *Factory, s string) (*archive.Input, error) {
	var api archive.S3API
	if archive.IsS3URI(s) {
		loc, err := archive.ParseS3URI(s)
		if err != nil {
			return nil, err
		}
		c, err := f.S3For(ctx, loc.Bucket)
		if err != nil {
			return nil, err
		}
		api = c
	}
	return archive.ResolveInput(ctx, s, api)
}

// isLocalManifest sniffs the start of a local file for the manifest marker.
func isLocalManifest(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	head, _ := bufio.NewReaderSize(fh, 4096).Peek(4096)
	return archive.LooksLikeManifest(head)
}

// isLocalDir reports whether path is a directory (a downloaded run or
// several).
func isLocalDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
