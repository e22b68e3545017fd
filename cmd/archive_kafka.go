package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// kafkaArchiveRun archives a Kafka dead-letter topic to S3 with the same
// parts and manifests as an SQS queue. --delete commits dlqctl's group past
// each record once the part holding it is verified (nothing is deleted
// from the topic); --delete-records then deletes the records below the
// committed offsets (DeleteRecords, irreversible).
func kafkaArchiveRun(ctx context.Context, opts *ArchiveOptions) error {
	f := opts.F
	if opts.DeleteRecords && (!opts.Delete || !f.Opts.Yes) {
		return errs.BadInputf("--delete-records deletes records from the topic for good: it needs --delete (so only verified records are below the committed offsets) and --yes")
	}
	ep, err := f.KafkaEndpoint(ctx, opts.Queue)
	if err != nil {
		return err
	}
	defer ep.Close()
	if err := refuseFlags(ep.Capabilities(), opts.flags, false); err != nil {
		return err
	}
	plan, err := ep.Plan(ctx)
	if err != nil {
		return kafkaErr(err)
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
	aopts := archive.Options{
		Dest: opts.Dest, Selection: sel.Describe(), Max: opts.Max, Delete: opts.Delete,
		PartSize: opts.PartSize, PartRecords: opts.PartRecords, Workers: opts.Concurrency,
		Encryption:  archive.Encryption{SSE: opts.SSE, KMSKeyID: opts.KMSKeyID},
		ToolVersion: Version(),
	}
	if sel != nil {
		watchFilterErrors(f, sel)
		aopts.Select = sel
	}
	share, _ := parseRateShare(opts.RateShareRaw)
	if share != nil {
		aopts.Rate, aopts.Peers = share.Rate(opts.Rate), share.N
	} else {
		aopts.Rate = opts.Rate
	}
	format, _ := f.Format()
	if opts.DryRun {
		return archivePlan(ctx, f, ep, plan.Pending(), aopts, format)
	}
	if opts.Delete {
		if err := confirm(f,
			fmt.Sprintf("Archive %s from %s (%d pending for group %s) to %s and commit the group past each record once its part is verified?", limitedWhat(sel.Describe(), 0, opts.Max), ep, plan.Pending(), ep.Group(), opts.Dest),
			fmt.Sprintf("archive --delete moves group %s's committed offsets past what it archives; pass --yes to confirm (see what would be archived with --dry-run)", ep.Group()),
			"archive --delete not confirmed; nothing was changed"); err != nil {
			return err
		}
	}
	prog := output.NewProgress(f.IO, format)
	rep := &archiveReporter{f: f, prog: prog, start: time.Now(), total: plan.Pending()}
	if opts.Max > 0 {
		rep.total = min(rep.total, int64(opts.Max))
	}
	aopts.Reporter = rep
	res, runErr := archive.Run(ctx, ep, api, aopts)
	prog.Done()
	if res == nil {
		return kafkaRunErr(runErr)
	}
	if err := printArchiveSummary(f, prog, format, res, runErr); err != nil {
		return err
	}
	if runErr == nil && opts.DeleteRecords {
		if err := kafkaDeleteRecords(ctx, f, ep); err != nil {
			return err
		}
	}
	return runErr
}

// kafkaDeleteRecords deletes, per partition, the records below dlqctl's
// committed offset: every one of them was archived and verified, replayed
// and acknowledged, or explicitly discarded.
func kafkaDeleteRecords(ctx context.Context, f *Factory, ep *kafka.Endpoint) error {
	adm, err := ep.Admin()
	if err != nil {
		return kafkaErr(err)
	}
	plan, err := ep.Plan(ctx)
	if err != nil {
		return kafkaErr(err)
	}
	offs := kadm.Offsets{}
	for _, pr := range plan.Partitions {
		if pr.Committed > pr.LogStart {
			offs.Add(kadm.Offset{Topic: ep.Name(), Partition: pr.Partition, At: pr.Committed, LeaderEpoch: -1})
		}
	}
	if len(offs) == 0 {
		f.IO.Infof("--delete-records: nothing below the committed offsets to delete")
		return nil
	}
	resp, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		return fmt.Errorf("DeleteRecords on %s: %w", ep.Name(), err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("DeleteRecords on %s: %w", ep.Name(), err)
	}
	resp.Each(func(r kadm.DeleteRecordsResponse) {
		f.IO.Infof("--delete-records: %s partition %d now starts at offset %d", r.Topic, r.Partition, r.LowWatermark)
	})
	return nil
}
