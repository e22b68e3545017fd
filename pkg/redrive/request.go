package redrive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// Request is one redrive out of a dead-letter queue, over endpoints the
// command opened: where the copies go (the route), what is selected, how
// the run is paced, guarded and watched, and how it talks to the person
// running it. Redrive does the rest, on every broker alike.
type Request struct {
	// DLQ is the queue the messages leave.
	DLQ broker.Endpoint
	// Route is where the copies go.
	Route Route
	// Select picks the messages (nil: all); What describes the selection
	// (the confirmation's words).
	Select Selector
	What   string
	// Canary moves this many messages, then watches them (0: no canary).
	Canary int
	// VerifyFor is --verify-for when VerifyGiven; else the broker computes
	// the canary's window (DecideWindow).
	VerifyFor   time.Duration
	VerifyGiven bool
	VerifyPoll  time.Duration
	VerifyDrain bool
	// Visibility is how long a received message stays held between
	// heartbeats.
	Visibility time.Duration
	// DestLag are the --max-dest-lag guards (the destination's consumer
	// groups and the most records each may lag behind).
	DestLag []DestLag
	// ExactlyOnce publishes in transactions (a broker.TxnOpener).
	ExactlyOnce bool
	// Run is the journaled run, filled in but for Source, the publisher,
	// the router, the selection, the canary and the broker's batch
	// tuning: StateDir, ResumeID, Meta (Fingerprint, Options, Transform)
	// and Move (Max, MaxRedrives, Concurrency, Guards, pace, WaitInFlight,
	// Transform, Originals, Reporter); OnJournal and OnWaitHeld as the
	// command says them.
	Run RunSpec
	// Info and Warn say one line to the person running the command.
	Info, Warn func(format string, a ...any)
	// Confirm asks to go on, given the DLQ's depth in the broker's words
	// and where the copies go; an error aborts with nothing changed.
	Confirm func(depth, to string) error
	// Originals opens the archive of originals of a transforming run
	// (checking its bucket) once the run's window is decided; nil: none.
	Originals func(context.Context) (Keeper, error)
}

// Route is where a redrive's copies go: the router, the endpoint whose
// publisher sends them (or the publisher itself), the destinations a
// canary expects them in (nil: those the run finds), and, for a DLQ fed by
// what is not a queue of its broker, its origins.
type Route struct {
	Router      Router
	PubEp       broker.Endpoint
	Pub         broker.Publisher
	CanaryDests []broker.Destination
	Origins     *Origins
}

// Origins are the origins of a DLQ fed by Lambda, SNS or EventBridge: the
// endpoint a canary watches (whose window the origins compute), the
// canary's destinations, and the count of skipped messages that are work
// left (their origin unknown or not replayable).
type Origins struct {
	Watch      broker.Endpoint
	Dests      func(context.Context) ([]broker.Destination, error)
	Unreplayed func(skipped map[string]int) int
}

// Redriven is a finished redrive: the run's Outcome, what the DLQ still
// holds for the run's reader after it (brokers with exact counts, a
// confirmed run), and how many skipped messages are work left (origins).
type Redriven struct {
	*Outcome
	PendingAfter *int64
	Unreplayed   int
}

// Redrive runs a redrive request: it refuses what cannot hold before
// anything moves (a --max-dest-lag group the destination does not know, a
// destination depth the origins do not have, a canary window the broker
// cannot know), decides the canary's window and baseline, tunes the batch
// to the broker, opens the source and the publisher, and executes the run
// (Execute: journal, confirmation, pipeline, canary, verdict). An error
// is returned for a run that never started; the Outcome's Err otherwise.
func Redrive(ctx context.Context, req Request) (*Redriven, error) {
	ep, route := req.DLQ, req.Route
	caps := ep.Capabilities()
	words := caps.Words()
	from := route.Origins
	if from != nil && (req.Run.Move.Guards.MaxDestBacklog > 0 || req.VerifyDrain) {
		return nil, errs.BadInputf("--max-dest-backlog and --verify-drain read a destination queue's depth; the origins of this DLQ are functions, subscriptions and targets: drop them (--max-returns guards the DLQ)")
	}
	depth, err := ep.Depth(ctx)
	if err != nil {
		return nil, broker.StartError(err)
	}
	spec := req.Run
	if len(req.DestLag) > 0 {
		lr, ok := route.PubEp.(broker.LagReader)
		if !ok {
			return nil, errs.BadInputf("--max-dest-lag needs a destination whose consumers report their lag; %s has none", caps.Label)
		}
		// A group the destination does not know would never trip the
		// guard: refused before anything moves.
		for _, g := range req.DestLag {
			if _, err := lr.GroupLag(ctx, g.Group); err != nil {
				if errors.Is(err, broker.ErrNotFound) {
					return nil, errs.BadInputf("--max-dest-lag %s:%d: %v; name a consumer group of the destination", g.Group, g.Max, err)
				}
				return nil, broker.StartError(err)
			}
		}
		spec.Move.Lag = lr
		spec.Move.Guards.MaxDestLag = append(spec.Move.Guards.MaxDestLag, req.DestLag...)
	}
	// A destination's depth, where its broker counts what waits in it:
	// the backlog guard and --verify-drain read it.
	var destDepth func(context.Context, broker.Destination) (broker.Depth, error)
	if d, ok := route.PubEp.(broker.DestinationDepther); ok && from == nil {
		destDepth = d.DestinationDepth
	}
	var window Window
	canaryDests, watch, delivered := route.CanaryDests, ep, "moved %d message(s)"
	baseline := map[string]int{}
	if req.Canary > 0 {
		if from != nil {
			// Copies go to functions, subscriptions and targets: the
			// origins say how long one failing again needs to come back.
			if canaryDests, err = from.Dests(ctx); err != nil {
				return nil, err
			}
			watch, delivered = from.Watch, "delivered %d message(s) to their origins"
		}
		// Decided before anything moves: a window the broker cannot know
		// refuses --canary without --verify-for (exit 2).
		if window, baseline, err = DecideCanary(ctx, watch, canaryDests, destDepth, req.VerifyFor, req.VerifyGiven, req.Info, req.Warn); err != nil {
			return nil, err
		}
	}
	if req.Originals != nil {
		if spec.Move.Originals, err = req.Originals(ctx); err != nil {
			return nil, err
		}
	}
	limit := spec.Move.Max
	if req.Canary > 0 {
		limit = req.Canary
	}
	spec.Move.Max, spec.Move.Total = limit, int(depth.Ready)
	if limit > 0 {
		spec.Move.Total = min(spec.Move.Total, limit)
	}
	spec.Meta.Kind, spec.Meta.Source, spec.Meta.SourceURL, spec.Meta.Destination = "redrive", ep.ID(), ep.ID(), route.Router.Describe()
	if caps.Hold == broker.HoldLease {
		spec.Meta.Visibility = req.Visibility.Seconds()
	}
	spec.Move.SourceCaps, spec.Move.DestDepth, spec.Move.Router, spec.Move.Select = caps, destDepth, route.Router, req.Select
	confirmed := false
	spec.OnResume = func(prev RunInfo) {
		req.Info("resuming unfinished run %s (%s; %d sent, %d %s): %s", prev.ID, prev.Status, prev.Sent, prev.Deleted, words.Removed, words.Resuming)
	}
	spec.Confirm = func() error {
		if err := req.Confirm(fmt.Sprintf("%d %s", depth.Ready, words.Ready), route.Router.Describe()); err != nil {
			return err
		}
		confirmed = true
		if caps.ReplayNote != "" {
			req.Info("note: %s", caps.ReplayNote)
		}
		return nil
	}
	tuneBatch(&spec.Move, ep, caps, limit)
	// Without a selection or a transform nothing reads a record's
	// headers (beyond the marker and the route) or its death history:
	// the copy and the route come from what the source kept of the read.
	decode := inspect.DecodeMarker
	if req.Select != nil || spec.Move.Transform != nil || from != nil {
		decode = inspect.Decode
	}
	sh := spec.Move.Share
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Hold: req.Visibility, Wait: time.Second, Decode: decode,
		Lean: req.Select == nil && spec.Move.Transform == nil, Share: broker.Share{I: sh.I, N: sh.N}})
	if err != nil {
		return nil, broker.StartError(err)
	}
	pub := route.Pub
	switch {
	case pub != nil:
	case req.ExactlyOnce:
		opener, ok := route.PubEp.(broker.TxnOpener)
		if !ok {
			src.Close(context.WithoutCancel(ctx))
			return nil, errs.BadInputf("--exactly-once needs a broker with transactions; %s has none", caps.Label)
		}
		pub, err = opener.OpenTxnPublisher(ctx, src)
	default:
		pub, err = route.PubEp.OpenPublisher(ctx)
	}
	if err != nil {
		src.Close(context.WithoutCancel(ctx))
		if errors.Is(err, broker.ErrUnsupported) {
			return nil, errs.BadInput(err)
		}
		return nil, broker.StartError(err)
	}
	defer pub.Close(context.WithoutCancel(ctx))
	spec.Source, spec.Move.Publisher = src, pub
	if req.Canary > 0 {
		spec.Canary = &CanarySpec{Watch: ep, Dests: canaryDests, DestDepth: destDepth, Baseline: baseline,
			Verify: window.Verify(VerifyOptions{Poll: req.VerifyPoll, Drain: req.VerifyDrain, Visibility: req.Visibility}),
			OnStart: func(moved int) {
				req.Info("canary: "+delivered+"; watching %s for %s", moved, ep.Name(), window.For)
			}}
	}
	out, err := Execute(ctx, spec)
	if err != nil {
		return nil, err
	}
	done := &Redriven{Outcome: out}
	if caps.Counts == broker.CountsExact && confirmed {
		if d, err := ep.Depth(context.WithoutCancel(ctx)); err == nil {
			done.PendingAfter = &d.Ready
		}
	}
	if from != nil && out.Result != nil {
		done.Unreplayed = from.Unreplayed(out.Result.Skipped)
	}
	return done, nil
}

// tuneBatch fits a run's batches to its broker: bigger ones for a broker
// without a batch API when nothing paces the run (broker.UnpacedBatcher),
// one worker with the broker's batch for partition-ordered sources.
func tuneBatch(o *Options, ep broker.Endpoint, caps broker.Capabilities, limit int) {
	unpaced := o.Rate == 0 && len(o.Ramp) == 0
	if b, ok := ep.(broker.UnpacedBatcher); ok && unpaced {
		// A broker without a batch API (RabbitMQ) reads and publishes
		// bigger batches when nothing paces them (UnpacedBatcher). A paced
		// run keeps small batches: a worker waits for the rate's tokens for
		// its whole batch, holding it meanwhile.
		if entries, bytes := b.UnpacedBatch(o.Concurrency, limit); entries > pipeline.DefaultBatchEntries {
			o.BatchEntries, o.BatchBytes = entries, bytes
		}
	}
	if caps.Ordering == broker.OrderPartition {
		// One worker: copies of one key are published in the order of
		// their originals (a worker's batch is up to the broker's batch,
		// or a second of the rate, so a paced run holds little).
		o.Concurrency = 1
		o.BatchEntries, o.BatchBytes = caps.MaxBatchEntries, caps.MaxBatchBytes
		if r := o.Rate; r > 0 || len(o.Ramp) > 0 {
			if len(o.Ramp) > 0 {
				r = o.Ramp[0]
				for _, s := range o.Ramp {
					r = min(r, s)
				}
			}
			o.BatchEntries = max(1, min(caps.MaxBatchEntries, int(r)))
		}
	}
}

// ParseDestLag parses --max-dest-lag GROUP:N values (the destination's
// consumer group and the most records it may lag behind).
func ParseDestLag(raw []string) ([]DestLag, error) {
	var out []DestLag
	for _, r := range raw {
		g, n, ok := strings.Cut(r, ":")
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if !ok || strings.TrimSpace(g) == "" || err != nil || v < 0 {
			return nil, errs.BadInputf("--max-dest-lag %q: use GROUP:N, e.g. --max-dest-lag orders-service:1000 (the destination's consumer group and the most records it may lag behind)", r)
		}
		out = append(out, DestLag{Group: strings.TrimSpace(g), Max: v})
	}
	return out, nil
}
