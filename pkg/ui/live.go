package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/internal/humantime"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/finding"
	"github.com/dlqctl/dlqctl/pkg/health"
	recinput "github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Sources are what the live backend opens; cmd's factory gives them, so
// this package knows no broker package.
type Sources struct {
	// Endpoint opens a queue or topic reference.
	Endpoint func(ctx context.Context, ref string) (broker.Endpoint, error)
	// Lister is what 'dlqctl queues' lists for a scope ("" for the SQS
	// region); done releases what was opened.
	Lister func(ctx context.Context, scope string) (l broker.DLQLister, done func(), err error)
	// Auditors are what 'dlqctl audit REF' audits for a queue whose
	// endpoint is not itself a broker.Auditor (an SQS queue: its
	// configuration, and its Lambda/SNS/EventBridge origins); done
	// releases what was opened.
	Auditors func(ctx context.Context, ref string) (as []broker.Auditor, done func(), err error)
	// Reader reads the records of a queue (as 'sample' and 'group' do).
	Reader *recinput.Reader
}

// LiveOptions are the inputs of the live backend.
type LiveOptions struct {
	// Refs are the references given ('dlqctl ui REF…'); none: the SQS
	// region.
	Refs []string
	// Sample and All say how much of a DLQ the Groups screen reads;
	// Visibility how long read messages stay hidden between heartbeats.
	Sample     int
	All        bool
	Visibility time.Duration
	// Exe is dlqctl's own binary, run for every action.
	Exe string
}

// Live is the Backend over the commands' own readers: the built-in rules,
// records redacted with the default keys.
type Live struct {
	src      Sources
	opts     LiveOptions
	rules    *classify.Rules
	redactor *inspect.Redactor
	prep     *Preparer

	mu  sync.Mutex
	eps map[string]broker.Endpoint
}

// NewLive returns the live backend; Close releases the endpoints it
// opened.
func NewLive(src Sources, opts LiveOptions) *Live {
	b := &Live{src: src, opts: opts, eps: map[string]broker.Endpoint{}, rules: classify.Builtin(),
		redactor: inspect.NewRedactor(nil)}
	b.prep = NewPreparer(b.rules, b.redactor)
	return b
}

// Close releases the endpoints opened.
func (b *Live) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ep := range b.eps {
		broker.CloseEndpoint(ep)
	}
}

// endpoint opens ref once for depth readings and peek warnings.
func (b *Live) endpoint(ctx context.Context, ref string) (broker.Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ep, ok := b.eps[ref]; ok {
		return ep, nil
	}
	ep, err := b.src.Endpoint(ctx, ref)
	if err != nil {
		return nil, err
	}
	b.eps[ref] = ep
	return ep, nil
}

func (b *Live) ListDLQs(ctx context.Context) ([]DLQ, error) {
	refs := b.opts.Refs
	if len(refs) == 0 {
		refs = []string{""} // the SQS region
	}
	var out []DLQ
	for _, ref := range refs {
		if ref != "" && !IsScope(ref) {
			d := DLQ{Ref: ref, Name: ref, Broker: BrokerName(ref)}
			if ep, err := b.endpoint(ctx, ref); err != nil {
				d.Err = err.Error()
			} else {
				d.Name = ep.Name()
				b.fillDepth(ctx, &d)
				d.Warnings = append(d.Warnings, b.audit(ctx, ref, ep)...)
			}
			out = append(out, d)
			continue
		}
		listed, err := b.list(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, listed...)
	}
	return out, nil
}

// list lists the DLQs of a scope ("" for the SQS region) with 'queues'.
func (b *Live) list(ctx context.Context, scope string) ([]DLQ, error) {
	l, done, err := b.src.Lister(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := l.ListDLQs(ctx, broker.ListOptions{Duration: humantime.Duration})
	if err != nil {
		return nil, err
	}
	out := ListedDLQs(scope, res.Items, res.Warnings)
	for i := range out {
		if _, err := b.endpoint(ctx, out[i].Ref); err != nil {
			out[i].Err = err.Error()
		} else {
			b.fillDepth(ctx, &out[i])
		}
	}
	return out, nil
}

// audit is what 'dlqctl audit REF' finds about one DLQ (warnings and
// errors), from its configuration only: no message is read for it. Every
// auditor of the reference is asked — an SQS queue has two (its queue
// settings, and its Lambda/SNS/EventBridge origins); a RabbitMQ queue is
// audited with its vhost — and the findings that concern the queue are
// shown.
func (b *Live) audit(ctx context.Context, ref string, ep broker.Endpoint) []string {
	var as []broker.Auditor
	if a, ok := ep.(broker.Auditor); ok {
		as = []broker.Auditor{a}
	} else if b.src.Auditors != nil {
		var done func()
		var err error
		if as, done, err = b.src.Auditors(ctx, ref); err != nil {
			return []string{"audit: " + err.Error()}
		}
		defer done()
	}
	var findings []finding.Finding
	var failed []string
	for _, a := range as {
		res, err := a.Audit(ctx, broker.AuditOptions{InvestigationWindow: health.DefaultInvestigationWindow})
		if err != nil {
			failed = append(failed, "audit: "+err.Error())
			continue
		}
		findings = append(findings, res.Findings...)
	}
	return append(failed, AuditWarnings(findings, ep.Name())...)
}

func (b *Live) fillDepth(ctx context.Context, d *DLQ) {
	dd, err := b.Depth(ctx, d.Ref)
	if err != nil {
		d.Err = err.Error()
		return
	}
	d.Depth = dd
}

func (b *Live) Depth(ctx context.Context, ref string) (Depth, error) {
	ep, err := b.endpoint(ctx, ref)
	if err != nil {
		return Depth{}, err
	}
	r, err := health.ReadDepth(ctx, ep, true)
	if err != nil {
		return Depth{}, err
	}
	return Depth{Ready: r.Ready, Held: r.Held, Exact: r.Exact, Oldest: r.Oldest, OldestKnown: r.OldestKnown, At: time.Now()}, nil
}

// Read is the read of 'group': recinput.Reader.ForEachPrepared with the
// built-in rules, the group keys of every screen computed per message,
// records redacted.
func (b *Live) Read(ctx context.Context, ref string, emit func(ReadUpdate)) error {
	start := ReadUpdate{Start: true}
	if _, toEnd := b.src.Reader.ReadsToEnd(ref); !toEnd {
		ep, err := b.endpoint(ctx, ref)
		if err != nil {
			return err
		}
		if w, ok := ep.(broker.PeekWarner); ok {
			start.Warnings = append(start.Warnings, w.PeekWarnings()...)
		}
		if c, ok := ep.(broker.PeekChecker); ok {
			adv, err := c.CheckPeek()
			if err != nil {
				return errs.BadInput(err) // nothing read, nothing held
			}
			start.Warnings = append(start.Warnings, adv.Warnings...)
		}
	}
	if d, err := b.Depth(ctx, ref); err == nil {
		start.Depth = d.Ready + d.Held
	}
	emit(start)
	// The flags were checked against the references' brokers before
	// anything connected (pkg/refuse: CommandRefs "ui").
	in := recinput.Options{Queue: ref, Visibility: b.opts.Visibility}
	if !b.opts.All {
		in.Max = b.opts.Sample
	}
	in.Prepare = func(rec *record.Record, parsed any) any { return b.prep.Item(rec, parsed) }
	var batch []Item
	last := time.Now()
	read := 0
	res, err := b.src.Reader.ForEachPrepared(ctx, in, func(_ *record.Record, _, prepared any) error {
		read++
		batch = append(batch, *prepared.(*Item))
		if len(batch) >= 256 || time.Since(last) >= 100*time.Millisecond {
			emit(ReadUpdate{Items: batch})
			batch, last = nil, time.Now()
		}
		return nil
	})
	end := ReadUpdate{End: true, Items: batch, Err: err}
	switch {
	case res != nil && res.Scan != nil:
		end.Complete, end.Note = res.Scan.Complete, res.Scan.Note
		if (end.Note == "" || end.Note == "sample") && !end.Complete && !b.opts.All {
			end.Note = fmt.Sprintf("a sample of --sample %d; --all reads everything", b.opts.Sample)
		}
	case err == nil:
		// Read to the end offsets taken at the start (Kafka), unless
		// --sample stopped it.
		end.Complete = b.opts.All || read < b.opts.Sample
		if !end.Complete {
			end.Note = fmt.Sprintf("a sample of --sample %d; --all reads everything", b.opts.Sample)
		}
	}
	if errors.Is(err, context.Canceled) {
		end.Err, end.Note = nil, "stopped"
	}
	emit(end)
	return nil
}

// Describe is the message screen (Describe with the UI's rules and
// redaction).
func (b *Live) Describe(rec *record.Record) Detail {
	return Describe(rec, b.rules, b.redactor)
}

// Run runs dlqctl ARGS as a child process of this binary and reports its
// NDJSON events.
func (b *Live) Run(ctx context.Context, args []string, event func(RunEvent)) RunResult {
	return RunChild(ctx, b.opts.Exe, args, event)
}
