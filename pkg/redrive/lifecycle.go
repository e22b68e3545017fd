package redrive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// RunSpec is one journaled run of the move pipeline — a redrive (source: a
// DLQ) or a restore (source: an archive) — from finding the journal to the
// verdict. Commands fill it in and render the Outcome; the lifecycle itself
// lives only here.
type RunSpec struct {
	StateDir string
	// Meta describes a new run (Kind, Source, SourceURL, Destination,
	// Fingerprint, Options, Visibility); ID and Created are filled in.
	Meta RunMeta
	// ResumeID continues the named run (`redrive resume RUN_ID`).
	ResumeID string
	// RefuseCompleted refuses to repeat a completed run with the same
	// fingerprint unless Again is set (an archive never drains: the same
	// restore run twice would send everything twice).
	RefuseCompleted bool
	Again           bool
	// AlreadyDone builds the refusal (bad input, exit 2).
	AlreadyDone func(done RunInfo) error
	// OnResume is told which unfinished run is continued.
	OnResume func(prev RunInfo)
	// Confirm is called once it is known whether a run is resumed, before
	// anything changes; an error aborts with nothing changed.
	Confirm func() error
	// OnWaitHeld is told how long a resumed run that did not stop cleanly
	// waits for the messages it held to become visible again.
	OnWaitHeld func(runID string, wait time.Duration)
	// OnJournal is told the journal in use.
	OnJournal func(j *Journal)

	Source Source
	// Move configures the pipeline; Journal is set by Execute.
	Move Options
	// Canary, when set, watches for returns after the run moved something.
	Canary *CanarySpec
}

// CanarySpec is the watch after a canary run.
type CanarySpec struct {
	// Watch is the queue copies come back to when they fail again (the DLQ
	// for a redrive, the destination's DLQ for a restore).
	Watch broker.Endpoint
	// Dests are the destinations to expect copies in when nothing was
	// moved to a known destination yet.
	Dests []broker.Destination
	// DestDepth reads a destination's depth (--canary-drain).
	DestDepth func(ctx context.Context, dest broker.Destination) (broker.Depth, error)
	// Baseline: depths of the destinations before the run, by
	// Destination.Key.
	Baseline map[string]int
	Verify   VerifyOptions
	// OnStart is told how many messages are watched.
	OnStart func(moved int)
}

// Outcome is a finished run: the accounting, the canary verdict, the
// journal status written, and the error that sets the exit code.
type Outcome struct {
	RunID   string
	Result  *Result
	Verdict *Verdict
	Status  string
	Note    string
	// Err is nil for a completed run, else Partial (4), Verdict (3) or
	// ErrInterrupted (130).
	Err error
	// CloseErr: releasing what the run still held failed; those messages
	// become visible again when their visibility timeout ends.
	CloseErr error
}

// Execute finds or creates the run's journal (resuming an unfinished run
// of the same command), runs the pipeline, watches the canary, records the
// status and decides the exit code. Errors before the run started (bad
// input, a refused confirmation) are returned as error with nothing
// changed. Execute closes spec.Source on every path (a consuming Kafka
// read that never ran leaves its group at once, instead of holding its
// partitions for a session timeout).
func Execute(ctx context.Context, spec RunSpec) (*Outcome, error) {
	ran := false
	defer func() {
		if !ran && spec.Source != nil {
			_ = spec.Source.Close(context.WithoutCancel(ctx))
		}
	}()
	if sh := spec.Move.Share; sh.Shared() && spec.Canary != nil {
		return nil, errs.BadInputf("--canary and --rate-share exclude each other: a canary watches for returns, and peers watching the same queue hide messages from each other; run the canary alone, then start the peers with --rate-share")
	}
	if sh := spec.Move.Share; sh.Shared() {
		// The processes of a shared run on a queue give a message the same
		// FIFO deduplication id (the command is theirs in common, the run
		// id is not). Not for an archive: its processes split the records,
		// and `restore --again` must send them again.
		if onQueue := spec.Move.SourceCaps.Sharing != 0; onQueue && spec.Move.DedupKey == "" {
			spec.Move.DedupKey = "shared\x00" + spec.Meta.Fingerprint
		}
		// Each process of a shared run has its own journal: a re-run of
		// process I/N resumes process I/N's run, never a peer's (whose
		// process may be running on the same state dir).
		spec.Meta.Fingerprint += "~" + sh.String()
	}
	resumeID := spec.ResumeID
	if resumeID == "" {
		prev, err := FindUnfinished(spec.StateDir, spec.Meta.Fingerprint)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			resumeID = prev.ID
			if spec.OnResume != nil {
				spec.OnResume(*prev)
			}
		} else if spec.RefuseCompleted && !spec.Again {
			done, err := completedRun(spec.StateDir, spec.Meta.Fingerprint)
			if err != nil {
				return nil, err
			}
			if done != nil {
				if spec.AlreadyDone != nil {
					return nil, spec.AlreadyDone(*done)
				}
				return nil, errs.BadInputf("%s was already sent to %s by run %s; pass --again to send it once more", spec.Meta.Source, spec.Meta.Destination, done.ID)
			}
		}
	}
	if spec.Confirm != nil {
		if err := spec.Confirm(); err != nil {
			return nil, err
		}
	}
	var j *Journal
	var err error
	if resumeID != "" {
		if j, err = OpenJournal(spec.StateDir, resumeID); err != nil {
			return nil, err
		}
		if err := waitForHeld(ctx, j, spec.OnWaitHeld); err != nil {
			j.Close()
			return nil, err
		}
	} else {
		meta := spec.Meta
		now := time.Now()
		meta.ID, meta.Created = NewRunID(now), now.UTC()
		if j, err = CreateJournal(spec.StateDir, meta); err != nil {
			return nil, err
		}
	}
	defer j.Close()
	if spec.OnJournal != nil {
		spec.OnJournal(j)
	}
	_ = j.SetStatus(StatusRunning, "")

	// Where the DLQ keeps positions, a fresh canary marks its end before
	// anything moves (a resumed one cannot: returns of the first attempt
	// may be in it already, so it counts every marker-less body match).
	var alreadyThere func(*record.Record) bool
	if pm, ok := canaryWatch(spec.Canary).(broker.PositionMarker); ok && resumeID == "" {
		// Not marked (the cluster did not answer): every marker-less
		// body match counts as a return, the safe side.
		alreadyThere, _ = pm.MarkEnd(ctx)
	}
	opt := spec.Move
	opt.Journal = j
	opt.noBodyDigests = spec.Canary == nil
	ran = true // Run's end closes the source below
	res, runErr := Run(ctx, spec.Source, opt)
	out := &Outcome{RunID: j.Meta().ID, CloseErr: spec.Source.Close(context.WithoutCancel(ctx))}
	if res == nil {
		_ = j.SetStatus(StatusFailed, runErr.Error())
		return nil, runErr
	}
	out.Result = res

	if cs := spec.Canary; cs != nil && res.Guard == nil && !res.Interrupted && runErr == nil && res.Moved+res.Resumed > 0 {
		moved := res.Moved + res.Resumed
		if cs.OnStart != nil {
			cs.OnStart(moved)
		}
		dests := res.Destinations
		if len(dests) == 0 {
			dests = cs.Dests
		}
		vo := cs.Verify
		vo.Baseline = cs.Baseline
		vo.SeenReturned = append(vo.SeenReturned, res.ReturnedIDs...)
		vo.AlreadyThere = alreadyThere
		v, verr := VerifyCanary(ctx, cs.Watch, j, moved, dests, cs.DestDepth, vo)
		switch {
		case verr != nil && ctx.Err() != nil:
			res.Interrupted = true
		case verr != nil:
			runErr = verr
		}
		if v != nil && spec.Move.Transform != nil {
			// The copies watched are the repaired ones: the verdict is
			// about the fix as much as about the consumer.
			v.Transformed = true
			v.Detail = fmt.Sprintf("transformed copies (expression sha256 %.12s…): %s", spec.Move.Transform.SHA256(), v.Detail)
		}
		out.Verdict = v
	}
	out.Status, out.Note, out.Err = decideOutcome(res, runErr, out.Verdict)
	_ = j.SetStatus(out.Status, out.Note)
	return out, nil
}

// decideOutcome decides a run's journal status, its note, and the error
// that sets the exit code: a tripped guard (3), an interruption (130),
// anything left undone (4; a run error without an exit code of its own
// counts as partial), then a failed canary (3).
func decideOutcome(res *Result, runErr error, verdict *Verdict) (status, note string, outcome error) {
	if errs.Code(runErr) == errs.ExitUsage {
		// Refused before anything moved (a --filter that failed on every
		// message read): nothing to resume, and the refusal is the answer.
		return StatusFailed, runErr.Error(), runErr
	}
	status = StatusCompleted
	outcome = res.Err()
	if runErr != nil && outcome == nil {
		outcome = runErr
		if errs.Code(runErr) == errs.ExitError {
			outcome = errs.Partial(runErr)
		}
	}
	switch {
	case res.Guard != nil:
		status, note = StatusGuard, res.Guard.Detail
	case res.Interrupted:
		status = StatusInterrupted
		outcome = errs.ErrInterrupted
	case outcome != nil:
		status, note = StatusPartial, outcome.Error()
	case verdict != nil && !verdict.Pass:
		status, note = StatusCanaryFail, verdict.Detail
		outcome = errs.Verdictf("canary failed: %s", verdict.Detail)
	}
	return status, note, outcome
}

// waitForHeld waits, when resuming a run that did not stop cleanly, until
// the messages it held are visible again (their visibility ran out).
func waitForHeld(ctx context.Context, j *Journal, tell func(string, time.Duration)) error {
	meta := j.Meta()
	if meta.Status != StatusRunning {
		return nil // a clean stop released everything
	}
	last := meta.Updated
	if st, err := os.Stat(filepath.Join(j.Dir(), "journal.ndjson")); err == nil && st.ModTime().After(last) {
		last = st.ModTime()
	}
	until := last.Add(time.Duration(meta.Visibility*float64(time.Second)) + time.Second)
	wait := time.Until(until)
	if wait <= 0 {
		return nil
	}
	if tell != nil {
		tell(meta.ID, wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// completedRun returns the newest completed run with the fingerprint, or nil.
func completedRun(stateDir, fp string) (*RunInfo, error) {
	return newestRun(stateDir, func(m RunMeta) bool { return m.Fingerprint == fp && m.Status == StatusCompleted })
}

// canaryWatch is the queue a canary watches (nil without a canary).
func canaryWatch(cs *CanarySpec) broker.Endpoint {
	if cs == nil {
		return nil
	}
	return cs.Watch
}
