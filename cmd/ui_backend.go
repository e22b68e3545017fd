package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/ui"
)

// uiBackend is ui.Backend over the commands' own readers.
type uiBackend struct {
	f        *Factory
	opts     *UIOptions
	exe      string
	rules    *classify.Rules
	redactor *inspect.Redactor
	prep     *ui.Preparer

	mu  sync.Mutex
	eps map[string]broker.Endpoint
}

func (b *uiBackend) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ep := range b.eps {
		closeEndpoint(ep)
	}
}

// endpoint opens ref once for depth readings and peek warnings.
func (b *uiBackend) endpoint(ctx context.Context, ref string) (broker.Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ep, ok := b.eps[ref]; ok {
		return ep, nil
	}
	ep, err := b.f.Endpoint(ctx, ref)
	if err != nil {
		return nil, err
	}
	b.eps[ref] = ep
	return ep, nil
}

func (b *uiBackend) ListDLQs(ctx context.Context) ([]ui.DLQ, error) {
	refs := b.opts.Refs
	if len(refs) == 0 {
		refs = []string{""} // the SQS region
	}
	var out []ui.DLQ
	for _, ref := range refs {
		if ref != "" && !ui.IsScope(ref) {
			d := ui.DLQ{Ref: ref, Name: ref, Broker: ui.BrokerName(ref)}
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
func (b *uiBackend) list(ctx context.Context, scope string) ([]ui.DLQ, error) {
	l, _, done, err := b.f.dlqLister(ctx, scope, "")
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := l.ListDLQs(ctx, broker.ListOptions{Duration: output.Duration})
	if err != nil {
		return nil, err
	}
	out := ui.ListedDLQs(scope, res.Items, res.Warnings)
	for i := range out {
		if _, err := b.endpoint(ctx, out[i].Ref); err != nil {
			out[i].Err = err.Error()
		} else {
			b.fillDepth(ctx, &out[i])
		}
	}
	return out, nil
}

// audit is what 'dlqctl audit' finds about one DLQ (warnings and
// errors), from its configuration only: no message is read for it. A
// RabbitMQ queue is audited with its vhost (list it with
// amqp://HOST/VHOST/ to see the vhost's warnings).
func (b *uiBackend) audit(ctx context.Context, ref string, ep broker.Endpoint) []string {
	var a broker.Auditor
	if r, err := broker.ParseRef(ref); err == nil && r.Broker == broker.SQS {
		as, _, _, err := b.f.auditors(ctx, []string{ref}, "", nil)
		if err != nil || len(as) != 1 {
			return nil
		}
		a = as[0]
	} else if x, ok := ep.(broker.Auditor); ok {
		a = x
	} else {
		return nil
	}
	res, err := a.Audit(ctx, broker.AuditOptions{InvestigationWindow: health.DefaultInvestigationWindow})
	if err != nil {
		return []string{"audit: " + err.Error()}
	}
	return ui.AuditWarnings(res.Findings, ep.Name())
}

func (b *uiBackend) fillDepth(ctx context.Context, d *ui.DLQ) {
	dd, err := b.Depth(ctx, d.Ref)
	if err != nil {
		d.Err = err.Error()
		return
	}
	d.Depth = dd
}

func (b *uiBackend) Depth(ctx context.Context, ref string) (ui.Depth, error) {
	ep, err := b.endpoint(ctx, ref)
	if err != nil {
		return ui.Depth{}, err
	}
	r, err := health.ReadDepth(ctx, ep, true)
	if err != nil {
		return ui.Depth{}, err
	}
	return ui.Depth{Ready: r.Ready, Held: r.Held, Exact: r.Exact, Oldest: r.Oldest, OldestKnown: r.OldestKnown, At: time.Now()}, nil
}

// Read is the read of 'group': ForEachPrepared with the built-in rules,
// the group keys of every screen computed per message, records redacted.
func (b *uiBackend) Read(ctx context.Context, ref string, emit func(ui.ReadUpdate)) error {
	f := b.f
	start := ui.ReadUpdate{Start: true}
	if _, toEnd := readsToEnd(ref); !toEnd {
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
	in := InputOptions{Queue: ref, Visibility: b.opts.Visibility}
	if !b.opts.All {
		in.Max = b.opts.Sample
	}
	in.Prepare = func(rec *record.Record, parsed any) any { return b.prep.Item(rec, parsed) }
	var batch []ui.Item
	last := time.Now()
	read := 0
	res, err := f.ForEachPrepared(ctx, in, func(_ *record.Record, _, prepared any) error {
		read++
		batch = append(batch, *prepared.(*ui.Item))
		if len(batch) >= 256 || time.Since(last) >= 100*time.Millisecond {
			emit(ui.ReadUpdate{Items: batch})
			batch, last = nil, time.Now()
		}
		return nil
	})
	end := ui.ReadUpdate{End: true, Items: batch, Err: err}
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

// Describe is the message screen (ui.Describe with the UI's rules and
// redaction).
func (b *uiBackend) Describe(rec *record.Record) ui.Detail {
	return ui.Describe(rec, b.rules, b.redactor)
}

// Run runs dlqctl ARGS as a child process of this binary and reports its
// NDJSON events.
func (b *uiBackend) Run(ctx context.Context, args []string, event func(ui.RunEvent)) ui.RunResult {
	return ui.RunChild(ctx, b.exe, args, event)
}
