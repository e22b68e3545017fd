package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// redriveSession is a redrive the factory opened (Factory.openRedrive):
// the DLQ's endpoint and what the run does with it: the broker's own move
// (native), else the redrive.Request, which the plan of --dry-run (planPub)
// reads and redrive.Redrive runs. redriveRun hands it to its domain entry
// point and prints; close releases what was opened.
type redriveSession struct {
	f       *Factory
	ep      broker.Endpoint
	native  *redrive.Native
	req     redrive.Request
	closers []func()
	// planPub is --dry-run's (nil without): it prepares the copies, the
	// DLQ is read as queue names it, the plan shows the pace the flags name.
	planPub broker.Publisher
	queue   string
	pace    PaceFlags
}

func (s *redriveSession) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// openRedrive opens everything a redrive run needs, in the order in which
// its refusals are due: the DLQ (its broker's opener), the flags its
// resolved capabilities cannot honour, the selection, the route (--to),
// the --logs lookup, the transform, and the redrive.Request;
// --engine native opens the broker's own move instead (openNative).
func (f *Factory) openRedrive(ctx context.Context, opts *RedriveOptions) (*redriveSession, error) {
	if opts.Engine == "native" {
		return f.openNative(ctx, opts)
	}
	ep, err := f.EndpointOf(ctx, opts.dlq)
	if err != nil {
		return nil, err
	}
	s := &redriveSession{f: f, ep: ep, closers: []func(){func() { broker.CloseEndpoint(ep) }}}
	fail := func(err error) (*redriveSession, error) {
		s.close()
		return nil, err
	}
	caps := ep.Capabilities()
	if err := refuseFlags(caps, opts.flags, false); err != nil {
		return fail(err)
	}
	sel, err := opts.Selection.Selector()
	if err != nil {
		return fail(err)
	}
	watchFilterErrors(f, sel)
	route, closeRoute, err := redriveRoute(ctx, f, opts.to, opts.toShown, opts.Origin, ep)
	if err != nil {
		return fail(err)
	}
	s.closers = append(s.closers, closeRoute)
	if err := prepareLogs(ctx, f, ep.String(), sel, &opts.Selection.Logs); err != nil {
		return fail(err)
	}
	// Without a selection nothing reads a record beyond the redrive
	// marker and the route: records are not decoded for it.
	var selector redrive.Selector
	if sel != nil && !sel.MatchesAll() {
		selector = sel
	}
	if pw, ok := ep.(broker.PeekWarner); ok {
		for _, w := range pw.PeekWarnings() {
			f.IO.Warnf("%s", w)
		}
	}
	xf := opts.Transform.limited(caps)
	watchTransformErrors(f, xf)
	if opts.DryRun {
		// The copies are prepared by a publisher that does not connect
		// where the broker has one (broker.Preparer).
		s.planPub, s.queue, s.pace = route.Pub, opts.DLQ, opts.PaceFlags
		if p, ok := route.PubEp.(broker.Preparer); ok && s.planPub == nil {
			s.planPub = p.Preparer()
		} else if s.planPub == nil {
			if s.planPub, err = route.PubEp.OpenPublisher(ctx); err != nil {
				return fail(broker.StartError(err))
			}
		}
		s.closers = append(s.closers, func() { s.planPub.Close(context.WithoutCancel(ctx)) })
	}
	// The journal keeps the options without credentials: a resumed run
	// takes them from the reference or the broker's environment.
	shown := *opts
	shown.DLQ, shown.To = ep.String(), opts.toShown
	raw, _ := json.Marshal(&shown)
	what := limitedWhat(selectionText(sel), opts.Canary, opts.Max)
	s.req = redrive.Request{
		DLQ: ep, Route: route, Select: selector, What: selectionText(sel), Canary: opts.Canary,
		VerifyFor: opts.VerifyFor, VerifyGiven: opts.verifySet != nil && opts.verifySet(), VerifyPoll: opts.VerifyPoll, VerifyDrain: opts.VerifyDrain,
		Visibility: opts.Visibility, DestLag: opts.destLag, ExactlyOnce: opts.Kafka.ExactlyOnce,
		Info: f.IO.Infof, Warn: f.IO.Warnf,
		Confirm: func(depth, to string) error { return confirmRedrive(f, what, ep.Name(), depth, to) },
		Originals: func(ctx context.Context) (redrive.Keeper, error) {
			dest := opts.Transform.dest
			if dest == nil {
				return nil, nil
			}
			api, err := f.S3For(ctx, dest.Bucket)
			if err != nil {
				return nil, err
			}
			o, err := archive.OpenOriginals(ctx, api, archive.OriginalsOptions{
				Dest: *dest, Encryption: opts.Transform.enc, ToolVersion: Version(),
				Queue: archive.QueueInfo{Name: ep.Name(), URL: ep.String(), ARN: ep.ID(), FIFO: ep.Capabilities().Ordering == broker.OrderGroupLock},
				Selection: fmt.Sprintf("originals of %s, repaired with --transform (expression sha256 %s): %s",
					selectionText(sel), xf.SHA256(), xf.Source()),
			})
			if err != nil {
				return nil, err
			}
			return o, nil
		},
		Run: redrive.RunSpec{
			StateDir: f.StateDir(), ResumeID: opts.ResumeID,
			Meta:       redrive.RunMeta{Fingerprint: opts.fingerprint(ep.ID()), Options: raw, Transform: opts.Transform.meta(xf)},
			OnWaitHeld: func(id string, wait time.Duration) { waitHeldInfo(f, id, wait) },
			OnJournal:  withUnconfirmedNote(f, func(j *redrive.Journal) { f.Verbosef("run %s, journal %s", j.Meta().ID, j.Dir()) }),
			Move:       opts.move,
		},
	}
	s.req.Run.Move.Transform = xf
	return s, nil
}

// openNative opens --engine native: the DLQ whose broker moves it itself
// (refused, with the flags its capabilities cannot honour, otherwise) and
// the destination (nil: back to the sources), with the steps of the pace.
func (f *Factory) openNative(ctx context.Context, opts *RedriveOptions) (*redriveSession, error) {
	ep, mover, err := openNativeMover(ctx, f, opts.dlq, "--engine native", "use --engine dlqctl (the default)", opts.flags)
	if err != nil {
		return nil, err
	}
	s := &redriveSession{f: f, ep: ep, closers: []func(){func() { broker.CloseEndpoint(ep) }}}
	n := &redrive.Native{DLQ: ep, Mover: mover, To: "their sources", Steps: opts.nativeSteps, Every: opts.RampEvery}
	if opts.to != nil {
		if n.Dest, err = f.EndpointOf(ctx, *opts.to); err != nil {
			s.close()
			return nil, err
		}
		s.closers = append(s.closers, func() { broker.CloseEndpoint(n.Dest) })
		if n.Dest.ID() == ep.ID() {
			s.close()
			return nil, errs.BadInputf("--to %s is the DLQ itself; pass --to source or another queue", opts.toShown)
		}
		n.To = opts.To
	}
	s.native = n
	return s, nil
}
