package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/time/rate"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// kafkaReplayNote is said on every Kafka redrive: a replay appends.
const kafkaReplayNote = "replayed records are appended: they land after newer records with the same key, so consumers of the destination see them out of their original order"

// KafkaRedriveReport is the result of a Kafka redrive (or its dry run).
type KafkaRedriveReport struct {
	Type      string         `json:"type,omitempty"` // "summary" in NDJSON
	Run       string         `json:"run"`
	Topic     string         `json:"topic"`
	Group     string         `json:"group"`
	To        string         `json:"to"`
	Selection string         `json:"selection"`
	Status    string         `json:"status"`
	DryRun    bool           `json:"dry_run,omitempty"`
	Read      int            `json:"read"`
	Moved     int            `json:"moved"`
	Left      int            `json:"left"` // pending: not selected, skipped, past --max or the canary
	Failed    int            `json:"failed"`
	Skipped   map[string]int `json:"skipped,omitempty"`
	ByDest    map[string]int `json:"by_destination,omitempty"`
	// PossibleDuplicates bounds the copies a later run may send again
	// (handled records the commit could not record).
	PossibleDuplicates int              `json:"possible_duplicates,omitempty"`
	Pending            int64            `json:"pending_after"`
	Canary             *KafkaCanary     `json:"canary,omitempty"`
	Guard              string           `json:"guard,omitempty"`
	Estimate           string           `json:"estimate,omitempty"`
	Note               string           `json:"note"`
	Stats              kafka.DrainStats `json:"stats"`
}

// KafkaCanary is a canary's verdict.
type KafkaCanary struct {
	Moved    int    `json:"moved"`
	Returned int    `json:"returned"`
	Watched  string `json:"watched"`
	Verdict  string `json:"verdict"`
}

var errKafkaGuard = errors.New("guard tripped")

// kafkaRedriveRun is redrive for a kafka:// dead-letter topic. The group's
// committed offsets are the journal: running the same command again
// resumes (there is no run journal to name).
func kafkaRedriveRun(ctx context.Context, opts *RedriveOptions) error {
	f := opts.F
	caps := kafka.Capabilities()
	if err := broker.Refuse(caps,
		broker.Requirement{Flag: "--engine native", Needs: func(c broker.Capabilities) bool { return c.NativeMove || opts.Engine != "native" },
			Why: "{broker} has no server-side move", Instead: "use --engine dlqctl (the default)"},
		broker.Requirement{Flag: "--visibility", Needs: func(c broker.Capabilities) bool {
			return c.Hold == broker.HoldLease || opts.Visibility == 30*time.Second
		},
			Why: "{broker} holds {hold}", Instead: "drop --visibility"},
		broker.Requirement{Flag: "--max-dest-backlog", Needs: func(broker.Capabilities) bool { return opts.MaxDestBacklog == 0 },
			Why: "a topic has no backlog of its own, its consumer groups have lag", Instead: "use --max-dest-lag GROUP:N"},
		broker.Requirement{Flag: "--max-returns", Needs: func(broker.Capabilities) bool { return opts.MaxReturns == 0 },
			Why: "returns are watched per canary on {broker}", Instead: "use --canary N, which watches the dead-letter topic for the copies coming back"},
	); err != nil {
		return err
	}
	if opts.Kafka.ExactlyOnce {
		return errs.BadInputf("--exactly-once is not built into this dlqctl yet; without it a redrive killed mid-batch re-sends at most that batch, and the summary counts possible duplicates")
	}
	if len(opts.Selection.Logs.groups()) > 0 {
		return errs.BadInputf("--logs reads CloudWatch Logs of an SQS consumer; a Kafka dead letter carries its failure in its headers: drop --logs")
	}
	guards, err := parseDestLag(opts.Kafka.MaxDestLag)
	if err != nil {
		return err
	}
	ep, err := f.KafkaEndpoint(ctx, opts.DLQ)
	if err != nil {
		return err
	}
	defer ep.Close()
	plan, err := ep.Plan(ctx)
	if err != nil {
		return kafkaErr(err)
	}
	sel, err := opts.Selection.Selector()
	if err != nil {
		return err
	}
	// Destination: the original topic from each record's headers, or one topic.
	destEP := ep
	to := ""
	if !strings.EqualFold(opts.To, "source") {
		if !isKafkaRef(opts.To) {
			return errs.BadInputf("--to %s is not a Kafka topic; a Kafka dead-letter topic is redriven to --to source or --to kafka://HOST:PORT/TOPIC", opts.To)
		}
		if destEP, err = f.KafkaEndpoint(ctx, opts.To); err != nil {
			return err
		}
		defer destEP.Close()
		if _, err := destEP.Target(ctx); err != nil {
			return kafkaErr(err)
		}
		if destEP.ID() == ep.ID() {
			return errs.BadInputf("--to %s is the dead-letter topic itself; pass --to source or another topic", opts.To)
		}
		to = destEP.Name()
	}
	destAdm, err := destEP.Admin()
	if err != nil {
		return kafkaErr(err)
	}
	router := kafka.NewRouter(destAdm, to)
	runID := kafkaRunID()
	rep := &KafkaRedriveReport{Run: runID, Topic: ep.String(), Group: ep.Group(), To: opts.To, Selection: sel.Describe(),
		Skipped: map[string]int{}, ByDest: map[string]int{}, Note: kafkaReplayNote}
	limit := opts.CanaryFlags.limit(opts.Max)

	var mu sync.Mutex
	decide := func(m *kafka.Message) (kafka.Decision, string) {
		rec := kafka.ToRecord(m, ep.ID(), time.Now())
		parsed := inspect.Decode(rec)
		if !sel.Match(rec, parsed) {
			return kafka.Leave, "not selected"
		}
		if mk := kafka.ReplayMarker(m.Headers); mk != nil && opts.MaxRedrives > 0 && mk.Count >= opts.MaxRedrives {
			return kafka.Leave, fmt.Sprintf("redriven %d times before (--max-redrives)", mk.Count)
		}
		t, err := router.Route(ctx, m)
		if err != nil {
			switch {
			case errors.Is(err, kafka.ErrNoOrigin):
				return kafka.Leave, "no original-topic header (use --to)"
			case strings.Contains(err.Error(), "does not exist"):
				return kafka.Leave, "destination topic missing"
			}
			return kafka.Leave, "route: " + err.Error()
		}
		mu.Lock()
		rep.ByDest[t]++
		mu.Unlock()
		return kafka.Handle, ""
	}

	if opts.DryRun {
		return kafkaRedriveDryRun(ctx, f, opts, ep, plan, decide, rep, limit)
	}

	what := fmt.Sprintf("%d pending record(s) of %s (group %s) to %s", plan.Pending(), ep, ep.Group(), describeTo(opts.To))
	if err := confirm(f, "Redrive "+limitedWhat(what, opts.Canary, opts.Max)+"?",
		"redrive changes the group's committed offsets and produces to the destination; pass --yes to run it from a script (or --dry-run first)",
		"redrive cancelled; nothing was changed"); err != nil {
		return err
	}
	f.IO.Infof("note: %s", kafkaReplayNote)

	prod, err := kafka.OpenProducer(destEP.Address(), destEP.Conn(), kafka.ProducerOptions{})
	if err != nil {
		return kafkaErr(err)
	}
	defer prod.Close()
	sink := kafka.ReplaySink(prod, router, runID)

	pacer := newKafkaPacer(opts, guards, destAdm)
	batch := 500
	if r := pacer.minRate(); r > 0 {
		batch = max(1, min(500, int(r)))
	}
	format, _ := f.Format()
	nd := output.NewNDJSON(f.IO.Out)
	prog := output.NewProgress(f.IO, format)
	dlqEnd := map[int32]int64{}
	for _, pr := range plan.Partitions {
		dlqEnd[pr.Partition] = pr.End
	}
	st, runErr := kafka.Drain(ctx, kafka.DrainOptions{
		Source: ep.Address(), Conn: ep.Conn(), Group: ep.Group(), Batch: batch, Limit: limit,
		Select: func(m *kafka.Message) kafka.Decision {
			d, why := decide(m)
			if d == kafka.Leave {
				mu.Lock()
				rep.Skipped[why]++
				mu.Unlock()
			}
			return d
		},
		Sink: sink,
		Wait: pacer.wait,
		OnBatch: func(s kafka.DrainStats) {
			prog.Update(output.Stats{Op: "redrive", Done: int64(s.Handled), Total: plan.Pending()}, false)
			if format == output.NDJSON {
				_ = nd.Write(map[string]any{"type": "progress", "read": s.Read, "moved": s.Handled, "left": s.Left, "failed": s.Failed})
			}
		},
		OnRecord: func(m *kafka.Message, outcome string, err error) {
			if outcome == kafka.OutcomeFailed {
				f.IO.Warnf("%s: not replayed: %v", m.ID(), err)
			}
		},
	})
	prog.Done()
	rep.Stats = st
	rep.Read, rep.Moved, rep.Failed = st.Read, st.Handled, st.Failed
	rep.Left = st.Left
	delete(rep.Skipped, "not selected")
	if n := st.Left - sumSkipped(rep.Skipped); n > 0 && limit > 0 && st.Handled >= limit {
		rep.Skipped[fmt.Sprintf("past --max/--canary %d", limit)] += n
	}
	rep.PossibleDuplicates = st.JournalFull + st.Unacked + st.Uncommitted
	if p, err := ep.Plan(context.WithoutCancel(ctx)); err == nil {
		rep.Pending = p.Pending()
	}
	switch {
	case errors.Is(runErr, errKafkaGuard):
		rep.Status, rep.Guard = "guard", pacer.tripped
	case runErr != nil && ctx.Err() != nil:
		rep.Status = "interrupted"
	case runErr != nil:
		rep.Status = "failed"
	case st.Failed > 0:
		rep.Status = "partial"
	default:
		rep.Status = "completed"
	}
	if runErr == nil && opts.Canary > 0 {
		rep.Canary = kafkaWatchCanary(ctx, f, opts, ep, dlqEnd, runID, st.Handled)
		if rep.Canary.Verdict != "pass" {
			rep.Status = "canary-failed"
		}
	}
	if err := printKafkaRedrive(f, rep); err != nil {
		return err
	}
	switch rep.Status {
	case "guard":
		return errs.Verdictf("guard tripped: %s; the %d records moved are committed, run the same command again to continue", rep.Guard, rep.Moved)
	case "canary-failed":
		return errs.Verdictf("canary failed: %d of %d replayed records came back to %s within %s", rep.Canary.Returned, rep.Canary.Moved, ep.Name(), rep.Canary.Watched)
	case "interrupted":
		return runErr
	case "failed":
		return kafkaErr(runErr)
	case "partial":
		return errs.Partialf("%d record(s) could not be replayed and stay pending in %s (see the warnings above)", st.Failed, ep.Name())
	}
	return nil
}

func describeTo(to string) string {
	if strings.EqualFold(to, "source") {
		return "the original topics named in their headers"
	}
	return to
}

func sumSkipped(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func kafkaRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// kafkaRedriveDryRun reads the pending records without committing and
// prints what a run would do.
func kafkaRedriveDryRun(ctx context.Context, f *Factory, opts *RedriveOptions, ep *kafka.Endpoint, plan *kafka.Plan,
	decide func(*kafka.Message) (kafka.Decision, string), rep *KafkaRedriveReport, limit int) error {
	rep.DryRun, rep.Run = true, "dry-run"
	picked := 0
	_, err := kafka.Peek(ctx, ep.Address(), ep.Conn(), plan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		rep.Read++
		if limit > 0 && picked >= limit {
			rep.Left++
			rep.Skipped[fmt.Sprintf("past --max/--canary %d", limit)]++
			return nil
		}
		d, why := decide(m)
		if d == kafka.Leave {
			rep.Left++
			if why != "not selected" {
				rep.Skipped[why]++
			}
			return nil
		}
		picked++
		return nil
	})
	if err != nil {
		return kafkaErr(err)
	}
	rep.Moved = picked
	rep.Pending = plan.Pending()
	rep.Status = "dry-run"
	if r := opts.Rate; r > 0 {
		rep.Estimate = (time.Duration(float64(picked) / r * float64(time.Second))).Round(time.Second).String() + fmt.Sprintf(" at %g/s", r)
	}
	return printKafkaRedrive(f, rep)
}

func printKafkaRedrive(f *Factory, rep *KafkaRedriveReport) error {
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return output.WriteJSON(f.IO.Out, rep)
	case output.NDJSON:
		r := *rep
		r.Type = "summary"
		return output.NewNDJSON(f.IO.Out).Write(r)
	}
	t := output.NewTable(f.IO, "FIELD", "VALUE")
	t.Row("run", rep.Run)
	t.Row("status", rep.Status)
	t.Row("topic", rep.Topic)
	t.Row("group", rep.Group)
	t.Row("to", describeTo(rep.To))
	t.Row("selection", rep.Selection)
	t.Row("read", strconv.Itoa(rep.Read))
	verb := "moved"
	if rep.DryRun {
		verb = "would move"
	}
	t.Row(verb, strconv.Itoa(rep.Moved))
	dests := make([]string, 0, len(rep.ByDest))
	for d := range rep.ByDest {
		dests = append(dests, d)
	}
	sort.Strings(dests)
	for _, d := range dests {
		t.Row("  to "+d, strconv.Itoa(rep.ByDest[d]))
	}
	t.Row("left pending", strconv.Itoa(rep.Left))
	reasons := make([]string, 0, len(rep.Skipped))
	for r := range rep.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		t.Row("  "+r, strconv.Itoa(rep.Skipped[r]))
	}
	if !rep.DryRun {
		t.Row("failed", strconv.Itoa(rep.Failed))
		t.Row("pending after", strconv.FormatInt(rep.Pending, 10))
		if rep.PossibleDuplicates > 0 {
			t.Row("possible duplicates", strconv.Itoa(rep.PossibleDuplicates))
		}
	}
	if rep.Estimate != "" {
		t.Row("estimate", rep.Estimate)
	}
	if c := rep.Canary; c != nil {
		t.Row("canary", fmt.Sprintf("%s: %d of %d came back within %s", c.Verdict, c.Returned, c.Moved, c.Watched))
	}
	if rep.Guard != "" {
		t.Row("guard", rep.Guard)
	}
	t.Row("note", rep.Note)
	return t.Render()
}

// kafkaWatchCanary watches the dead-letter topic past its start-time ends
// for --verify-for: a record carrying this run's marker is a canary copy
// that failed again and came back.
func kafkaWatchCanary(ctx context.Context, f *Factory, opts *RedriveOptions, ep *kafka.Endpoint, ends map[int32]int64, runID string, moved int) *KafkaCanary {
	c := &KafkaCanary{Moved: moved, Watched: opts.VerifyFor.String(), Verdict: "pass"}
	if moved == 0 {
		c.Verdict = "inconclusive"
		return c
	}
	f.IO.Infof("canary: %d record(s) replayed; watching %s for %s", moved, ep.Name(), opts.VerifyFor)
	deadline := time.Now().Add(opts.VerifyFor)
	seen := map[string]bool{}
	for {
		plan, err := ep.Plan(ctx)
		if err == nil {
			for i := range plan.Partitions {
				pr := &plan.Partitions[i]
				if e, ok := ends[pr.Partition]; ok {
					pr.Start = max(e, pr.LogStart)
				} else {
					pr.Start = pr.LogStart
				}
				pr.HandledAbove = 0
			}
			plan.Journals = nil
			_, _ = kafka.Peek(ctx, ep.Address(), ep.Conn(), plan, kafka.PeekOptions{Idle: 5 * time.Second}, func(m *kafka.Message) error {
				if mk := kafka.ReplayMarker(m.Headers); mk != nil && mk.RunID == runID && !seen[mk.OriginalID] {
					seen[mk.OriginalID] = true
				}
				return nil
			})
		}
		c.Returned = len(seen)
		if c.Returned > 0 {
			c.Verdict = "fail"
			return c
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return c
		}
		select {
		case <-ctx.Done():
			return c
		case <-time.After(min(opts.VerifyPoll, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// destLagGuard is one --max-dest-lag GROUP:N.
type destLagGuard struct {
	Group string
	Max   int64
}

func parseDestLag(raw []string) ([]destLagGuard, error) {
	var out []destLagGuard
	for _, r := range raw {
		g, n, ok := strings.Cut(r, ":")
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if !ok || strings.TrimSpace(g) == "" || err != nil || v < 0 {
			return nil, errs.BadInputf("--max-dest-lag %q: use GROUP:N, e.g. --max-dest-lag orders-service:1000 (the destination's consumer group and the most records it may lag behind)", r)
		}
		out = append(out, destLagGuard{Group: strings.TrimSpace(g), Max: v})
	}
	return out, nil
}

// kafkaPacer paces a Kafka redrive: --rate/--ramp as a token bucket
// (divided by --rate-share N) and the --max-dest-lag guards.
type kafkaPacer struct {
	lim       *rate.Limiter
	steps     []float64
	every     time.Duration
	start     time.Time
	guards    []destLagGuard
	check     func(ctx context.Context) (string, error)
	onGuard   string
	pauseMax  time.Duration
	guardGap  time.Duration
	lastCheck time.Time
	tripped   string
}

func newKafkaPacer(opts *RedriveOptions, guards []destLagGuard, adm *kadm.Client) *kafkaPacer {
	p := &kafkaPacer{every: opts.RampEvery, start: time.Now(), guards: guards, onGuard: opts.OnGuard, pauseMax: opts.PauseTimeout, guardGap: opts.GuardInterval}
	if len(guards) > 0 {
		p.check = func(ctx context.Context) (string, error) {
			for _, g := range guards {
				lag, err := kafkaGroupLag(ctx, adm, g.Group)
				if err != nil {
					return "", fmt.Errorf("--max-dest-lag %s: %w", g.Group, err)
				}
				if lag > g.Max {
					return fmt.Sprintf("consumer group %s lags %d records (over --max-dest-lag %d)", g.Group, lag, g.Max), nil
				}
			}
			return "", nil
		}
	}
	var o redrive.Options
	opts.PaceFlags.apply(&o)
	p.steps = o.Ramp
	r := o.Rate
	if len(p.steps) > 0 {
		r = p.steps[0]
	}
	if r > 0 {
		p.lim = rate.NewLimiter(rate.Limit(r), max(1, min(500, int(r))))
	}
	return p
}

func (p *kafkaPacer) minRate() float64 {
	if p.lim == nil {
		return 0
	}
	m := float64(p.lim.Limit())
	for _, s := range p.steps {
		m = min(m, s)
	}
	return m
}

func (p *kafkaPacer) wait(ctx context.Context, n int) error {
	if err := p.guard(ctx); err != nil {
		return err
	}
	if p.lim == nil {
		return nil
	}
	if len(p.steps) > 1 && p.every > 0 {
		i := min(int(time.Since(p.start)/p.every), len(p.steps)-1)
		if l := rate.Limit(p.steps[i]); l != p.lim.Limit() {
			p.lim.SetLimit(l)
		}
	}
	for n > 0 {
		k := min(n, p.lim.Burst())
		if err := p.lim.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func (p *kafkaPacer) guard(ctx context.Context) error {
	if p.check == nil || time.Since(p.lastCheck) < p.guardGap {
		return nil
	}
	p.lastCheck = time.Now()
	why, err := p.check(ctx)
	if err != nil || why == "" {
		return err
	}
	if p.onGuard != redrive.GuardPause {
		p.tripped = why
		return errKafkaGuard
	}
	deadline := time.Now().Add(p.pauseMax)
	for why != "" {
		if time.Now().After(deadline) {
			p.tripped = why + " (did not clear within --pause-timeout)"
			return errKafkaGuard
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.guardGap):
		}
		if why, err = p.check(ctx); err != nil {
			return err
		}
	}
	p.lastCheck = time.Now()
	return nil
}
