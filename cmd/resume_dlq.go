package cmd

import (
	"context"

	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// newestUnfinishedRedrive is the id of the newest redrive run of the DLQ
// ref names that did not finish (killed, interrupted, partial), or "" (and
// a note on stderr) when there is none. Runs of other DLQs, restores and
// runs that stopped on a verdict are never picked.
func newestUnfinishedRedrive(ctx context.Context, f *Factory, ref string) (string, error) {
	// Match by ARN when the reference is one, else resolve it (name or URL).
	arn, err := f.sqsQueueARN(ctx, ref)
	if err != nil {
		return "", err
	}
	r, err := redrive.NewestUnfinished(f.StateDir(), arn)
	if err != nil || r == nil {
		if err == nil {
			f.IO.Infof("no unfinished redrive run of %s under %s: nothing to resume", record.ARNName(arn, "sqs"), f.StateDir())
		}
		return "", err
	}
	f.IO.Infof("resuming run %s (%s, started %s): the newest unfinished redrive of %s", r.ID, r.Status, r.Created.Format("2006-01-02 15:04:05Z07:00"), record.ARNName(arn, "sqs"))
	return r.ID, nil
}
