package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// amqpArchiveRun is archive for a RabbitMQ DLQ: the same parts, manifests
// and S3 verification as SQS. With --delete a delivery is acknowledged
// only after the part holding it is verified; parts close at the prefetch
// (--amqp-prefetch) at most, since RabbitMQ delivers no more than that
// unacknowledged. Without --delete every message stays held until the end
// and is returned: at most 65535 (RabbitMQ's largest prefetch) are read.
func amqpArchiveRun(ctx context.Context, opts *ArchiveOptions) error {
	f := opts.F
	gep, err := f.Endpoint(ctx, opts.Queue)
	if err != nil {
		return err
	}
	ep, ok := gep.(*amqp.Endpoint)
	if !ok {
		return errs.BadInputf("%s is not a RabbitMQ queue", gep)
	}
	if err := refuseFlags(ep.Capabilities(), opts.flags, false); err != nil {
		return err
	}
	sel, err := opts.Selection.selector(true)
	if err != nil {
		return err
	}
	api, err := f.S3For(ctx, opts.Dest.Bucket)
	if err != nil {
		return err
	}
	if err := archive.CheckBucket(ctx, api, opts.Dest.Bucket); err != nil {
		return err
	}
	depth, err := ep.Depth(ctx)
	if err != nil {
		return err
	}
	cfg := f.amqpConfig()
	aopts := archive.Options{
		Dest: opts.Dest, Selection: sel.Describe(), Max: opts.Max, Delete: opts.Delete,
		PartSize: opts.PartSize, PartRecords: opts.PartRecords, Workers: opts.Concurrency,
		Encryption:  archive.Encryption{SSE: opts.SSE, KMSKeyID: opts.KMSKeyID},
		ToolVersion: Version(),
	}
	if opts.Delete {
		if aopts.PartRecords > cfg.Prefetch {
			f.Verbosef("parts close at %d records (--amqp-prefetch: RabbitMQ delivers no more unacknowledged)", cfg.Prefetch)
			aopts.PartRecords = cfg.Prefetch
		}
		aopts.MaxHeld = cfg.Prefetch
	} else {
		aopts.MaxHeld = 65535
		if depth.Ready > 65535 {
			f.IO.Warnf("%s holds %d messages; without --delete an archive holds every message it reads until the end, and RabbitMQ delivers at most 65535 unacknowledged: the archive will be partial", ep.Name(), depth.Ready)
		}
	}
	if sel != nil {
		watchFilterErrors(f, sel)
		aopts.Select = sel
	}
	share, _ := parseRateShare(opts.RateShareRaw) // validated
	if share != nil {
		// The processes are competing consumers of the queue: the source
		// tags its consumer as one of the share's, so at the end what the
		// peers hold is theirs and what other applications hold is not.
		aopts.Rate, aopts.Peers = share.Rate(opts.Rate), share.N
		aopts.Share = broker.Share{I: share.I, N: share.N}
	} else {
		aopts.Rate = opts.Rate
	}
	format, _ := f.Format()
	if opts.DryRun {
		// A peek: every message read is held to the end, then returned
		// (basic.nack requeue); RabbitMQ delivers at most 65535.
		popts := aopts
		popts.MaxHeld = 65535
		prog := output.NewProgress(f.IO, format)
		pl, err := archive.DryRun(ctx, ep, popts, func(seen int) {
			prog.Update(output.Stats{Op: "scan", Done: int64(seen), Total: depth.Ready}, false)
		})
		prog.Done()
		if errors.Is(err, amqp.ErrPeekUnsafe) {
			return errs.BadInput(err)
		}
		if err != nil {
			return err
		}
		return printArchivePlan(f, prog, format, pl, aopts)
	}
	if opts.Delete {
		err := confirm(f,
			fmt.Sprintf("Archive %s from %s (%d ready) to %s and acknowledge each once its part is verified?", limitedWhat(sel.Describe(), 0, opts.Max), ep.Name(), depth.Ready, opts.Dest),
			fmt.Sprintf("archive --delete removes archived messages from %s; pass --yes to confirm", ep.Name()),
			"archive --delete not confirmed; nothing was changed")
		if err != nil {
			return err
		}
	}
	prog := output.NewProgress(f.IO, format)
	rep := &archiveReporter{f: f, prog: prog, start: time.Now(), total: depth.Ready}
	if opts.Max > 0 {
		rep.total = min(rep.total, int64(opts.Max))
	}
	aopts.Reporter = rep
	res, runErr := archive.Run(ctx, ep, api, aopts)
	prog.Done()
	if res == nil {
		return runErr
	}
	if err := printArchiveSummary(f, prog, format, res, runErr); err != nil {
		return err
	}
	return runErr
}
