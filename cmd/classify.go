package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/logs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
	"github.com/dlqctl/dlqctl/pkg/triage"
)

// ClassifyOptions are the inputs of `dlqctl classify`.
type ClassifyOptions struct {
	F         *Factory
	Queue     string
	Read      ReadFlags
	Selection SelectionFlags
	Summary   bool
	Explain   string
	Redact    []string
	NoRedact  bool
	// Now is the reference time for ages (default: time.Now).
	Now time.Time
}

// NewCmdClassify builds `dlqctl classify`.
func NewCmdClassify(f *Factory, runF func(context.Context, *ClassifyOptions) error) *cobra.Command {
	opts := &ClassifyOptions{F: f}
	c := &cobra.Command{
		Use:   "classify QUEUE [--rules FILE] [--summary | --explain ID]",
		Short: "Sort messages into failure classes and say what to do with each",
		Long: withExitCodes(`Classify the messages of a dead-letter queue with ordered rules (first match
wins) into a class and an action: redrive, redrive-to-recovery, archive,
investigate or ignore. Nothing is consumed: messages are read and released
as with 'dlqctl group'.

Messages are decoded first: the DLQ format (Lambda async DLQ or
destination record, EventBridge, SNS, CloudEvents, MassTransit,
NServiceBus, Spring Kafka, Kafka Connect, Celery, Dramatiq, Rebus, Laravel,
Sidekiq, Faktory, ActiveJob, Hangfire, Azure Service Bus, Event Grid and
Pub/Sub dead letters, NATS JetStream advisories, enriched wrapper, generic
failure keys) gives failure.format, the failure evidence and the original
payload. Failure evidence is also found by its shape wherever it sits:
serialised error objects (database drivers, HTTP clients, AWS SDKs,
OpenTelemetry exception attributes), stack traces and error-level log
lines; inside the message's own data (a payment_failed webhook, an email
bounce) they are hints that never decide. Exception chains and groups
decide on their root cause (Java/Rust "Caused by", .NET "--->" and
AggregateException, Node [cause] and AggregateError, Python "from",
"During handling" and ExceptionGroup, Go %w); a gRPC status decides on
its description.
A plain message dead-lettered by an SQS redrive policy has no failure
context: SQS records no reason.

Without --rules the built-in rules apply, in this order:
  redrive-loop        carries the dlqctl-redrive marker (redriven before and
                      back again)                    -> redrive-loop/investigate
  broker-capacity     RabbitMQ dead-lettered it for a TTL (expired) or a
                      length limit (maxlen)          -> transient/redrive
  body-not-json       body starts like JSON and does not parse, or is not
                      what a rules file's sources: says its consumer
                      expects; no failure evidence names a cause (XML, CSV,
                      text, base64 or binary alone are not evidence)
                                                     -> permanent/archive
  schema-mismatch     failure names an unsupported version/schema, unknown
                      type or no handler; or, without failure evidence, an
                      event schema version not in 1, 2, 3 (configurable) or
                      an unknown schemaRef  -> schema-mismatch/redrive-to-recovery
  conflicting-signals strong transient and strong non-transient evidence
                                                     -> unknown/investigate
  transient-failure   network error, timeout, throttling/429, 5xx, gRPC
                      unavailable, deadlock, SQLSTATE 40001/08 -> transient/redrive
  business-rejection  insufficient funds, declined, already processed, order
                      not found                      -> business/investigate
  permanent-failure   parse/deserialization, validation, SQLSTATE 22/23,
                      HTTP 4xx other than 408/425/429 -> permanent/archive
  configuration-error access denied, missing resource, expired credentials
                                                     -> unknown/investigate
  default             (also no failure context)      -> unknown/investigate
Explicit failure evidence beats body and envelope heuristics; a version
counts only when the decoder vouches it is the event's schema version
(never EventBridge "version" or CloudEvents "specversion"). See
'dlqctl help triage' for the formats and families. A rules file (YAML,
'dlqctl help rules') lists its own rules and can include the built-ins
('- include: builtin'); .failure.format and .payload let a rule target one
format. It is checked before any message is read: an invalid file exits 2
naming file, line and reason.

Each decision has a confidence (0..1: 0.95 a chain's root cause, 0.9 an
exception type, code or status, 0.85 a specific phrase, 0.55 generic words
alone, 0.5 conflicting evidence; rules of a rules file 1). --class takes a
decision only at or above --min-confidence (default 0.6, chosen on the
corpus so that no dangerous confusion is selected); unknown is always
selectable. The record's "confidence" field carries it.

Output is one line (record) per message, --summary counts per class and
action with examples (and estimated totals when only a sample of a larger
queue was read), and --explain ID shows the format detected, each piece
of failure evidence (field -> text) with the family it names, the chain's
root cause when it decided, the confidence, and every rule evaluated for
one message and why the matching one matched.

Bodies are shown with secret-looking values masked (see 'dlqctl sample').

` + SelectionHelp + `

` + LogsHelp + ` --explain shows the log lines used.

Exit 4 with --all when the queue could not be read whole (FIFO groups
locked behind held messages, messages in flight elsewhere, the in-flight
limit): the result covers what was read and says what was not. Exit 2 on bad
rules or keys, no credentials or region, or AccessDenied on the queue
(naming the IAM action), or a --min-confidence outside 0..1; a --logs group
that may not be searched is exit 1.`),
		Example: `  dlqctl classify orders-dlq --summary
  dlqctl classify orders-dlq --summary --logs /aws/lambda/orders-consumer,/ecs/orders-worker
  dlqctl classify orders-dlq --all --class transient -o ndjson > transient.ndjson
  dlqctl classify orders-dlq --all --class transient --min-confidence 0.9 -o ndjson
  dlqctl classify orders-dlq --rules rules.yaml --explain 8d3c…
  dlqctl classify --from dlq.ndjson --rules rules.yaml --summary -o json`,
		Args: queueOrFromArgs(&opts.Read.From),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Queue = args[0]
			}
			if err := opts.Read.validate(c); err != nil {
				return err
			}
			opts.Explain = strings.TrimSpace(opts.Explain)
			if c.Flags().Changed("explain") && opts.Explain == "" {
				return errs.BadInputf("--explain needs a message id; find one with 'dlqctl sample' or 'dlqctl classify'")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return classifyRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&opts.Summary, "summary", false, "count messages per class and action instead of listing them")
	fl.StringVar(&opts.Explain, "explain", "", "show how the rules classify the message with this id")
	fl.StringSliceVar(&opts.Redact, "redact", nil, "extra keys or dotted body paths to mask (comma-separated)")
	fl.BoolVar(&opts.NoRedact, "no-redact", false, "show secret-looking values unmasked")
	c.MarkFlagsMutuallyExclusive("summary", "explain")
	opts.Read.addFlags(c)
	opts.Selection.AddFlags(c.Flags())
	opts.Selection.AddLogsFlags(c.Flags())
	return c
}

func classifyRun(ctx context.Context, opts *ClassifyOptions) error {
	sel, err := opts.Selection.selector(true)
	if err != nil {
		return err
	}
	watchFilterErrors(opts.F, sel)
	lk, err := newLogsLookup(ctx, opts.F, &opts.Selection.Logs)
	if err != nil {
		return err
	}
	if opts.Explain != "" {
		return explainRun(ctx, opts, sel.Rules(), lk)
	}
	if opts.Summary {
		return classifySummaryRun(ctx, opts, sel, lk)
	}
	return classifyListRun(ctx, opts, sel, lk)
}

func classifyListRun(ctx context.Context, opts *ClassifyOptions, sel *classify.Selector, lk *logs.Lookup) (retErr error) {
	f := opts.F
	l := triage.List{Select: sel}
	if !opts.NoRedact {
		l.Redactor = inspect.NewRedactor(opts.Redact)
	}
	format, _ := f.Format()
	if format == output.NDJSON {
		nd := output.NewNDJSON(f.IO.Out)
		l.Stream = func(line json.RawMessage) error { return nd.Write(line) }
	}
	res, rr, err := triage.ClassifyList(ctx, f.reader(), opts.Read.triage(f, opts.Queue, lk), l)
	if err != nil {
		return err
	}
	defer func() { retErr = rr.Finish(retErr) }()
	if _, err := endSelection(f, sel, "are not listed"); err != nil {
		return err
	}
	f.IO.Infof("%s", rr.Describe(res.Matched, sel.Describe()))
	recs := res.Records
	switch format {
	case output.NDJSON:
		return nil
	case output.JSON:
		if recs == nil {
			recs = []record.Record{}
		}
		return output.WriteJSON(f.IO.Out, recs)
	}
	if len(recs) == 0 {
		f.IO.Infof("no messages")
		return nil
	}
	return report.WriteClassifyList(f.IO, recs)
}

func classifySummaryRun(ctx context.Context, opts *ClassifyOptions, sel *classify.Selector, lk *logs.Lookup) (retErr error) {
	f := opts.F
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	rep, rr, err := triage.ClassifySummary(ctx, f.reader(), opts.Read.triage(f, opts.Queue, lk), sel, now)
	if err != nil {
		return err
	}
	defer func() { retErr = rr.Finish(retErr) }()
	if rep.FilterErrors, err = endSelection(f, sel, "are not counted in any class"); err != nil {
		return err
	}
	f.IO.Infof("%s", rr.Describe(rep.Matched, sel.Describe()))
	format, _ := f.Format()
	return report.WriteClassifySummary(f.IO, format, rep, now)
}

func explainRun(ctx context.Context, opts *ClassifyOptions, rules *classify.Rules, lk *logs.Lookup) (retErr error) {
	f := opts.F
	read := opts.Read
	if !read.sampleSet {
		read.All = true // look until the message is found
	}
	rec, found, rr, err := triage.Explain(ctx, f.reader(), read.triage(f, opts.Queue, nil), opts.Explain, rules, lk)
	if err != nil {
		return err
	}
	defer func() { retErr = rr.Finish(retErr) }()
	format, _ := f.Format()
	if format != output.Table {
		return output.WriteJSON(f.IO.Out, report.ExplainReport{MessageID: rec.MessageID, Explanation: found})
	}
	var redactor *inspect.Redactor
	if !opts.NoRedact {
		redactor = inspect.NewRedactor(opts.Redact)
	}
	report.WriteExplanation(f.IO.Out, rec, found, opts.Selection.MinConf(), redactor)
	return nil
}
