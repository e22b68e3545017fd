package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Expr is a jq expression over the message record (docs/schema/message-record.schema.json), as used by
// --filter, classification rules and group keys. Besides the record fields
// the input has `.json`: the parsed body, or null when the body is not JSON.
//
//	.system.receive_count > 3
//	.envelope.event_type == "OrderCreated"
//	.json.payload.amount == null
//	(.failure.reason // "") | test("timeout"; "i")
type Expr struct {
	src  string
	code *gojq.Code
}

// ExprHelp documents the expression language for --help texts.
const ExprHelp = `Expressions are jq (gojq) over the message record: .message_id, .body,
.attributes.NAME.value, .system.receive_count, .system.source_queue_arn,
.envelope.event_type, .envelope.event_version, .failure.reason,
.failure.format (the DLQ format recognised, e.g. "lambda-async"),
.failure.evidence, .age_seconds, .json (the parsed body, null when the body
is not JSON) and .payload (the original event: an SNS Message, a Lambda
destination's requestPayload, an EventBridge detail, ...; the parsed body
when the body is the event). A message
matches when the expression yields true (or any value but false/null).
One evaluation may run 5 s (6 s at most) on one message; a slower one (an
endless repeat, until or recursion) is stopped and is an error (no match).
A filter or rule that raises an error on a message ('.body | tonumber' on a
text body) does not select it: the message stays where it is and is counted
(filter_errors in summaries; -v prints the first errors). One that fails on
every message read stops the command with exit 2 before anything moves;
'(EXPR)?' skips the messages it cannot evaluate, silently.
Examples: '.envelope.event_type == "OrderCreated"',
'(.failure.reason // "") | test("timeout"; "i")', '.json == null'.`

// CompileExpr compiles src. A syntax or compile error is a bad-input error
// naming the expression.
func CompileExpr(src string) (*Expr, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, errs.BadInputf("invalid expression %q: %v; see `dlqctl help filters`", src, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, errs.BadInputf("invalid expression %q: %v", src, err)
	}
	return &Expr{src: src, code: code}, nil
}

// String returns the source of the expression.
func (e *Expr) String() string { return e.src }

// exprBudget is how long one evaluation of an expression may run on one
// message. jq can loop forever (repeat, until, recursion); without a bound
// such a filter would hang a run that holds messages.
var exprBudget = 5 * time.Second

// Eval returns the first value the expression yields for the input (nil
// when it yields nothing). An evaluation that runs longer than its budget
// (5 s) is stopped and is an error.
func (e *Expr) Eval(in map[string]any) (any, error) {
	it := e.code.RunWithContext(evalContext(), in)
	v, ok := it.Next()
	if !ok {
		return nil, nil
	}
	if err, isErr := v.(error); isErr {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("expression %q did not finish within %s on one message (an endless repeat, until or recursion?); simplify it", e.src, exprBudget)
		}
		return nil, fmt.Errorf("expression %q: %w", e.src, err)
	}
	return v, nil
}

// budgetCtx is the context shared by the evaluations that start within one
// epoch (a fifth of the budget): it is done a budget plus an epoch after
// the epoch began, so each evaluation gets between its budget and 1.2
// times it. One timer per epoch instead of a context per evaluation keeps
// filters, rules and group keys (one evaluation per message and
// expression) from allocating for the budget.
type budgetCtx struct {
	done     chan struct{}
	deadline time.Time
}

func (c *budgetCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *budgetCtx) Done() <-chan struct{}       { return c.done }
func (c *budgetCtx) Value(any) any               { return nil }
func (c *budgetCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

var budgets struct {
	sync.Mutex
	cur    *budgetCtx
	until  time.Time     // evaluations starting before this join cur
	budget time.Duration // the budget cur was made for
}

// evalContext returns the context of an evaluation starting now.
func evalContext() context.Context {
	now := time.Now()
	budgets.Lock()
	defer budgets.Unlock()
	if budgets.cur == nil || !now.Before(budgets.until) || budgets.budget != exprBudget {
		epoch := exprBudget / 5
		c := &budgetCtx{done: make(chan struct{}), deadline: now.Add(exprBudget + epoch)}
		time.AfterFunc(exprBudget+epoch, func() { close(c.done) })
		budgets.cur, budgets.until, budgets.budget = c, now.Add(epoch), exprBudget
	}
	return budgets.cur
}

// Match reports whether the expression yields a truthy value.
func (e *Expr) Match(in map[string]any) (bool, error) {
	v, err := e.Eval(in)
	if err != nil {
		return false, err
	}
	return truthy(v), nil
}

func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	}
	return true
}

// Input builds the expression input for a record. parsed is the parsed
// body as returned by Decode (nil when the body is not JSON).
func Input(rec *record.Record, parsed any) map[string]any {
	// Sized for all 18 top-level keys up front: growing a map rehashes it,
	// and this runs once per record in filters, rules and group keys.
	m := make(map[string]any, 18)
	m["message_id"] = rec.MessageID
	m["queue"] = rec.Queue
	m["body"] = rec.Body
	m["body_sha256"] = rec.BodySHA256
	m["size_bytes"] = rec.SizeBytes
	m["age_seconds"] = int(rec.AgeSeconds)
	m["json"] = parsed
	m["payload"] = PayloadOf(rec, parsed)
	m["payload_encoding"] = nilIfEmpty(rec.PayloadEncoding)
	attrs := make(map[string]any, len(rec.Attributes))
	for k, a := range rec.Attributes {
		am := map[string]any{"type": a.Type}
		if a.IsBinary() {
			am["base64"] = a.Base64
		} else {
			am["value"] = a.Value
		}
		attrs[k] = am
	}
	m["attributes"] = attrs
	s := rec.System
	sys := map[string]any{
		"receive_count":     s.ReceiveCount,
		"sent_at":           timeStr(s.SentAt),
		"first_received_at": timeStr(s.FirstReceivedAt),
		"source_queue_arn":  s.SourceQueueARN,
		"source_queue":      rec.SourceQueue(),
		"message_group_id":  s.MessageGroupID,
		"deduplication_id":  s.DeduplicationID,
		"sequence_number":   s.SequenceNumber,
	}
	if s.AMQP != nil {
		// RabbitMQ's facts as the record writes them (.system.amqp.deaths,
		// .system.amqp.last_death.reason, …).
		if b, err := json.Marshal(s.AMQP); err == nil {
			var am map[string]any
			if json.Unmarshal(b, &am) == nil {
				sys["amqp"] = am
			}
		}
	}
	m["system"] = sys
	m["expires_at"] = timeStr(rec.ExpiresAt)
	if e := rec.Envelope; e != nil {
		em := map[string]any{
			"event_id": e.EventID, "event_type": e.EventType, "producer": e.Producer,
			"correlation_id": e.CorrelationID, "tenant_id": e.TenantID, "idempotency_key": e.IdempotencyKey,
			"schema_ref": e.SchemaRef, "occurred_at": e.OccurredAt, "event_version": nil,
		}
		switch v := e.EventVersion.(type) {
		case int64:
			em["event_version"] = int(v)
		default:
			em["event_version"] = v
		}
		m["envelope"] = em
	} else {
		m["envelope"] = nil
	}
	if f := rec.Failure; f != nil {
		ev := make([]any, len(f.Evidence))
		for i, e := range f.Evidence {
			em := map[string]any{"field": e.Field, "kind": e.Kind, "text": e.Text}
			if e.Weak {
				em["weak"] = true
			}
			ev[i] = em
		}
		m["failure"] = map[string]any{
			"reason": f.Reason, "type": f.Type, "error_class": f.ErrorClass,
			"attempt_count": f.AttemptCount, "consumer_version": f.ConsumerVersion, "failed_at": f.FailedAt,
			"format": f.Format, "evidence": ev,
		}
	} else {
		m["failure"] = nil
	}
	if r := rec.Redrive; r != nil {
		m["redrive"] = map[string]any{"run": r.RunID, "orig": r.OriginalID, "n": r.Count, "at": timeStr(r.At)}
	} else {
		m["redrive"] = nil
	}
	m["class"], m["action"], m["rule"] = nilIfEmpty(rec.Class), nilIfEmpty(rec.Action), nilIfEmpty(rec.Rule)
	return m
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func timeStr(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// FilterErrors are the messages on which a --filter or a classification
// rule raised an error, as summaries show them (-o json: filter_errors).
// None of them was selected.
type FilterErrors struct {
	// Count is the number of messages the filter or a rule failed on.
	Count int `json:"count"`
	// FirstID is the message id of the first of them (never a receipt
	// handle), FirstError its error, Expression what raised it (--filter
	// '…' or rule "NAME" (FILE:LINE)).
	FirstID    string `json:"first_id"`
	FirstError string `json:"first_error"`
	Expression string `json:"expression"`
}

// Filter is a compiled --filter: nil matches everything.
type Filter struct{ *Expr }

// CompileFilter compiles a --filter value ("" means no filter).
func CompileFilter(src string) (*Filter, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	e, err := CompileExpr(src)
	if err != nil {
		return nil, err
	}
	return &Filter{e}, nil
}

// Keep reports whether rec passes the filter. Runtime errors of the
// expression count as no match.
func (f *Filter) Keep(rec *record.Record, parsed any) bool {
	if f == nil {
		return true
	}
	ok, err := f.Match(Input(rec, parsed))
	return err == nil && ok
}

// MarshalRecord is json.Marshal for records with HTML escaping off, so
// bodies print as they are.
func MarshalRecord(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}
