package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// Item, Source and ErrSourceDone are the pipeline's: a redrive reads any
// pipeline source (a queue, an archive).
type (
	Item   = pipeline.Item
	Source = pipeline.Source
)

// ErrSourceDone is pipeline.ErrSourceDone.
var ErrSourceDone = pipeline.ErrSourceDone

// Selector decides which messages a run moves; *classify.Selector
// satisfies it. A nil Selector selects everything.
type Selector interface {
	// Select reports whether rec is selected. A non-nil error means it is
	// not: a bad-input error (errs.Code 2) is the selection's refusal — it
	// failed on every message read — and stops the run before anything
	// moves; any other error is the filter or a rule failing on this one
	// message, which stays where it is (SkipFilterError).
	Select(rec *record.Record, parsed any) (bool, error)
	// Refusal is the refusal at the end of a run that read fewer messages
	// than it takes Select to refuse (nil: the selection evaluated some
	// message cleanly, or none at all).
	Refusal() error
	// Errors counts the messages the selection failed on (nil: none).
	Errors() *inspect.FilterErrors
	Describe() string
}

// Guard actions.
const (
	GuardPause = pipeline.GuardPause
	GuardAbort = pipeline.GuardAbort
)

// GuardEvent is a guard changing state (paused, cleared, tripped).
type GuardEvent = pipeline.GuardEvent

// Guards stop a run that is hurting the destination.
type Guards struct {
	// MaxReturns trips when more than this share (0..1] of the messages the
	// run moved came back to the source DLQ; 0 disables it.
	MaxReturns float64
	// MaxDestBacklog trips when a destination holds more than this many
	// visible messages; 0 disables it.
	MaxDestBacklog int
	// OnGuard is GuardPause (hold sending until the condition clears or
	// PauseTimeout passes, then abort) or GuardAbort (default).
	OnGuard      string
	PauseTimeout time.Duration
	// Every is the check interval (default 10s).
	Every time.Duration
	// MaxDestLag trips when a consumer group of the destination lags more
	// records than its Max (Options.Lag reads it; --max-dest-lag).
	MaxDestLag []DestLag
}

// DestLag is one destination-lag limit: Group may lag at most Max records.
type DestLag struct {
	Group string `json:"group"`
	Max   int64  `json:"max"`
}

// Snapshot is the progress of a run.
type Snapshot struct {
	Moved   int64
	Total   int64
	Skipped int64
	Failed  int64
	Rate    float64 // recent messages per second
	Target  float64 // current rate step; 0 = unlimited
	Elapsed time.Duration
	ETA     time.Duration
	Guard   string
}

// MessageEvent is what happened to one message.
type MessageEvent struct {
	MessageID   string
	Action      string // moved, resumed, skipped, failed, unknown, not-deleted
	Destination string
	DestID      string
	Class       string
	Reason      string
}

// Reporter receives progress; every field is optional. Calls come from
// several goroutines.
type Reporter struct {
	Progress func(Snapshot)
	Message  func(MessageEvent)
	Guard    func(GuardEvent)
}

// Router picks the destination of a message (the broker seam's Router).
type Router = broker.Router

// Skip reasons: why a message was not moved. They appear in plans, reports
// and NDJSON events; routers and publishers add their own (broker.Skip*).
const (
	SkipFiltered     = "not selected"        // --filter / --class did not match
	SkipFilterError  = "filter error"        // --filter or a rule raised an error on it
	SkipNoSource     = broker.SkipNoSource   // no DeadLetterQueueSourceArn and the DLQ has several (or no) sources
	SkipSourceGone   = broker.SkipSourceGone // the source queue named by the message does not exist
	SkipTooLarge     = broker.SkipTooLarge
	SkipTooManyAttrs = broker.SkipTooManyAttrs
	SkipLoop         = "max redrives reached" // already redriven --max-redrives times
	SkipReturned     = "returned during this run"
	SkipGroupBlocked = "behind an unselected message of its FIFO group"
	SkipMax          = "beyond --max"
	// SkipTransform: the --transform expression failed on it, or made
	// something the destination would refuse; it stays in the DLQ.
	SkipTransform = "transform failed"
)

// Keeper keeps the originals of the messages a transforming run repairs
// (an archive: package archive's Originals) before their copies are sent.
type Keeper interface {
	// Start names the run; prior is the number of parts earlier attempts
	// recorded; onPart records a verified part (the journal) before Keep
	// returns to its callers.
	Start(runID string, started time.Time, prior int, onPart func(part json.RawMessage, ids []string) error)
	// Keep returns once recs are in a verified part (and recorded).
	Keep(ctx context.Context, recs []*record.Record) error
	// Finish writes the manifest listing parts and returns its key.
	Finish(ctx context.Context, parts []json.RawMessage, complete bool, note string) (string, error)
	// Location is where the originals go.
	Location() string
	// RunDir is the run's key prefix there.
	RunDir() string
}

// TransformResult is what a transforming run did (-o json "transform").
type TransformResult struct {
	*transform.Summary
	// Originals: where the originals of the repaired messages are, to
	// restore them unchanged ('dlqctl restore MANIFEST').
	Originals *KeptOriginals `json:"originals,omitempty"`
}

// KeptOriginals locates the archive of a run's originals.
type KeptOriginals struct {
	Location string `json:"location"`
	Manifest string `json:"manifest,omitempty"`
	Parts    int    `json:"parts"`
	Records  int    `json:"records"`
}

// Options configure a redrive run.
type Options struct {
	// Publisher prepares and sends the copies.
	Publisher broker.Publisher
	// DestDepth reads a destination's depth for the backlog guard (nil:
	// MaxDestBacklog cannot be checked and is refused).
	DestDepth func(ctx context.Context, dest broker.Destination) (broker.Depth, error)
	// Lag reads the destination's consumer groups' lag for the
	// destination-lag guard (nil: Guards.MaxDestLag is refused).
	Lag broker.LagReader
	// SourceCaps are the source queue's capabilities (the zero value for
	// an archive): a queue that locks message groups keeps a group's order
	// behind an unselected message; a queue is shared by its readers,
	// an archive partitioned by message id (Share).
	SourceCaps broker.Capabilities
	// Journal is the run's journal; its Meta().ID is the run id.
	Journal *Journal
	Router  Router
	Select  Selector
	// Max moves at most this many messages (0 = all).
	Max int
	// MaxRedrives skips messages already redriven this many times (0 = no
	// limit).
	MaxRedrives int
	// Rate is the send rate in messages per second (0 = as fast as the
	// workers go). Ramp, when set, replaces it: the rate starts at Ramp[0]
	// and steps to the next value every RampEvery while guards hold.
	Rate      float64
	Ramp      []float64
	RampEvery time.Duration
	// Concurrency is the number of workers (default 8).
	Concurrency int
	// BatchEntries and BatchBytes bound what a worker reads and sends at
	// once (0: the pipeline's defaults, SQS's 10 entries and 1 MiB). A
	// broker without a batch API (RabbitMQ) sets one publisher-confirm
	// window: a worker waits for confirms once per batch.
	BatchEntries, BatchBytes int
	Guards                   Guards
	// WaitInFlight is how long the end of the run waits for messages in
	// flight elsewhere (a lost receive) to come back (0: do not wait).
	WaitInFlight time.Duration
	// Total is the expected number of messages (for the ETA; 0 unknown).
	Total int
	// Share is this process's part of a run N processes share (--rate-share
	// I/N). Rate and Ramp are this process's part already (Share.Rate). On
	// a queue the run ends when nothing is visible for it, leaving what its
	// peers hold to them (Result.InFlightAtPeers), and counts the returns of
	// its peers' moves it sees (the returns guard reads the whole redrive's
	// share); an archive is partitioned by message id (Share.Mine).
	Share Share
	// DedupKey, when set, replaces the run id in the FIFO deduplication ids
	// of the copies (DedupID(DedupKey, original id)): Execute sets it for a
	// shared run to the command's fingerprint, so every process of the run
	// gives a message the same id, and a FIFO destination drops a copy that
	// a peer sends again within 5 minutes (after a kill -9).
	DedupKey string
	Reporter Reporter
	// Transform, when set, repairs each selected message: the copy sent is
	// the record the expression returns (package transform), marked with
	// its provenance; a message it fails on stays where it is.
	Transform *transform.Transform
	// Originals keeps the originals of a transforming run (required with
	// Transform on a queue; nil for an archive, which is the originals).
	Originals Keeper
	// noBodyDigests: no canary watches the run (Execute), so the bodies of
	// lean records (broker.SourceOptions.Lean), which come without their
	// SHA-256, are not hashed for the journal (only a canary reads its
	// body digests: Journal.HasBody).
	noBodyDigests bool
}

// Result is the accounting of a run.
type Result struct {
	RunID string `json:"run_id"`
	// Received: distinct messages the run read from its source.
	Received int `json:"received"`
	// Moved: sent, journaled and removed from the source.
	Moved int `json:"moved"`
	// Resumed: removed without re-sending (an earlier attempt sent them).
	Resumed int `json:"resumed"`
	// SentNotDeleted: copies delivered but still in the source (the delete
	// failed, or the lease was lost: a delete with a superseded receipt
	// handle could succeed without deleting); a re-run (or `redrive
	// resume`) deletes them without sending again.
	SentNotDeleted int `json:"sent_not_deleted"`
	LeaseLost      int `json:"lease_lost,omitempty"`
	// Failed: the destination refused them; they stay in the source.
	Failed int `json:"failed"`
	// Unknown: the send call failed; the copies may or may not exist. They
	// stay in the source (a FIFO destination de-duplicates a re-send).
	Unknown int `json:"unknown_outcome"`
	// Returned: messages of this run seen back in the source.
	Returned int `json:"returned"`
	// ReturnedIDs are the DLQ message ids of those returns.
	ReturnedIDs []string       `json:"-"`
	Skipped     map[string]int `json:"skipped"`
	// Unmarked: moved without the marker attribute (10 attributes already).
	Unmarked      int            `json:"unmarked"`
	ByDestination map[string]int `json:"by_destination"`
	ByClass       map[string]int `json:"by_class"`
	// Complete: the source was drained and reconciled: nothing is left in
	// it that the run did not account for. Note says why not.
	Complete bool   `json:"complete"`
	Note     string `json:"note,omitempty"`
	// Blocked: FIFO messages that could not be read because their group is
	// locked behind an unselected (held) message; BlockedGroups names the
	// groups (up to 20).
	Blocked       int      `json:"blocked,omitempty"`
	BlockedGroups []string `json:"blocked_groups,omitempty"`
	// InFlightElsewhere: at most this many messages were taken by a
	// receive whose answer was lost and had not come back at the run's end.
	InFlightElsewhere int `json:"in_flight_elsewhere,omitempty"`
	// Counts: what the DLQ's approximate counts said at the end when they
	// disagreed with what the run saw (advisory: they trail by up to a
	// minute on AWS; never a failure).
	Counts *pipeline.CountsNote `json:"approximate_counts,omitempty"`
	// Share is "I/N" for a run shared by N processes (--rate-share).
	Share string `json:"rate_share,omitempty"`
	// InFlightAtPeers (a shared run): messages in flight that the run did
	// not hold when it ended and that none of its own receives can have
	// lost: its peers hold them, and their runs account for them.
	InFlightAtPeers int `json:"in_flight_at_peers,omitempty"`
	// LockedByPeers (a shared run, FIFO DLQ): visible messages whose groups
	// were locked behind messages its peers held; the peers move them.
	LockedByPeers int  `json:"locked_by_peers,omitempty"`
	StoppedAtMax  bool `json:"stopped_at_max,omitempty"`
	// MaybeTwice: messages whose copy may have been delivered twice — a
	// send whose answer was lost (a 5xx, a reset, a timeout) was retried
	// by the SDK, and a standard destination does not deduplicate. The
	// destination's consumer owner should check them; MaybeTwiceIDs lists
	// (up to 100) their DLQ message ids, and the journal marks their
	// records maybe_twice.
	MaybeTwice    int      `json:"maybe_twice,omitempty"`
	MaybeTwiceIDs []string `json:"maybe_twice_ids,omitempty"`
	// Transform: what a --transform run repaired, failed on and kept.
	Transform *TransformResult `json:"transform,omitempty"`
	// FilterErrors: messages the --filter or a rule raised an error on;
	// they were not selected and stay in the source (Skipped "filter
	// error").
	FilterErrors *inspect.FilterErrors `json:"filter_errors,omitempty"`
	// MaybeTwiceResent: of MaybeTwice, messages sent again because an
	// earlier attempt recorded its intent to send them and never the
	// outcome — it died between handing them to the broker and journaling
	// them (kill -9, OOM, a lost host), or the send's outcome was unknown.
	// Still in the DLQ, they were sent again: the destination may hold two
	// copies. At most the batches the dead process had in flight.
	MaybeTwiceResent int `json:"maybe_twice_resent,omitempty"`
	// MaybeTwiceEarlier: of MaybeTwice, messages an earlier attempt of
	// this run recorded as possibly delivered twice (a send the SDK retried
	// after a lost answer, or one it sent again after a kill) and that it
	// never reported: it was killed before its summary. This run names
	// them (stderr, MaybeTwiceMessages) so that nobody has to read the
	// journal to find them.
	MaybeTwiceEarlier int `json:"maybe_twice_earlier,omitempty"`
	// MaybeTwiceMessages names (up to 1000 of) the MaybeTwice messages with
	// their destination and cause; the journal has all of them.
	MaybeTwiceMessages []TwiceMessage `json:"maybe_twice_messages,omitempty"`
	// UnconfirmedGone: messages an earlier attempt was sending when it
	// died that were no longer in the DLQ when this run drained it: counted
	// as sent by that attempt (their copy most likely exists once; in a
	// shared run, --rate-share, a peer most likely received them after the
	// kill and moved them again: two copies). UnconfirmedGoneMessages names
	// (up to 1000 of) them.
	UnconfirmedGone         int            `json:"unconfirmed_gone,omitempty"`
	UnconfirmedGoneMessages []TwiceMessage `json:"unconfirmed_gone_messages,omitempty"`
	// AbortedResent: messages a killed run was publishing in a transaction
	// it never committed (broker.TxnPublisher), published again by this
	// run: the broker aborted that transaction, so read_committed
	// consumers of the destination never saw the first copies (not
	// counted in MaybeTwice).
	AbortedResent int `json:"aborted_resent,omitempty"`
	// KilledRuns names the killed runs whose messages this run published
	// again (MaybeTwiceResent, AbortedResent).
	KilledRuns []string `json:"killed_runs,omitempty"`
	// Duplicates: redeliveries of messages the run already held.
	Duplicates     int         `json:"duplicates,omitempty"`
	Interrupted    bool        `json:"interrupted"`
	Guard          *GuardEvent `json:"guard,omitempty"`
	Errors         []string    `json:"errors,omitempty"`
	ElapsedSeconds float64     `json:"elapsed_seconds"`
	Rate           float64     `json:"rate"`
	// Destinations are where copies went (for canary checks).
	Destinations []broker.Destination `json:"-"`
}

// Causes of a possibly doubled copy (TwiceMessage.Cause).
const (
	// CauseRetried: the send's answer was lost and the SDK sent it again.
	CauseRetried = "retried"
	// CauseResent: an earlier send's outcome was never recorded (the
	// process died mid-send); the message was still in the DLQ and was
	// sent again.
	CauseResent = "resent"
	// CauseGone: an earlier send's outcome was never recorded and the
	// message was gone from the DLQ: sent once, most likely.
	CauseGone = "gone"
)

// TwiceMessage is a message whose copy may have been delivered twice (or,
// in UnconfirmedGoneMessages, whose single send was never confirmed).
type TwiceMessage struct {
	// ID is the DLQ message id (the journal's "orig").
	ID string `json:"id"`
	// Orig is the "orig" of the copy's redrive marker — the key a consumer
	// deduplicates on: ID, or the first DLQ message id of a message
	// redriven before.
	Orig string `json:"orig"`
	// Destination is where the copy went (the queue, or exchange and
	// routing key, as reports name it).
	Destination string `json:"destination"`
	// Cause is CauseRetried, CauseResent or CauseGone.
	Cause string `json:"cause"`
}

// SkippedTotal is the number of skipped messages.
func (r *Result) SkippedTotal() int {
	n := 0
	for _, v := range r.Skipped {
		n += v
	}
	return n
}

// Err is the run's outcome as an error for the exit code: guard trip
// (verdict), interruption, or partial (something left to do, or a source
// that was not drained).
func (r *Result) Err() error {
	switch {
	case r.Guard != nil:
		return errs.Verdictf("guard %s tripped: %s (limit %s); the run stopped, nothing was lost", r.Guard.Name, r.Guard.Detail, fmtNum(r.Guard.Limit))
	case r.Interrupted:
		return errs.ErrInterrupted
	case r.Unknown > 0 || r.Failed > 0 || r.SentNotDeleted > 0:
		return errs.Partialf("%d message(s) not moved (%d refused by the destination, %d with unknown send outcome, %d sent but not yet deleted); they are still in the DLQ — re-run to retry: %s",
			r.Unknown+r.Failed+r.SentNotDeleted, r.Failed, r.Unknown, r.SentNotDeleted, firstOr(r.Errors, "see the report"))
	case r.Transform != nil && r.Transform.Failed > 0:
		e := r.Transform.Errors[0]
		return errs.Partialf("%d message(s) could not be transformed and were left where they are (%s: %d, first: message %s: %s); fix the expression or handle them apart, then run again",
			r.Transform.Failed, e.Reason, e.Count, e.FirstID, e.FirstError)
	case !r.Complete && !r.StoppedAtMax && r.Note != "":
		return errs.Partialf("%s", r.Note)
	}
	return nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

func fmtNum(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.2f", f)
}

func classOf(rec *record.Record) string {
	if rec.Class != "" {
		return rec.Class
	}
	return "unclassified"
}

// choice is decide's answer for one message: its destination and copy,
// or why it is skipped.
type choice struct {
	dest   broker.Destination
	out    broker.Outgoing
	reason string
	// copy is the record the copy was made from (the repaired one with a
	// transform) and sha its body's SHA-256.
	copy *record.Record
	sha  string
	// xfErr is the transform's failure (reason SkipTransform).
	xfErr error
}

// decide applies selection, loop guard, routing, the transform and the
// copy rules to one message: the shared logic of the plan and the mover.
func decide(ctx context.Context, it Item, pub broker.Publisher, copt broker.CopyOptions, sel Selector, router Router, maxRedrives int, xf *transform.Transform) (choice, error) {
	rec := it.Record
	if sel != nil {
		ok, err := sel.Select(rec, it.Parsed)
		switch {
		case err != nil && errs.Code(err) == errs.ExitUsage:
			return choice{}, err
		case err != nil:
			return choice{reason: SkipFilterError}, nil
		case !ok:
			return choice{reason: SkipFiltered}, nil
		}
	}
	if maxRedrives > 0 && rec.Redrive != nil && rec.Redrive.Count >= maxRedrives {
		return choice{reason: SkipLoop}, nil
	}
	dest, skip, err := router.Route(ctx, rec)
	if err != nil || skip != "" {
		return choice{reason: skip}, err
	}
	c := choice{dest: dest, copy: rec, sha: rec.BodySHA256}
	if xf != nil {
		res, err := xf.Apply(rec, it.Parsed, copt.RunID)
		if errs.Code(err) == errs.ExitUsage {
			return choice{}, err
		}
		if err != nil {
			return choice{reason: SkipTransform, xfErr: err}, nil
		}
		c.copy, c.sha = res.Record, res.Record.BodySHA256
	}
	c.out, c.reason = pub.Prepare(c.copy, dest, copt)
	return c, nil
}

// prepared is the payload of a message to deliver: its copy and the
// copy's body digest (what the journal records).
type prepared struct {
	out broker.Outgoing
	sha string
}

// Run moves messages from src according to opt and returns the accounting.
// It runs on the one message pipeline (package pipeline) with a sink that
// sends exact copies, journals them durably and only then lets the pipeline
// delete the originals. It stops receiving when ctx is cancelled, finishes
// batches already being sent, and leaves releasing to src.Close (the caller
// closes the source). The error is non-nil only for failures that are not
// reflected in the Result (see Result.Err for the run's verdict).
func Run(ctx context.Context, src Source, opt Options) (*Result, error) {
	if opt.Publisher == nil || opt.Journal == nil || opt.Router == nil {
		return nil, errors.New("redrive.Run: Publisher, Journal and Router are required")
	}
	if opt.Guards.MaxDestBacklog > 0 && opt.DestDepth == nil {
		return nil, errors.New("redrive.Run: MaxDestBacklog needs DestDepth")
	}
	if len(opt.Guards.MaxDestLag) > 0 && opt.Lag == nil {
		return nil, errors.New("redrive.Run: MaxDestLag needs Lag")
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 8
	}
	s := newMoveSink(opt, src)
	popt := pipeline.Options{
		Workers: opt.Concurrency, Rate: opt.Rate, Ramp: opt.Ramp, RampEvery: opt.RampEvery,
		Max: opt.Max, Total: opt.Total, WaitInFlight: opt.WaitInFlight,
		BatchEntries: opt.BatchEntries, BatchBytes: opt.BatchBytes,
		Guards: pipeline.Guards{OnGuard: opt.Guards.OnGuard, PauseTimeout: opt.Guards.PauseTimeout, Every: opt.Guards.Every},
		// A batch's originals are deleted before the worker sends its next
		// batch: at most one batch per worker is at the destination and
		// still in the DLQ, which bounds what a peer (or a re-run that is
		// not a resume) sends again after a kill -9.
		AckBeforeDeliver: true,
	}
	if _, ok := src.(broker.Intender); ok {
		// The source's own intent names every message a killed run may
		// have published without removing it (Kafka: the offsets of each
		// batch, before its produce): a batch's journal write and removal
		// (a commit) may run behind the next batch's delivery, as a bare
		// consume loop's commit does. The acker still removes a batch only
		// once its journal write is durable.
		popt.AckBehind = 1
		s.behind = true
	}
	if s.queueShare.Shared() {
		popt.Peers = s.queueShare.N
	}
	if opt.Guards.MaxReturns > 0 {
		popt.Guards.Check = append(popt.Guards.Check, s.returnsGuard)
	}
	if opt.Guards.MaxDestBacklog > 0 {
		popt.Guards.Check = append(popt.Guards.Check, s.backlogGuard)
	}
	if len(opt.Guards.MaxDestLag) > 0 {
		popt.Guards.Check = append(popt.Guards.Check, s.lagGuard)
	}
	rep := opt.Reporter
	if rep.Progress != nil {
		popt.Reporter.Progress = func(p pipeline.Snapshot) {
			rep.Progress(Snapshot{Moved: p.Delivered, Total: p.Total, Skipped: p.Skipped, Failed: p.Failed,
				Rate: p.Rate, Target: p.Target, Elapsed: p.Elapsed, ETA: p.ETA, Guard: p.Guard})
		}
	}
	if rep.Message != nil {
		popt.Reporter.Event = func(ev pipeline.Event) {
			me := MessageEvent{MessageID: ev.MessageID, Action: ev.Action, Destination: ev.Dest, DestID: ev.Detail, Class: ev.Class, Reason: ev.Reason}
			switch ev.Action {
			case "delivered":
				me.Action = "moved"
			case "not-acked":
				me.Action = "not-deleted"
			}
			rep.Message(me)
		}
	}
	popt.Reporter.Guard = rep.Guard
	pr, err := pipeline.Run(ctx, src, s, popt)
	if pr == nil {
		return nil, err
	}
	if err == nil && opt.Select != nil {
		// A run shorter than the selection's refusal threshold: it failed
		// on every message read (nothing was selected, nothing moved).
		err = opt.Select.Refusal()
	}
	if err == nil && opt.Transform != nil {
		// Likewise the transform: it failed on every message it was
		// applied to, so nothing was kept, sent or deleted.
		err = opt.Transform.Tally().Refusal()
	}
	r := s.result(pr, src)
	if opt.Transform != nil {
		r.Transform = &TransformResult{Summary: opt.Transform.Summary()}
		if opt.Originals != nil && errs.Code(err) != errs.ExitUsage {
			if ferr := s.finishOriginals(ctx, r); ferr != nil {
				r.Errors = append(r.Errors, ferr.Error())
				if err == nil {
					err = errs.Partial(ferr)
				}
			}
		}
	}
	return r, err
}

// moveSink sends exact copies to their destinations and journals them.
type moveSink struct {
	opt     Options
	src     Source
	runID   string
	created time.Time
	j       *Journal
	// groups: the source locks message groups (SQS FIFO): a message behind
	// an unselected one of its group is not moved ahead of it.
	groups bool
	// queueShare is the share of a queue source (peers split it by
	// receiving); partition that of a source nobody splits (an archive).
	queueShare, partition Share

	returned atomic.Int64
	// shas counts the body digests computed for lean records.
	shas atomic.Int64
	// lastDest is the key of the destination last noted in dests (a run's
	// messages go to one or a few): noting it again takes no lock.
	lastDest atomic.Pointer[string]

	mu        sync.Mutex
	dests     map[string]broker.Destination
	byDest    map[string]int
	byClass   map[string]int
	unmarked  map[string]bool // ids sent without the marker, until acked
	unmarkedN int
	// twice counts messages whose copy may have been delivered twice;
	// twiceIDs and twiceMsgs list the first of them (noteTwice); resent
	// counts those sent again after an unconfirmed intent.
	twice     int
	twiceIDs  []string
	twiceMsgs []TwiceMessage
	resent    int
	// earlier counts the MaybeTwice an earlier attempt recorded
	// (noteEarlierTwice).
	earlier int
	// aborted counts AbortedResent; killed lists KilledRuns.
	aborted int
	killed  []string
	// prior are the intents earlier attempts left unconfirmed (id ->
	// destination); seenPrior those of them this run received.
	prior         map[string]string
	seenPrior     map[string]bool
	returnedIDs   []string
	skippedGroups map[string]bool // FIFO groups with a held, unselected message
	// last is each worker's previous journal write: the worker waits for
	// it before its next send, so at most one sent batch per worker is not
	// yet durable in the journal (the bound on duplicates after kill -9);
	// with behind (a source keeping its own intent) it does not wait, and
	// the engine's AckBehind bounds the batches not yet durable instead.
	last   []*journalWrite
	behind bool
}

// finishOriginals writes the manifest of the run's originals (every part
// its journal recorded, earlier attempts' too) once the run ends.
func (s *moveSink) finishOriginals(ctx context.Context, r *Result) error {
	parts := s.j.KeptParts()
	ko := &KeptOriginals{Location: s.opt.Originals.Location(), Parts: len(parts)}
	r.Transform.Originals = ko
	for _, raw := range parts {
		var p struct {
			Records int `json:"records"`
		}
		_ = json.Unmarshal(raw, &p)
		ko.Records += p.Records
	}
	if len(parts) == 0 {
		return nil
	}
	note := ""
	if !r.Complete {
		note = "the redrive did not finish; a re-run of the same command resumes it and rewrites this manifest"
	}
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	key, err := s.opt.Originals.Finish(mctx, parts, r.Complete, note)
	if err != nil {
		return fmt.Errorf("the originals are in verified parts under %s/%s but their manifest could not be written: %v; re-run the command to write it", ko.Location, s.opt.Originals.RunDir(), err)
	}
	ko.Manifest = manifestURI(ko.Location, key)
	return nil
}

// manifestURI is s3://BUCKET/KEY for a key in the bucket of location.
func manifestURI(location, key string) string {
	rest := strings.TrimPrefix(location, "s3://")
	bucket, _, _ := strings.Cut(rest, "/")
	return "s3://" + bucket + "/" + key
}

func newMoveSink(opt Options, src Source) *moveSink {
	s := &moveSink{opt: opt, src: src, j: opt.Journal, runID: opt.Journal.Meta().ID,
		dests: map[string]broker.Destination{}, byDest: map[string]int{}, byClass: map[string]int{},
		unmarked: map[string]bool{}, skippedGroups: map[string]bool{},
		last:  make([]*journalWrite, opt.Concurrency),
		prior: opt.Journal.UnconfirmedAtOpen(), seenPrior: map[string]bool{}}
	s.groups = opt.SourceCaps.Ordering == broker.OrderGroupLock
	s.created = opt.Journal.Meta().Created
	s.noteEarlierTwice()
	if opt.Originals != nil {
		opt.Originals.Start(s.runID, s.created, len(opt.Journal.KeptParts()), opt.Journal.Kept)
	}
	if opt.SourceCaps.Sharing != 0 {
		// A queue: its readers split it by reading it.
		s.queueShare = opt.Share
	} else {
		// An archive: the processes split it by message id.
		s.partition = opt.Share
	}
	return s
}

// Prepare decides one message: already sent (delete only), returned,
// filtered, looping, or a copy for its destination.
func (s *moveSink) Prepare(ctx context.Context, it Item) (pipeline.Decision, error) {
	rec := it.Record
	// A message the journal knows as sent (by this run, or by an earlier
	// attempt of it) is deleted without sending it again.
	if _, ok := s.j.WasSent(rec.MessageID); ok {
		return pipeline.Decision{Verb: pipeline.AckOnly}, nil
	}
	if _, ok := s.prior[rec.MessageID]; ok {
		// An earlier attempt was sending it when it died: still here, so
		// it is not "gone" (Deliver reports it if it is sent again).
		s.mu.Lock()
		s.seenPrior[rec.MessageID] = true
		s.mu.Unlock()
	}
	if !s.partition.Mine(rec) {
		return pipeline.Decision{Verb: pipeline.Skip, Reason: SkipOtherShare}, nil
	}
	if returnedDuring(rec, s.runID, s.created, s.queueShare) {
		s.returned.Add(1)
		s.mu.Lock()
		if len(s.returnedIDs) < 1000 {
			s.returnedIDs = append(s.returnedIDs, rec.MessageID)
		}
		s.mu.Unlock()
		return pipeline.Decision{Verb: pipeline.Skip, Reason: SkipReturned}, nil // held so it is not received again
	}
	group := rec.OrderingKey
	if s.groups && group != "" {
		s.mu.Lock()
		blocked := s.skippedGroups[group]
		s.mu.Unlock()
		if blocked {
			// Keep the group's order: a message behind an unselected one
			// of its group is not moved ahead of it.
			return pipeline.Decision{Verb: pipeline.Skip, Reason: SkipGroupBlocked}, nil
		}
	}
	copt := broker.CopyOptions{RunID: s.runID, DedupKey: s.opt.DedupKey, Now: time.Now()}
	c, err := decide(ctx, it, s.opt.Publisher, copt, s.opt.Select, s.opt.Router, s.opt.MaxRedrives, s.opt.Transform)
	dest, cp, reason := c.dest, c.out, c.reason
	if errs.Code(err) == errs.ExitUsage {
		return pipeline.Decision{}, err // the selection's refusal: the engine releases the message and stops
	}
	if err != nil {
		return pipeline.Decision{}, fmt.Errorf("routing %s: %w", rec.MessageID, err)
	}
	if reason != "" {
		if s.groups && group != "" {
			s.mu.Lock()
			s.skippedGroups[group] = true
			s.mu.Unlock()
		}
		return pipeline.Decision{Verb: pipeline.Skip, Reason: reason}, nil
	}
	if c.sha == "" && !s.opt.noBodyDigests && s.shas.Add(1) <= maxBodyKeys {
		// A lean record (broker.SourceOptions.Lean) leaves the digest to
		// the reader: the journal keeps the first maxBodyKeys bodies' (the
		// canary's recognition of copies that lost their marker).
		c.sha = record.SHA256Hex(c.copy.Body)
	}
	if k := s.lastDest.Load(); k == nil || *k != dest.Key {
		s.mu.Lock()
		if _, ok := s.dests[dest.Key]; !ok {
			s.dests[dest.Key] = dest
		}
		s.mu.Unlock()
		key := dest.Key
		s.lastDest.Store(&key)
	}
	return pipeline.Decision{Verb: pipeline.Deliver, Key: dest.Key, Payload: prepared{out: cp, sha: c.sha}, Size: cp.Size, Label: dest.Label}, nil
}

// journalWrite is one batch's journal write (fsync) in progress; it is the
// batch's pipeline.Commit.
type journalWrite struct {
	done chan struct{}
	err  error
}

func (w *journalWrite) Done() <-chan struct{} { return w.done }
func (w *journalWrite) Err() error            { return w.err }

// Deliver sends one batch to its destination and starts journaling the
// accepted copies; the pipeline deletes the originals once the journal
// write is durable.
func (s *moveSink) Deliver(ctx context.Context, w int, key string, items []Item, payloads []any) ([]pipeline.Outcome, pipeline.Commit) {
	outs := make([]pipeline.Outcome, len(items))
	if prev := s.last[w]; prev != nil {
		if s.behind {
			// The previous batch's journal write may still be under way
			// (the engine bounds what is behind: AckBehind); a failed one
			// stops the run here as below.
			select {
			case <-prev.done:
			default:
				prev = &journalWrite{done: prev.done}
			}
		} else {
			<-prev.done
		}
		s.last[w] = nil
		if prev.err != nil {
			for i := range outs {
				outs[i].Err = pipeline.Undelivered(prev.err)
			}
			return outs, nil
		}
	}
	s.mu.Lock()
	dest := s.dests[key]
	s.mu.Unlock()
	batch := make([]broker.Outgoing, len(items))
	shas := make([]string, len(items))
	for i, p := range payloads {
		pp := p.(prepared)
		batch[i], shas[i] = pp.out, pp.sha
	}
	if s.opt.Originals != nil {
		// A transforming run: the originals are in a verified archive part,
		// recorded in the journal, before any copy is sent (an original
		// kept by an earlier attempt is not archived again).
		var keep []*record.Record
		for _, it := range items {
			if !s.j.WasKept(it.Record.MessageID) {
				keep = append(keep, it.Record)
			}
		}
		if err := s.opt.Originals.Keep(ctx, keep); err != nil {
			for i := range outs {
				outs[i].Err = pipeline.Undelivered(err)
			}
			return outs, nil
		}
	}
	// Write-ahead intent: the ids about to be sent are on disk before the
	// broker sees them, so a process that dies after sending and before
	// journaling leaves a trace: a resume reports those messages as
	// possibly delivered twice. An id whose earlier intent is still
	// unconfirmed may have a copy already (earlierDest).
	ids := make([]string, len(items))
	earlierDest := make([]string, len(items))
	earlier := make([]bool, len(items))
	for i, it := range items {
		ids[i] = it.Record.MessageID
	}
	s.j.unconfirmedAll(ids, earlierDest, earlier)
	// A source that keeps its own write-ahead intent (broker.Intender:
	// Kafka's offset ranges, written before the produce) is the record of
	// the batch; the journal's intent line is for the others, and for a
	// transforming run, whose kept lines that intent's fsync writes.
	intender, _ := s.src.(broker.Intender)
	recorded := intender != nil && intender.Intend(s.runID, items)
	if !recorded || s.opt.Originals != nil {
		if err := s.j.Intend(dest.Label, ids); err != nil {
			for i := range outs {
				outs[i].Err = pipeline.Undelivered(err)
			}
			return outs, nil
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var results []broker.Result
	var callErr error
	txn, inTxn := s.opt.Publisher.(broker.TxnPublisher)
	if inTxn {
		// The copies and the removal of their originals are one
		// transaction: the source's Ack then confirms it.
		results, callErr = txn.PublishRemoving(bctx, dest, batch, items)
	} else {
		results, callErr = s.opt.Publisher.Publish(bctx, dest, batch)
	}
	recs := make([]SentRecord, 0, len(items))
	var unmarked, unsent []string
	for i, it := range items {
		var r broker.Result
		if i < len(results) {
			r = results[i]
		} else {
			r.Err = callErr
		}
		switch {
		case r.Err == nil && r.ID != "":
			// Published again after a killed attempt: its own intent in
			// the journal (a resumed run), or the source's record of it,
			// which also says whether that attempt published in a
			// transaction (then aborted, as it never committed).
			killedRun, aborted := s.runID, false
			if intender != nil {
				if run, ab, ok := intender.PublishedBefore(it); ok {
					if !earlier[i] {
						earlier[i], earlierDest[i] = true, dest.Label
					}
					killedRun, aborted = run, ab
				}
			}
			if earlier[i] && aborted {
				// The earlier copy was in a transaction the broker aborted:
				// read_committed consumers see this copy only.
				s.noteAborted(killedRun)
				earlier[i] = false
				recs = append(recs, SentRecord{Orig: it.Record.MessageID, Dest: dest.Key, DestID: r.ID, SHA: shas[i], Resent: true})
			} else {
				recs = append(recs, SentRecord{Orig: it.Record.MessageID, Dest: dest.Key, DestID: r.ID, SHA: shas[i],
					MaybeTwice: r.MaybeTwice || earlier[i], Resent: earlier[i]})
			}
			switch {
			case earlier[i]:
				s.noteKilled(killedRun)
				s.noteTwice(TwiceMessage{ID: it.Record.MessageID, Orig: markerOrig(it.Record), Destination: earlierDest[i], Cause: CauseResent})
			case r.MaybeTwice:
				s.noteTwice(TwiceMessage{ID: it.Record.MessageID, Orig: markerOrig(it.Record), Destination: dest.Label, Cause: CauseRetried})
			}
			outs[i].Detail = r.ID
			if !batch[i].Marked {
				unmarked = append(unmarked, it.Record.MessageID)
			}
		case errors.Is(r.Err, broker.ErrRejected):
			if r.MaybeTwice {
				// Refused in the end, but an earlier attempt whose answer
				// was lost may have delivered it: a copy may exist while
				// the message stays in the DLQ.
				s.noteTwice(TwiceMessage{ID: it.Record.MessageID, Orig: markerOrig(it.Record), Destination: dest.Label, Cause: CauseRetried})
			} else if !earlier[i] {
				// No copy exists: this intent is settled. (One left by an
				// earlier attempt stays open: that attempt's copy may.)
				unsent = append(unsent, it.Record.MessageID)
			}
			outs[i].Err = pipeline.Refused(r.Err)
		case r.Err != nil:
			outs[i].Err = r.Err
		default:
			outs[i].Err = errors.New("the destination returned no result for this message")
		}
	}
	// A send whose outcome is unknown (the call failed) keeps its intent
	// open: the message stays in the DLQ, and the run that sends it again
	// reports it as possibly delivered twice.
	s.j.Unsent(unsent)
	if len(recs) == 0 {
		return outs, nil
	}
	if len(unmarked) > 0 {
		s.mu.Lock()
		for _, id := range unmarked {
			s.unmarked[id] = true
		}
		s.mu.Unlock()
	}
	jw := &journalWrite{done: make(chan struct{})}
	go func() {
		jw.err = s.j.Sent(recs)
		close(jw.done)
	}()
	s.last[w] = jw
	return outs, jw
}

// markerOrig is the "orig" of the marker a copy of rec carries: the first
// DLQ message id of a message redriven before, else its own id.
func markerOrig(rec *record.Record) string {
	if rec.Redrive != nil && rec.Redrive.OriginalID != "" {
		return rec.Redrive.OriginalID
	}
	return rec.MessageID
}

// noteKilled names a killed run whose messages this run published again.
func (s *moveSink) noteKilled(run string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.killed, run) {
		s.killed = append(s.killed, run)
	}
}

// noteAborted counts a message published again after the killed run's
// transaction that carried its first copy was aborted.
func (s *moveSink) noteAborted(run string) {
	s.noteKilled(run)
	s.mu.Lock()
	s.aborted++
	s.mu.Unlock()
}

// noteTwice counts a message whose copy may have been delivered twice.
func (s *moveSink) noteTwice(m TwiceMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.twice++
	if m.Cause == CauseResent {
		s.resent++
	}
	if len(s.twiceIDs) < maxTwiceIDs {
		s.twiceIDs = append(s.twiceIDs, m.ID)
	}
	if len(s.twiceMsgs) < maxTwiceMessages {
		s.twiceMsgs = append(s.twiceMsgs, m)
	}
}

// noteEarlierTwice names the copies an earlier attempt of this run
// recorded as possibly delivered twice (a send the SDK retried after a
// lost answer, or a message it sent again after a kill): that attempt was
// killed before its report, so without this nobody would name them. The
// journal keeps the first maxTwiceRecords, with the destination's key
// (not its report label); the marker's orig is taken as the message id.
// They are not counted among this run's resends.
func (s *moveSink) noteEarlierTwice() {
	_, recs := s.j.MaybeTwice()
	if len(recs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		cause := CauseRetried
		if r.Resent {
			cause = CauseResent
		}
		s.twice++
		s.earlier++
		if len(s.twiceIDs) < maxTwiceIDs {
			s.twiceIDs = append(s.twiceIDs, r.Orig)
		}
		if len(s.twiceMsgs) < maxTwiceMessages {
			s.twiceMsgs = append(s.twiceMsgs, TwiceMessage{ID: r.Orig, Orig: r.Orig, Destination: r.Dest, Cause: cause})
		}
	}
}

// maxTwiceIDs bounds the ids listed in Result.MaybeTwiceIDs;
// maxTwiceMessages those in MaybeTwiceMessages and UnconfirmedGoneMessages
// (a kill leaves at most the batches in flight: concurrency × batch).
const (
	maxTwiceIDs      = 100
	maxTwiceMessages = 1000
)

// settleGone settles, once the run drained its source, the intents earlier
// attempts left unconfirmed whose messages it never received: they were
// gone from the DLQ, so they count as sent by the attempt that died.
func (s *moveSink) settleGone(r *Result) {
	var gone []string
	for id := range s.prior {
		if !s.seenPrior[id] {
			if _, sent := s.j.WasSent(id); !sent {
				gone = append(gone, id)
			}
		}
	}
	if len(gone) == 0 {
		return
	}
	sort.Strings(gone)
	s.j.Gone(gone)
	r.UnconfirmedGone = len(gone)
	for _, id := range gone[:min(len(gone), maxTwiceMessages)] {
		r.UnconfirmedGoneMessages = append(r.UnconfirmedGoneMessages, TwiceMessage{ID: id, Orig: id, Destination: s.prior[id], Cause: CauseGone})
	}
}

// Flush has nothing buffered: every batch is sent when it is delivered.
func (s *moveSink) Flush(context.Context) (bool, error) { return false, nil }

// Acked records deletions in the journal and counts the moves.
func (s *moveSink) Acked(items []Item, labels []string) {
	ids := make([]string, len(items))
	s.mu.Lock()
	// A batch's messages mostly share their destination and class: each
	// count is added once a run of equal ones.
	var dest, class string
	nDest, nClass := 0, 0
	for i, it := range items {
		ids[i] = it.Record.MessageID
		if labels == nil {
			continue
		}
		if d := labels[i]; nDest == 0 || d != dest {
			if nDest > 0 {
				s.byDest[dest] += nDest
			}
			dest, nDest = d, 0
		}
		nDest++
		if c := classOf(it.Record); nClass == 0 || c != class {
			if nClass > 0 {
				s.byClass[class] += nClass
			}
			class, nClass = c, 0
		}
		nClass++
		if len(s.unmarked) > 0 && s.unmarked[ids[i]] {
			delete(s.unmarked, ids[i])
			s.unmarkedN++
		}
	}
	if nDest > 0 {
		s.byDest[dest] += nDest
	}
	if nClass > 0 {
		s.byClass[class] += nClass
	}
	s.mu.Unlock()
	s.j.Deleted(ids)
}

func (s *moveSink) returnsGuard(_ context.Context, snap pipeline.Snapshot, _ bool) *pipeline.GuardEvent {
	moved, ret := snap.Delivered, s.returned.Load()
	if moved <= 0 || ret <= 0 {
		return nil
	}
	share := float64(ret) / float64(moved)
	if share <= s.opt.Guards.MaxReturns {
		return nil
	}
	detail := fmt.Sprintf("%d of %d moved messages came back to %s", ret, moved, s.src.Name())
	if s.queueShare.Shared() {
		detail = fmt.Sprintf("this process (%s) saw %d messages of the shared redrive come back to %s and moved %d itself", s.queueShare, ret, s.src.Name(), moved)
	}
	return &pipeline.GuardEvent{Name: "max-returns", Value: share, Limit: s.opt.Guards.MaxReturns, Detail: detail}
}

func (s *moveSink) backlogGuard(ctx context.Context, _ pipeline.Snapshot, final bool) *pipeline.GuardEvent {
	if final {
		return nil
	}
	s.mu.Lock()
	dests := make([]broker.Destination, 0, len(s.dests))
	for _, d := range s.dests {
		dests = append(dests, d)
	}
	s.mu.Unlock()
	for _, d := range dests {
		dp, err := s.opt.DestDepth(ctx, d)
		if err != nil {
			continue // a failed check is retried at the next tick
		}
		if v := int(dp.Ready); v > s.opt.Guards.MaxDestBacklog {
			return &pipeline.GuardEvent{Name: "max-dest-backlog", Value: float64(v), Limit: float64(s.opt.Guards.MaxDestBacklog),
				Detail: fmt.Sprintf("%s has %d visible messages", d.Label, v)}
		}
	}
	return nil
}

// lagGuard trips when a destination consumer group lags more than its
// limit (a failed read is retried at the next tick).
func (s *moveSink) lagGuard(ctx context.Context, _ pipeline.Snapshot, final bool) *pipeline.GuardEvent {
	if final {
		return nil
	}
	for _, g := range s.opt.Guards.MaxDestLag {
		lag, err := s.opt.Lag.GroupLag(ctx, g.Group)
		if err != nil {
			continue
		}
		if lag > g.Max {
			return &pipeline.GuardEvent{Name: "max-dest-lag " + g.Group, Value: float64(lag), Limit: float64(g.Max),
				Detail: fmt.Sprintf("consumer group %s lags %d records (over --max-dest-lag %d)", g.Group, lag, g.Max)}
		}
	}
	return nil
}

func (s *moveSink) result(pr *pipeline.Result, src Source) *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &Result{
		RunID: s.runID, Received: pr.Received, Moved: pr.Delivered, Resumed: pr.Resumed,
		SentNotDeleted: pr.NotAcked, LeaseLost: pr.LeaseLost, Failed: pr.Refused, Unknown: pr.Unknown,
		Returned: int(s.returned.Load()), ReturnedIDs: s.returnedIDs, Skipped: pr.Skipped,
		Unmarked: s.unmarkedN, ByDestination: s.byDest, ByClass: s.byClass,
		Complete: pr.Complete, Note: pr.Note, Blocked: pr.Blocked, InFlightElsewhere: pr.InFlightElsewhere,
		Share: s.opt.Share.String(), InFlightAtPeers: pr.InFlightAtPeers, LockedByPeers: pr.LockedByPeers,
		StoppedAtMax: pr.StoppedAtMax, Counts: pr.Counts,
		MaybeTwice: s.twice, MaybeTwiceIDs: append([]string(nil), s.twiceIDs...),
		MaybeTwiceResent: s.resent, MaybeTwiceEarlier: s.earlier, MaybeTwiceMessages: append([]TwiceMessage(nil), s.twiceMsgs...),
		AbortedResent: s.aborted, KilledRuns: append([]string(nil), s.killed...),
		Interrupted: pr.Interrupted, Guard: pr.Guard, Errors: pr.Errors,
		ElapsedSeconds: pr.ElapsedSeconds, Rate: pr.Rate,
	}
	if s.opt.Select != nil {
		r.FilterErrors = s.opt.Select.Errors()
	}
	if qs, ok := src.(interface{ Duplicates() int }); ok {
		r.Duplicates += qs.Duplicates()
	}
	if pr.Complete && !pr.StoppedAtMax {
		s.settleGone(r)
	}
	if r.Blocked > 0 && len(s.skippedGroups) > 0 {
		for g := range s.skippedGroups {
			r.BlockedGroups = append(r.BlockedGroups, g)
		}
		sort.Strings(r.BlockedGroups)
		if len(r.BlockedGroups) > 20 {
			r.BlockedGroups = r.BlockedGroups[:20]
		}
		r.Note = fmt.Sprintf("%d message(s) could not be read: they wait behind unselected messages of FIFO group(s) %s, which this run left in the DLQ; select whole groups, or archive the DLQ with --delete first and restore the groups you want ('dlqctl help fifo-redrive')", r.Blocked, strings.Join(r.BlockedGroups, ", "))
	}
	for _, d := range s.dests {
		r.Destinations = append(r.Destinations, d)
	}
	sort.Slice(r.Destinations, func(a, b int) bool { return r.Destinations[a].Label < r.Destinations[b].Label })
	return r
}
