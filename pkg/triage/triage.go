// Package triage is the work of the triage commands over a read of
// records (pkg/input): sample keeps the first records a selection keeps;
// group counts them per key; classify lists them, counts them per class
// and action, and explains how the rules decide one message. It prints nothing: the
// commands print what it returns (pkg/report), and the selection's
// filter errors, which the commands account for after the read.
package triage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// Group reads t and counts the records sel keeps into groups by keys
// (ages and expiries from now). The report's FilterErrors are the
// caller's to fill in.
func Group(ctx context.Context, r *input.Reader, t input.Triage, sel *classify.Selector, keys []*inspect.GroupKey, now time.Time) (*report.GroupReport, *report.ReadAccount, error) {
	g := inspect.NewGrouper(keys, now)
	// Classification and the group key values are computed on the decoding
	// goroutines; counting into groups happens in order.
	t.In.Prepare = func(rec *record.Record, parsed any) any {
		ok, err := sel.Keep(rec, parsed)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		return g.Values(rec, parsed)
	}
	rr, err := r.ReadTriage(ctx, t, func(rec *record.Record, _, values any) error {
		if v, ok := values.([]string); ok {
			g.AddValues(rec, v)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	groups := g.Groups()
	if !rr.Complete && rr.Queue != nil {
		inspect.AddEstimates(groups, rr.Read, rr.Depth)
	}
	rep := &report.GroupReport{By: make([]string, len(keys)), Selection: sel.Describe(), Read: rr.Read, Matched: g.Total(),
		Complete: rr.Complete, Depth: rr.Depth, Note: rr.Note, Groups: groups}
	if rr.Queue != nil {
		rep.Queue = rr.Queue.ID()
	}
	for i, k := range keys {
		rep.By[i] = k.Name
	}
	if rr.Queue != nil {
		rep.NoFailureHint = noFailureHint(rr.Queue.Capabilities(), rep.By, groups, t.Logs != nil)
	}
	return rep, rr, nil
}

// noFailureHint says, when messages were grouped under the error key as
// (no failure context), where what their consumer did not write down can
// be found, from the broker's capabilities: the consumer's logs when
// message ids find their log lines (--logs), the broker's own
// dead-lettering reasons when it records them (--by reason). "" when
// there is none, or the command already asked for it.
func noFailureHint(caps broker.Capabilities, by []string, groups []*inspect.Group, withLogs bool) string {
	at := slices.Index(by, "error")
	if at < 0 {
		return ""
	}
	n := 0
	for _, g := range groups {
		if g.Values[at] == inspect.NoFailure {
			n += g.Count
		}
	}
	switch {
	case n == 0:
		return ""
	case caps.LogLookup && !withLogs:
		return fmt.Sprintf("%d message(s) carry no failure context (%s records no reason): --logs LOG_GROUP looks each one's failure up in its consumer's CloudWatch Logs", n, caps.Label)
	case caps.DeathReasons != "" && !slices.Contains(by, "reason"):
		return fmt.Sprintf("%d message(s) carry no failure context from their consumer: --by reason groups them by why %s dead-lettered them (%s)", n, caps.Label, caps.DeathReasons)
	}
	return ""
}

// List is what 'classify' lists: the records sel keeps, redacted unless
// Redactor is nil.
type List struct {
	Select   *classify.Selector
	Redactor *inspect.Redactor
	// Stream, when set, gets each kept record's JSON line (NDJSON) as it
	// is read, in input order; the records are then not kept.
	Stream func(line json.RawMessage) error
}

// Listed is what a List read returned.
type Listed struct {
	Records []record.Record // without Stream
	Matched int
}

// ClassifyList reads t and lists what l.Select keeps.
func ClassifyList(ctx context.Context, r *input.Reader, t input.Triage, l List) (*Listed, *report.ReadAccount, error) {
	out := &Listed{}
	// Classification, redaction and (for NDJSON) encoding run on the
	// decoding goroutines; records are printed in input order.
	type listed struct {
		rec  record.Record
		line json.RawMessage
		err  error
	}
	t.In.Prepare = func(rec *record.Record, parsed any) any {
		ok, err := l.Select.Keep(rec, parsed)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		x := &listed{rec: *rec}
		if l.Redactor != nil {
			x.rec = l.Redactor.Record(x.rec)
		}
		if l.Stream != nil {
			x.line, x.err = x.rec.MarshalJSON()
		}
		return x
	}
	rr, err := r.ReadTriage(ctx, t, func(_ *record.Record, _, prepared any) error {
		x, ok := prepared.(*listed)
		if !ok {
			return nil
		}
		out.Matched++
		if l.Stream != nil {
			if x.err != nil {
				return x.err
			}
			return l.Stream(x.line)
		}
		out.Records = append(out.Records, x.rec)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, rr, nil
}

// ClassifySummary reads t and counts what sel keeps per class and action,
// with the rules that decided each (ages and expiries from now). The
// report's FilterErrors are the caller's to fill in.
func ClassifySummary(ctx context.Context, r *input.Reader, t input.Triage, sel *classify.Selector, now time.Time) (*report.ClassifyReport, *report.ReadAccount, error) {
	keys, err := inspect.ParseGroupKeys([]string{"class,action"})
	if err != nil {
		return nil, nil, err
	}
	g := inspect.NewGrouper(keys, now)
	tally := report.NewClassTally()
	t.In.Prepare = func(rec *record.Record, parsed any) any {
		ok, err := sel.Keep(rec, parsed) // on the decoding goroutines
		if err != nil {
			return err
		}
		return ok
	}
	rr, err := r.ReadTriage(ctx, t, func(rec *record.Record, parsed, matched any) error {
		if matched != true {
			return nil
		}
		g.Add(rec, parsed)
		tally.Add(rec)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	rules := sel.Rules()
	groups := g.Groups()
	if !rr.Complete && rr.Queue != nil {
		inspect.AddEstimates(groups, rr.Read, rr.Depth)
	}
	rep := &report.ClassifyReport{Rules: rules.Source, Selection: sel.Describe(), Read: rr.Read, Matched: g.Total(),
		Complete: rr.Complete, Depth: rr.Depth, Note: rr.Note, Classes: tally.Classes(groups, rules)}
	if rr.Queue != nil {
		rep.Queue = rr.Queue.ID()
	}
	return rep, rr, nil
}

// Explain reads t until the message with id, looks its failure up in the
// logs (lk, when set) and explains how rules classify it. A message not
// among those read is bad input, with a hint of what to read instead
// (sampled says the read stopped at a sample the user did not ask for).
func Explain(ctx context.Context, r *input.Reader, t input.Triage, id string, rules *classify.Rules, lk *logs.Lookup) (record.Record, *classify.Explanation, *report.ReadAccount, error) {
	var found *classify.Explanation
	var rec record.Record
	var lookupErr error
	rr, err := r.ReadTriage(ctx, t, func(x *record.Record, parsed, _ any) error {
		if x.MessageID != id {
			return nil
		}
		rec = *x
		if lookupErr = lk.One(&rec); lookupErr != nil {
			return input.ErrStop
		}
		found = rules.Explain(&rec, parsed)
		return input.ErrStop
	})
	lk.Summary()
	if err == nil {
		err = lookupErr
	}
	if err != nil {
		return rec, nil, nil, err
	}
	if found == nil {
		where := "the input"
		if rr.Queue != nil {
			where = rr.Queue.Name()
		}
		hint := "check the id with 'dlqctl sample' or 'dlqctl classify'"
		if !rr.Complete {
			hint = "only part was read; try --all or a larger --sample"
		}
		return rec, nil, rr, errs.BadInputf("message %s is not among the %d messages read from %s; %s", id, rr.Read, where, hint)
	}
	return rec, found, rr, nil
}
