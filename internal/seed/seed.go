// Package seed builds realistic dead-letter incidents on an SQS endpoint (the
// local emulator from scripts/stack.sh) for tests, benchmarks and the demo.
//
// Incident creates two standard source queues and one FIFO source, each with
// a RedrivePolicy into a DLQ, sends a deterministic mix of messages and then
// dead-letters them for real: it receives without deleting (visibility 0)
// until the server moves every message, so the DLQ copies carry
// DeadLetterQueueSourceArn exactly as in production. The returned Truth
// describes every message, so tests can compare what dlqctl reports with
// what was seeded.
//
// FillDLQ is the fast path for volume: it sends n messages straight into a
// queue with concurrent SendMessageBatch calls (no dead-lettering).
package seed

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Kind is the shape of a seeded message body.
type Kind string

const (
	// KindEnvelope: a retry envelope as JSON
	// {"eventId","eventType","eventVersion",...,"payload":{...}}.
	KindEnvelope Kind = "envelope"
	// KindEnriched: a consumer-enriched wrapper
	// {"original_payload":{envelope},"failure_reason",...}.
	KindEnriched Kind = "enriched"
	// KindAttrFailure: an envelope body; the failure rides in the dlq_reason
	// and error_type String message attributes.
	KindAttrFailure Kind = "attr-failure"
	// KindMalformed: a body that looks like JSON but does not parse.
	KindMalformed Kind = "malformed"
	// KindPlaintext: a non-JSON text body.
	KindPlaintext Kind = "plaintext"
	// KindUnicode: bodies with emoji, Cyrillic and CJK text (one envelope,
	// one plain text, one enriched wrapper).
	KindUnicode Kind = "unicode"
	// KindSecret: an envelope with nested secrets (payload.card_number,
	// payload.customer.password); see Seeded.Secrets.
	KindSecret Kind = "secret"
	// KindLarge: an enriched wrapper of about 900 KiB.
	KindLarge Kind = "large"
	// KindFIFO: envelopes and enriched wrappers in the FIFO DLQ.
	KindFIFO Kind = "fifo"
)

// Class is the failure class a good classifier should reach for a message.
type Class string

const (
	// ClassTransient: timeouts, throttling (429), HTTP 5xx, connection
	// resets. Safe to redrive once the dependency recovers.
	ClassTransient Class = "transient"
	// ClassPermanent: the message itself is bad (validation errors, payload
	// too large, malformed JSON no consumer can parse; plain text is not
	// evidence of a bad message and is ClassUnknown). Redriving
	// cannot help.
	ClassPermanent Class = "permanent"
	// ClassSchemaMismatch: an eventVersion/schemaRef the consumer does not
	// know (eventVersion 9), whether or not a failure reason says so.
	ClassSchemaMismatch Class = "schema-mismatch"
	// ClassBusiness: a business rule rejected it (failure_type
	// BusinessRuleViolation: insufficient funds, order already cancelled).
	ClassBusiness Class = "business"
	// ClassUnknown: no failure information (bare envelopes).
	ClassUnknown Class = "unknown"
)

// Queue describes one queue of the incident.
type Queue struct {
	Name string
	URL  string
	ARN  string
	FIFO bool
	// MaxReceiveCount of the queue's RedrivePolicy (0 for DLQs).
	MaxReceiveCount int
	// RetentionSeconds is the queue's MessageRetentionPeriod.
	RetentionSeconds int
}

// Seeded is one message of the incident as it was sent.
type Seeded struct {
	Kind  Kind
	Class Class

	SourceName string // queue the message was sent to (and dead-lettered from)
	SourceARN  string // expected DeadLetterQueueSourceArn of the DLQ copy
	DLQName    string // queue the message ends up in

	// MessageID is the id SendMessage(Batch) returned; dead-lettering keeps it.
	MessageID  string
	Body       string
	BodySHA256 string // hex SHA-256 of Body
	// Attributes are the message attributes as sent (nil when none).
	Attributes map[string]types.MessageAttributeValue

	// Envelope fields, set when the body (or its original_payload) is an
	// envelope.
	EventID      string
	EventType    string
	EventVersion int
	SchemaRef    string
	TenantID     string

	// Failure details as the consumer wrote them (body or attributes).
	FailureType   string
	FailureReason string
	ErrorClass    string

	// FIFO only.
	GroupID  string
	DedupID  string
	GroupSeq int // 0-based position within its message group

	// Secrets lists values that must never appear in redacted output.
	Secrets []string
	// Extra marks the additional transient messages from Options.Scale.
	Extra bool
}

// Truth describes a seeded incident.
type Truth struct {
	Prefix string

	DLQ        Queue // PREFIX-dlq (standard)
	Orders     Queue // PREFIX-orders -> DLQ
	Payments   Queue // PREFIX-payments -> DLQ
	FIFODLQ    Queue // PREFIX-dlq.fifo
	FIFOSource Queue // PREFIX-orders.fifo -> FIFODLQ

	Messages []Seeded

	// Timings of the seeding phases.
	Timings Timings
}

// Timings records how long each seeding phase took.
type Timings struct {
	CreateQueues time.Duration
	Send         time.Duration
	DeadLetter   time.Duration
	Total        time.Duration
}

// DeleteQueues deletes every queue of the incident (tests' cleanup).
func (t *Truth) DeleteQueues(ctx context.Context, c *sqs.Client) error {
	var errs []error
	for _, q := range t.Queues() {
		if q.URL == "" {
			continue
		}
		if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q.URL)}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sources returns the standard source queues (orders, payments).
func (t *Truth) Sources() []Queue { return []Queue{t.Orders, t.Payments} }

// Queues returns every queue of the incident, DLQs first.
func (t *Truth) Queues() []Queue {
	return []Queue{t.DLQ, t.FIFODLQ, t.Orders, t.Payments, t.FIFOSource}
}

// CountBy counts messages by key, e.g.
// CountBy(func(m Seeded) string { return string(m.Class) }).
func (t *Truth) CountBy(key func(Seeded) string) map[string]int {
	out := map[string]int{}
	for _, m := range t.Messages {
		out[key(m)]++
	}
	return out
}

// Filter returns the messages for which keep returns true, in seeding order.
func (t *Truth) Filter(keep func(Seeded) bool) []Seeded {
	var out []Seeded
	for _, m := range t.Messages {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// InQueue returns the messages expected in the named DLQ (or by URL/ARN).
func (t *Truth) InQueue(ref string) []Seeded {
	var name string
	for _, q := range t.Queues() {
		if ref == q.Name || ref == q.URL || ref == q.ARN {
			name = q.Name
		}
	}
	return t.Filter(func(m Seeded) bool { return m.DLQName == name })
}

// ByBodySHA256 indexes messages by BodySHA256 (bodies are unique).
func (t *Truth) ByBodySHA256() map[string]Seeded {
	out := make(map[string]Seeded, len(t.Messages))
	for _, m := range t.Messages {
		out[m.BodySHA256] = m
	}
	return out
}

// ByMessageID indexes messages by MessageID.
func (t *Truth) ByMessageID() map[string]Seeded {
	out := make(map[string]Seeded, len(t.Messages))
	for _, m := range t.Messages {
		out[m.MessageID] = m
	}
	return out
}

// Summary is a JSON-friendly overview (what scripts/dlqctl-seed prints).
type Summary struct {
	Prefix   string            `json:"prefix"`
	Queues   map[string]string `json:"queues"` // role -> URL
	ARNs     map[string]string `json:"arns"`   // role -> ARN
	Messages int               `json:"messages"`
	ByDLQ    map[string]int    `json:"by_dlq"`
	ByKind   map[string]int    `json:"by_kind"`
	ByClass  map[string]int    `json:"by_class"`
	Timings  map[string]string `json:"timings"`
}

// Summary returns counts and queue URLs of the incident.
func (t *Truth) Summary() Summary {
	roles := map[string]Queue{
		"dlq": t.DLQ, "orders": t.Orders, "payments": t.Payments,
		"fifo_dlq": t.FIFODLQ, "fifo_source": t.FIFOSource,
	}
	s := Summary{
		Prefix: t.Prefix, Queues: map[string]string{}, ARNs: map[string]string{},
		Messages: len(t.Messages),
		Timings: map[string]string{
			"create_queues": t.Timings.CreateQueues.Round(time.Millisecond).String(),
			"send":          t.Timings.Send.Round(time.Millisecond).String(),
			"dead_letter":   t.Timings.DeadLetter.Round(time.Millisecond).String(),
			"total":         t.Timings.Total.Round(time.Millisecond).String(),
		},
		ByDLQ:   t.CountBy(func(m Seeded) string { return m.DLQName }),
		ByKind:  t.CountBy(func(m Seeded) string { return string(m.Kind) }),
		ByClass: t.CountBy(func(m Seeded) string { return string(m.Class) }),
	}
	for role, q := range roles {
		s.Queues[role] = q.URL
		s.ARNs[role] = q.ARN
	}
	return s
}

// Plan returns the messages Incident would send for prefix at now (scale
// 0), without any server: the realistic bodies and attributes, for offline
// record files (internal/benchdata).
func Plan(prefix string, now time.Time) []Seeded { return plan(prefix, now, 0) }
