package cmd

import (
	"bufio"
	"context"
	"os"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

// Archives as offline input: --from s3://…/manifest.json reads every part
// of the run, --from s3://…/part-00001.ndjson.gz one part, and a local
// manifest.json reads the parts downloaded next to it. Local parts need no
// opener (ReadRecords reads gzip NDJSON).
func init() { inputOpeners = append(inputOpeners, openArchiveInput) }

func openArchiveInput(ctx context.Context, f *Factory, from string, fn func(*queue.Record, any) error) (bool, error) {
	if archive.IsS3URI(from) {
		ref, err := archiveRef(ctx, f, from)
		if err != nil {
			return true, err
		}
		return true, archive.ForEachRecord(ctx, ref, fn)
	}
	if from == "-" || !isLocalManifest(from) {
		return false, nil
	}
	ref, err := archive.ParseRef(from, nil)
	if err != nil {
		return true, err
	}
	return true, archive.ForEachRecord(ctx, ref, fn)
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
