// Package origins redrives SQS dead-letter queues whose messages did not
// come from an SQS queue: the DLQs of Lambda asynchronous invocations (a
// function's DeadLetterConfig, or its on-failure destination), of SNS
// subscriptions (a subscription's RedrivePolicy) and of EventBridge rule
// targets (a target's DeadLetterConfig). SQS's own redrive cannot move
// these: their "source" is a function, a subscription or a target.
//
// Each message's origin is found from its format and the account's
// configuration (Resolver.Route); the copy is delivered to that origin
// only (Publisher):
//
//   - a function: Invoke with InvocationType Event — accepted (202) means
//     Lambda queued the event, not that the function processed it; the
//     function's own retries and DLQ apply again;
//   - an SNS subscription: what SNS delivers to that endpoint, to that
//     endpoint only (never Publish to the topic, which would reach every
//     subscriber): an SQS endpoint gets SendMessage of the envelope or, with
//     raw message delivery, of the raw message with its attributes; a
//     Lambda endpoint is invoked asynchronously with the SNS event
//     ({"Records":[{"EventSource":"aws:sns","Sns":{…}}]});
//   - an EventBridge target: its SQS queue (SendMessage) or Lambda function
//     (asynchronous Invoke) — never PutEvents to the bus, where every rule
//     would match again.
//
// A message whose origin cannot be determined, is ambiguous, or cannot be
// replayed faithfully is skipped with the reason ("cannot replay: …"), and
// stays in the DLQ.
package origins

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// Kind is what an origin is.
type Kind string

// Origin kinds.
const (
	KindFunction     Kind = "lambda-function"
	KindSubscription Kind = "sns-subscription"
	KindTarget       Kind = "eventbridge-target"
)

// Delivery is how a copy reaches its origin.
type Delivery int

const (
	// ViaInvoke: lambda Invoke, InvocationType Event.
	ViaInvoke Delivery = iota
	// ViaQueue: sqs SendMessage to the endpoint / target queue.
	ViaQueue
)

// Shape is how the DLQ message becomes what the origin receives.
type Shape int

const (
	// ShapeBody: the DLQ message's body, unchanged.
	ShapeBody Shape = iota
	// ShapeRequestPayload: the requestPayload of a Lambda on-failure
	// destination record, byte for byte.
	ShapeRequestPayload
	// ShapeSNSEvent: the SNS envelope in the DLQ body, wrapped in the event
	// SNS invokes a Lambda subscriber with.
	ShapeSNSEvent
	// ShapeStreamBatch: the Kinesis records an on-failure record points to,
	// read back from the stream, as the Kinesis event.
	ShapeStreamBatch
)

// Origin is where a message came from, and how to give it back.
type Origin struct {
	Kind Kind
	// ID identifies the origin: a function ARN, a subscription ARN, or
	// "RULE_ARN|TARGET_ID" for a target.
	ID string
	// Label names it in plans and reports.
	Label string
	// Guarantee says what "accepted" means for this origin (docs, -v).
	Guarantee string

	Delivery Delivery
	// Function is the function to invoke (ViaInvoke).
	Function string
	// Queue is the queue to send to (ViaQueue).
	Queue *sqs.Queue
	// SubscriptionARN is the subscription replayed (ShapeSNSEvent).
	SubscriptionARN string

	// Returns, Need and Why: whether a copy that fails again comes back to
	// the DLQ, after how long at most, and why (the canary's window).
	Returns bool
	Need    time.Duration
	Why     string
}

// delivery is a Destination's Target: the origin and the shape of this
// message for it.
type delivery struct {
	o     *Origin
	shape Shape
	// payload is this message's event when it was read from elsewhere
	// (ShapeStreamBatch).
	payload []byte
}

// destination is the engine's Destination for o (copies of one shape to one
// origin batch together).
func destination(o *Origin, shape Shape) broker.Destination {
	return broker.Destination{Key: fmt.Sprintf("%s|%s|%d", o.Kind, o.ID, shape), Label: o.Label, Target: &delivery{o: o, shape: shape}}
}

// OriginOf returns the origin a Destination built by this package names.
func OriginOf(d broker.Destination) (*Origin, bool) {
	dl, ok := d.Target.(*delivery)
	if !ok {
		return nil, false
	}
	return dl.o, true
}

// arnPart returns the i-th colon-separated part of an ARN ("" if absent).
func arnPart(arn string, i int) string {
	p := strings.SplitN(arn, ":", 7)
	if i < len(p) {
		return p[i]
	}
	return ""
}

// service is an ARN's service ("lambda", "sqs", "sns", "events").
func service(arn string) string { return arnPart(arn, 2) }

// functionName is the name in a function ARN (no qualifier), or the
// reference itself.
func functionName(ref string) string {
	if service(ref) == "lambda" {
		return arnPart(arn7(ref), 6)
	}
	return ref
}

// arn7 splits "…:function:NAME[:QUALIFIER]" so part 6 is NAME.
func arn7(arn string) string {
	p := strings.Split(arn, ":")
	if len(p) >= 7 {
		return strings.Join(p[:7], ":")
	}
	return arn
}

// ruleName is the rule name (and its bus) in a rule ARN:
// arn:aws:events:REGION:ACCOUNT:rule/[BUS/]NAME.
func ruleName(arn string) (bus, name string) {
	res := arnPart(arn, 5)
	res = strings.TrimPrefix(res, "rule/")
	if b, n, ok := strings.Cut(res, "/"); ok {
		return b, n
	}
	return "", res
}
