package archive

import (
	"context"
	"errors"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// Request is one 'dlqctl archive' of a queue as its flags give it: the
// run's Options (Rate the whole run's, WaitInFlight the longest wait)
// and what is decided against the queue once it is open.
type Request struct {
	Options
	// DryRun reads the queue without consuming it (a peek: every message
	// read is held to the end, then given back) and returns a Plan.
	DryRun bool
	// Share is --rate-share I/N (nil: a run alone): this process paces
	// itself at its part of Rate.
	Share *redrive.Share
}

// Hooks are how Archive reports and asks outside the package.
type Hooks struct {
	Warnf    func(format string, a ...any)
	Verbosef func(format string, a ...any)
	// Confirm is asked before a run with Delete, given the messages
	// waiting in the queue; an error stops before anything is read.
	Confirm func(ready int64) error
	// Scanned reports a dry run's progress: messages read of about total.
	Scanned func(seen int, total int64)
	// Reporter returns the run's reporter, given how many messages it
	// expects (the depth, or Max when lower).
	Reporter func(total int64) Reporter
}

// Outcome is what Archive did: a Plan for a dry run (with the Options it
// was computed with), else the run's Result.
type Outcome struct {
	Plan    *Plan
	Options Options
	Result  *Result
}

// Archive archives a queue to S3 (Run), or plans it (DryRun), after
// checking the bucket and reading the queue's depth, fitting the options
// to what the broker can hold and share. A nil Outcome means nothing was
// archived; with a Result, the error is the one that ended the run.
func Archive(ctx context.Context, ep broker.Endpoint, api S3API, req Request, h Hooks) (*Outcome, error) {
	caps := ep.Capabilities()
	if err := CheckBucket(ctx, api, req.Dest.Bucket); err != nil {
		return nil, err
	}
	depth, err := ep.Depth(ctx)
	if err != nil {
		return nil, OpenErr(err)
	}
	if pw, ok := ep.(broker.PeekWarner); ok {
		for _, w := range PeekWarnings(pw.PeekWarnings(), caps, req.Delete) {
			h.Warnf("%s", w)
		}
	}
	aopts := req.Options
	hl, limited := ep.(broker.HeldLimiter)
	if limited {
		note, warn := aopts.FitHeldLimit(hl, ep.Name(), depth.Ready)
		if note != "" {
			h.Verbosef("%s", note)
		}
		if warn != "" {
			h.Warnf("%s", warn)
		}
	}
	if share := req.Share; share != nil {
		aopts.Rate, aopts.Peers = share.Rate(req.Rate), share.N
		if caps.Sharing == broker.ShareCompeting {
			// The processes are competing consumers of the queue: the
			// source tags its reader as one of the share's, so at the end
			// what the peers hold is theirs and what other applications
			// hold is not.
			aopts.Share = broker.Share{I: share.I, N: share.N}
		}
	}
	if caps.Hold != broker.HoldLease {
		aopts.WaitInFlight = 0 // only a lease comes back by itself
	}
	if req.DryRun {
		// A peek: every message read is held to the end, then given back.
		if limited {
			aopts.MaxHeld, _ = hl.HeldLimit(false)
		}
		pl, err := DryRun(ctx, ep, aopts, func(seen int) { h.Scanned(seen, depth.Ready) })
		if errors.Is(err, broker.ErrPeekUnsafe) && errs.Code(err) != errs.ExitUsage {
			return nil, errs.BadInput(err)
		}
		if err != nil {
			return nil, err
		}
		return &Outcome{Plan: pl, Options: aopts}, nil
	}
	if req.Delete {
		if err := h.Confirm(depth.Ready); err != nil {
			return nil, err
		}
	}
	total := depth.Ready
	if req.Max > 0 {
		total = min(total, int64(req.Max))
	}
	aopts.Reporter = h.Reporter(total)
	res, err := Run(ctx, ep, api, aopts)
	if res == nil {
		return nil, RunEndErr(err)
	}
	return &Outcome{Result: res, Options: aopts}, err
}

// DeleteRecords deletes the records below the committed offsets of a
// broker that deletes by offset (Kafka's DeleteRecords, irreversible),
// after a run with Delete; the lines say what was deleted.
func DeleteRecords(ctx context.Context, ep broker.Endpoint) ([]string, error) {
	rd, ok := ep.(broker.RecordDeleter)
	if !ok { // the refusal table keeps --delete-records to brokers that delete by offset
		return nil, errs.BadInputf("--delete-records: %s cannot delete records by offset", ep.Capabilities().Label)
	}
	return rd.DeleteHandled(ctx)
}

// OpenErr maps an error met while looking at the queue, before anything
// changed: bad input stays bad input; an unreachable broker, a refused
// login and a missing queue or topic are exit 2 on every broker.
func OpenErr(err error) error {
	if errs.Code(err) == errs.ExitUsage {
		return err
	}
	return broker.StartError(err)
}

// RunEndErr maps the error that ended a run, after it may have changed
// something: bad input and a queue or topic that is gone are exit 2; a
// broker lost in the middle of a run is an error (1).
func RunEndErr(err error) error {
	if err != nil && errors.Is(err, broker.ErrNotFound) && errs.Code(err) != errs.ExitUsage {
		return errs.BadInput(err)
	}
	return err
}
