package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// topicRouter sends every record to one Kafka topic (restore --to).
type topicRouter struct{ dest broker.Destination }

func (r topicRouter) Route(context.Context, *record.Record) (broker.Destination, string, error) {
	return r.dest, "", nil
}
func (r topicRouter) Describe() string { return r.dest.Label }

// kafkaRestoreRun restores an archive to a Kafka topic: every record
// produced with the idempotent producer (acks=all), key and headers in
// order kept when the archive is a Kafka topic's (the ordering key and the
// attributes otherwise), dead-letter headers dropped, dlqctl's marker
// added; the run journal under --state-dir makes it resumable, as for SQS.
func kafkaRestoreRun(ctx context.Context, opts *RestoreOptions, ref archive.Ref, m *archive.Manifest) error {
	f := opts.F
	ep, err := f.KafkaEndpoint(ctx, opts.To)
	if err != nil {
		return err
	}
	defer ep.Close()
	dest, err := ep.Target(ctx)
	if err != nil {
		return kafkaErr(err)
	}
	if err := verifyBeforeRestore(ctx, f, ref, m); err != nil {
		return err
	}
	sel, _ := opts.Selection.Selector()
	watchFilterErrors(f, sel)
	var selector redrive.Selector
	if sel != nil {
		selector = sel
	}
	router := topicRouter{dest: dest}
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		return kafkaErr(err)
	}
	defer pub.Close(context.WithoutCancel(ctx))
	if opts.DryRun {
		return restorePlan(ctx, opts, ref, m, router, pub, selector)
	}
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	max := opts.Max
	total := m.Records()
	if max > 0 {
		total = min(total, max)
	}
	f.IO.Infof("note: %s", kafkaReplayNote)
	raw, _ := json.Marshal(opts)
	spec := redrive.RunSpec{
		StateDir: f.StateDir(),
		Meta: redrive.RunMeta{Kind: "restore", Source: ref.Name(), Destination: ep.Name(),
			Fingerprint: opts.fingerprint(ep.ID()), Options: raw},
		RefuseCompleted: true, Again: opts.Again,
		AlreadyDone: func(done redrive.RunInfo) error {
			return errs.BadInputf("%s was already restored to %s by run %s (%s); pass --again to send it once more", ref.Name(), ep.Name(), done.ID, done.Updated.Format(time.RFC3339))
		},
		OnResume: func(prev redrive.RunInfo) {
			f.IO.Infof("resuming unfinished restore %s (%s; %d sent): already-sent messages are not sent again", prev.ID, prev.Status, prev.Sent)
		},
		Confirm: func() error {
			return confirm(f,
				fmt.Sprintf("Send %s of %d archived message(s) of %s to %s?", limitedWhat(sel.Describe(), 0, opts.Max), m.Records(), m.Queue.Name, ep),
				fmt.Sprintf("restore produces archived records to %s; pass --yes to confirm (see what would be sent with --dry-run)", ep.Name()),
				"restore not confirmed; nothing was sent")
		},
		OnJournal: func(j *redrive.Journal) { f.Verbosef("run %s, journal %s", j.Meta().ID, j.Dir()) },
		Source:    archive.NewRestoreSource(ref.Src, m),
		Move: redrive.Options{
			Publisher: pub, Router: router, Select: selector, Max: max,
			// One sender: the archive's order is each partition's order,
			// and parallel batches could swap two records of one key.
			Concurrency: 1, Guards: opts.GuardFlags.guards(0), Total: total,
			Reporter: progressReporter(prog, "restore"),
		},
	}
	opts.PaceFlags.apply(&spec.Move)
	spec.OnJournal = withUnconfirmedNote(f, spec.OnJournal)
	out, err := redrive.Execute(ctx, spec)
	prog.Done()
	if err != nil {
		return kafkaRunErr(err)
	}
	if err := printRestoreSummary(f, prog, ref, ep.Name(), out.Result, out.Verdict, out.Status); err != nil {
		return err
	}
	if errs.Code(out.Err) != errs.ExitUsage {
		warnFilterErrors(f, out.Result.FilterErrors, "stay in the archive")
	}
	crashDuplicatesNote(f, out.Result)
	return out.Err
}
