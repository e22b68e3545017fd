package redrive

import (
	"context"
	"errors"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// Plan is what a run would do: the dry run's answer. Nothing is changed to
// build it.
type Plan struct {
	Scanned   int `json:"scanned"`
	WouldMove int `json:"would_move"`
	// ByDestination counts messages per destination queue and class.
	ByDestination map[string]map[string]int `json:"by_destination"`
	Skipped       map[string]int            `json:"skipped"`
	// Unmarked would move without the marker attribute (10 attributes).
	Unmarked int `json:"unmarked"`
	// EstimatedSeconds at the chosen rate or ramp (0 when unlimited).
	EstimatedSeconds float64 `json:"estimated_seconds,omitempty"`
	Complete         bool    `json:"complete"`
	Note             string  `json:"note,omitempty"`
	// Transform: with --transform, the counts (changed, unchanged,
	// failed) and the diffs of a sample of messages.
	Transform *TransformPlan `json:"transform,omitempty"`
	// ClassesFrom says where the classes of ByDestination come from when
	// no selection classified the messages: "built-in rules" (the plan
	// classified them to show what would move; the run moves every
	// class). Empty when the selection's rules did (or records kept the
	// class they were archived with).
	ClassesFrom string `json:"classes_from,omitempty"`
	// Sources counts the messages that would move by the queue (Kafka:
	// topic) they were dead-lettered from, where the message says
	// (record.SourceQueue); those that do not are not counted.
	Sources map[string]int `json:"sources,omitempty"`
}

// TransformPlan is what a transform would do, as the dry run shows it.
type TransformPlan struct {
	*transform.Summary
	Samples []TransformSample `json:"samples"`
}

// TransformSample is one message's before/after: the changes, or why the
// transform failed on it.
type TransformSample struct {
	MessageID string             `json:"message_id"`
	Changed   bool               `json:"changed"`
	Changes   []transform.Change `json:"changes,omitempty"`
	Error     string             `json:"error,omitempty"`
}

// ClassesFromBuiltin is Plan.ClassesFrom when the plan classified the
// messages with the built-in rules.
const ClassesFromBuiltin = "built-in rules"

// MaxSamples is how many messages a dry run shows the diff of.
const MaxSamples = 10

// Planner builds a Plan from records, with the same decisions the mover
// makes (selection, loop guard, routing, copy rules).
type Planner struct {
	RunID  string
	Router Router
	// Publisher prepares the copies (the destination broker's rules).
	Publisher   broker.Publisher
	Select      Selector
	MaxRedrives int
	Max         int
	// Partition: a shared restore plans only this process's records
	// (--rate-share I/N); the rest are skipped as SkipOtherShare.
	Partition Share
	// Transform: the dry run of a --transform run (counts and diffs).
	Transform *transform.Transform
	// Samples is how many diffs to keep (default MaxSamples).
	Samples int

	plan    Plan
	samples []TransformSample
	builtin *classify.Rules
}

// Add decides one record and returns its event (action "would-move" or
// "skipped").
func (p *Planner) Add(ctx context.Context, rec *record.Record, parsed any) (MessageEvent, error) {
	if p.plan.ByDestination == nil {
		p.plan.ByDestination = map[string]map[string]int{}
		p.plan.Skipped = map[string]int{}
	}
	p.plan.Scanned++
	ev := MessageEvent{MessageID: rec.MessageID, Class: rec.Class}
	if !p.Partition.Mine(rec) {
		p.plan.Skipped[SkipOtherShare]++
		ev.Action, ev.Reason = "skipped", SkipOtherShare
		return ev, nil
	}
	c, err := decide(ctx, Item{Record: rec, Parsed: parsed}, p.Publisher, broker.CopyOptions{RunID: p.RunID, Now: time.Now()}, p.Select, p.Router, p.MaxRedrives, p.Transform)
	if err != nil {
		return ev, err
	}
	dest, cp, reason := c.dest, c.out, c.reason
	if p.Transform != nil {
		p.sample(rec, parsed, c)
	}
	if reason == "" && p.Max > 0 && p.plan.WouldMove >= p.Max {
		reason = SkipMax
	}
	if reason != "" {
		p.plan.Skipped[reason]++
		ev.Action, ev.Reason = "skipped", reason
		return ev, nil
	}
	if rec.Class == "" {
		// Nothing selected by class: the plan still says what classes
		// would move (the built-in rules'), so a replay of permanent
		// failures is seen before it happens.
		if p.builtin == nil {
			p.builtin = classify.Builtin()
		}
		p.builtin.Classify(rec, parsed)
		p.plan.ClassesFrom = ClassesFromBuiltin
		ev.Class = rec.Class
	}
	p.plan.WouldMove++
	if !cp.Marked {
		p.plan.Unmarked++
	}
	byClass := p.plan.ByDestination[dest.Label]
	if byClass == nil {
		byClass = map[string]int{}
		p.plan.ByDestination[dest.Label] = byClass
	}
	byClass[classOf(rec)]++
	if q := rec.SourceQueue(); q != "" {
		if p.plan.Sources == nil {
			p.plan.Sources = map[string]int{}
		}
		p.plan.Sources[q]++
	}
	ev.Action, ev.Destination = "would-move", dest.Label
	return ev, nil
}

// sample keeps the diff of one message while there is room: changed
// messages and failures first; unchanged ones are only counted.
func (p *Planner) sample(rec *record.Record, parsed any, c choice) {
	max := p.Samples
	if max == 0 {
		max = MaxSamples
	}
	if len(p.samples) >= max {
		return
	}
	switch {
	case c.xfErr != nil:
		msg := c.xfErr.Error()
		var te *transform.Error
		if errors.As(c.xfErr, &te) {
			msg = te.Reason + ": " + te.Err.Error()
		}
		p.samples = append(p.samples, TransformSample{MessageID: rec.MessageID, Error: msg})
	case c.copy != nil && c.copy != rec:
		ch := transform.Diff(rec, parsed, c.copy)
		if len(ch) > 0 {
			p.samples = append(p.samples, TransformSample{MessageID: rec.MessageID, Changed: true, Changes: ch})
		}
	}
}

// Plan returns the plan with the duration estimated for the rate (or ramp
// steps every rampEvery); rate 0 and no ramp leaves it unknown.
func (p *Planner) Plan(rate float64, ramp []float64, rampEvery time.Duration) Plan {
	pl := p.plan
	if pl.ByDestination == nil {
		pl.ByDestination = map[string]map[string]int{}
		pl.Skipped = map[string]int{}
	}
	pl.EstimatedSeconds = EstimateSeconds(pl.WouldMove, rate, ramp, rampEvery)
	if p.Transform != nil {
		pl.Transform = &TransformPlan{Summary: p.Transform.Summary(), Samples: append([]TransformSample{}, p.samples...)}
	}
	return pl
}

// EstimateSeconds is how long n messages take at rate, or along a ramp
// (each step lasting rampEvery, the last one until done). 0 = unknown.
func EstimateSeconds(n int, rate float64, ramp []float64, rampEvery time.Duration) float64 {
	if n <= 0 {
		return 0
	}
	if len(ramp) == 0 {
		if rate <= 0 {
			return 0
		}
		return float64(n) / rate
	}
	left, secs := float64(n), 0.0
	for i, r := range ramp {
		if r <= 0 {
			return 0
		}
		if i == len(ramp)-1 {
			return secs + left/r
		}
		step := rampEvery.Seconds() * r
		if step >= left {
			return secs + left/r
		}
		left -= step
		secs += rampEvery.Seconds()
	}
	return secs
}
