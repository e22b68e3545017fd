package origins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Clients are the AWS clients origins need (each may be nil until a
// message needs it; cmd builds them all).
type Clients struct {
	Lambda *lambda.Client
	SNS    *sns.Client
	Events *eventbridge.Client
	SQS    *sqs.Client
	// Kinesis reads back the batches Kinesis on-failure records point to
	// (nil: such records are reported as "cannot replay").
	Kinesis *kinesis.Client
}

// Skip reasons (prefixes; the rest names the origin or the fix).
const (
	SkipNoOrigin  = "no origin"
	SkipAmbiguous = "ambiguous origin"
	SkipCannot    = "cannot replay"
	SkipGone      = "origin gone"
)

// Resolver routes each message of one DLQ to its origin. It is the
// engine's broker.Router.
type Resolver struct {
	c   Clients
	dlq *sqs.Queue
	// explicit is --origin: a function or subscription ARN that messages
	// which do not name their origin go to.
	explicit string
	// Fallback routes messages that name an SQS source queue
	// (DeadLetterQueueSourceArn) there, as redrive --to source always did.
	Fallback broker.Router

	// discover serialises the account-wide listings, so the workers
	// that meet the first message of a kind list the account once.
	discover  sync.Mutex
	mu        sync.Mutex
	functions map[string]*Origin // by function ARN (with qualifier as given)
	gone      map[string]string  // origin id -> skip reason
	subs      map[string]*Origin // by subscription ARN
	targets   map[string]*Origin // by RULE_ARN|TARGET_ARN
	dlqFns    []string           // functions whose DeadLetterConfig names the DLQ
	destFns   []string           // functions whose on-failure destination is the DLQ
	dlqSubs   []string           // subscriptions whose RedrivePolicy names the DLQ
	ebTargets []*Origin          // targets whose DeadLetterConfig names the DLQ
	found     map[Kind]bool      // discovery done
	// listErr says why an account-wide listing failed (by kind): the
	// messages that needed it stay in the DLQ with that reason.
	listErr map[Kind]string
}

// NewResolver resolves origins for dlq. explicit ("" for none) is a Lambda
// function ARN or an SNS subscription ARN (--origin).
func NewResolver(c Clients, dlq *sqs.Queue, explicit string) (*Resolver, error) {
	r := &Resolver{c: c, dlq: dlq, explicit: explicit, functions: map[string]*Origin{}, gone: map[string]string{},
		subs: map[string]*Origin{}, targets: map[string]*Origin{}, found: map[Kind]bool{}, listErr: map[Kind]string{}}
	if explicit != "" {
		switch {
		case service(explicit) == "lambda" && arnPart(explicit, 5) == "function":
		case service(explicit) == "sns" && strings.Count(explicit, ":") == 6:
		default:
			return nil, errs.BadInputf("--origin %q is neither a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME) nor an SNS subscription ARN (arn:aws:sns:REGION:ACCOUNT:TOPIC:ID); EventBridge target DLQ messages name their target themselves", explicit)
		}
	}
	return r, nil
}

// ValidateExplicit checks that --origin exists (before anything moves).
func (r *Resolver) ValidateExplicit(ctx context.Context) error {
	if r.explicit == "" {
		return nil
	}
	var o *Origin
	var skip string
	var err error
	if service(r.explicit) == "lambda" {
		o, skip, err = r.function(ctx, r.explicit)
	} else {
		o, skip, err = r.subscription(ctx, r.explicit)
	}
	if err != nil {
		return err
	}
	if o == nil {
		return errs.BadInputf("--origin %s: %s", r.explicit, skip)
	}
	return nil
}

// Describe names the routing for plans and prompts.
func (r *Resolver) Describe() string {
	if r.explicit != "" {
		return "source (each message's origin; --origin " + r.explicit + ")"
	}
	return "source (each message's origin: Lambda function, SNS subscription or EventBridge target)"
}

// EventBridge target DLQ attributes (what EventBridge adds).
var ebAttributes = []string{"RULE_ARN", "TARGET_ARN", "ERROR_CODE", "ERROR_MESSAGE", "EXHAUSTED_RETRY_CONDITION", "RETRY_ATTEMPTS"}

func attr(rec *record.Record, name string) (string, bool) {
	a, ok := rec.Attributes[name]
	if !ok {
		return "", false
	}
	return a.Value, true
}

// destinationRecord is a Lambda on-failure destination record.
type destinationRecord struct {
	Version        string `json:"version"`
	RequestContext *struct {
		FunctionArn string `json:"functionArn"`
		Condition   string `json:"condition"`
	} `json:"requestContext"`
	RequestPayload json.RawMessage `json:"requestPayload"`
	// Stream sources record pointers to the batch, not the payload.
	KinesisBatchInfo   *batchInfo `json:"KinesisBatchInfo"`
	DDBStreamBatchInfo *batchInfo `json:"DDBStreamBatchInfo"`
	MSKBatchInfo       any        `json:"MSKBatchInfo"`
	KafkaBatchInfo     any        `json:"KafkaBatchInfo"`
}

type batchInfo struct {
	ShardID             string `json:"shardId"`
	StartSequenceNumber string `json:"startSequenceNumber"`
	EndSequenceNumber   string `json:"endSequenceNumber"`
	StreamArn           string `json:"streamArn"`
	BatchSize           int    `json:"batchSize"`
}

// Route finds the message's origin, or says why it has none.
func (r *Resolver) Route(ctx context.Context, rec *record.Record) (broker.Destination, string, error) {
	if rec.System.SourceQueueARN != "" && r.Fallback != nil {
		return r.Fallback.Route(ctx, rec)
	}
	// EventBridge target DLQ: the message names its rule and target.
	if rule, ok := attr(rec, "RULE_ARN"); ok {
		if target, ok := attr(rec, "TARGET_ARN"); ok {
			o, skip, err := r.target(ctx, rule, target)
			if o == nil || err != nil {
				return broker.Destination{}, skip, err
			}
			shape := ShapeBody
			return destination(o, shape), "", nil
		}
	}
	// Lambda on-failure destination record: it names its function.
	if dr, ok := parseDestinationRecord(rec.Body); ok {
		if dr.RequestPayload == nil && dr.KinesisBatchInfo != nil && r.c.Kinesis != nil {
			o, skip, err := r.function(ctx, dr.RequestContext.FunctionArn)
			if o == nil || err != nil {
				return broker.Destination{}, skip, err
			}
			payload, skip, err := r.kinesisBatch(ctx, dr.KinesisBatchInfo)
			if payload == nil || err != nil {
				return broker.Destination{}, skip, err
			}
			d := destination(o, ShapeStreamBatch)
			d.Target.(*delivery).payload = payload
			return d, "", nil
		}
		if dr.RequestPayload == nil {
			return broker.Destination{}, streamSkip(dr), nil
		}
		o, skip, err := r.function(ctx, dr.RequestContext.FunctionArn)
		if o == nil || err != nil {
			return broker.Destination{}, skip, err
		}
		return destination(o, ShapeRequestPayload), "", nil
	}
	// Lambda async DLQ (RequestID + ErrorCode/ErrorMessage): the function
	// whose DeadLetterConfig names this queue.
	_, hasID := attr(rec, "RequestID")
	_, hasCode := attr(rec, "ErrorCode")
	_, hasMsg := attr(rec, "ErrorMessage")
	if hasID && (hasCode || hasMsg) {
		if r.explicit != "" && service(r.explicit) == "lambda" {
			o, skip, err := r.function(ctx, r.explicit)
			if o == nil || err != nil {
				return broker.Destination{}, skip, err
			}
			return destination(o, ShapeBody), "", nil
		}
		if r.explicit != "" {
			return broker.Destination{}, SkipCannot + ": a Lambda asynchronous invocation record (RequestID, ErrorCode) and --origin names a subscription; pass --origin FUNCTION_ARN", nil
		}
		fns, err := r.deadLetterFunctions(ctx)
		if err != nil {
			skip, err := r.listFailed(ctx, KindFunction, err)
			return broker.Destination{}, skip, err
		}
		switch len(fns) {
		case 0:
			return broker.Destination{}, SkipNoOrigin + ": no Lambda function's DeadLetterConfig names " + r.dlq.Name + "; name the function with --origin FUNCTION_ARN", nil
		case 1:
			o, skip, err := r.function(ctx, fns[0])
			if o == nil || err != nil {
				return broker.Destination{}, skip, err
			}
			return destination(o, ShapeBody), "", nil
		default:
			return broker.Destination{}, fmt.Sprintf("%s: %d functions name %s as their DeadLetterConfig (%s); pick one with --origin FUNCTION_ARN", SkipAmbiguous, len(fns), r.dlq.Name, names(fns)), nil
		}
	}
	// Otherwise: an SNS subscription's DLQ, or --origin.
	if r.explicit != "" {
		if service(r.explicit) == "lambda" {
			o, skip, err := r.function(ctx, r.explicit)
			if o == nil || err != nil {
				return broker.Destination{}, skip, err
			}
			return destination(o, ShapeBody), "", nil
		}
		return r.routeSubscription(ctx, rec, r.explicit)
	}
	subs, err := r.deadLetterSubscriptions(ctx)
	if err != nil {
		skip, err := r.listFailed(ctx, KindSubscription, err)
		return broker.Destination{}, skip, err
	}
	switch len(subs) {
	case 0:
		return broker.Destination{}, SkipNoOrigin + ": the message names no origin and no SNS subscription, Lambda function or EventBridge target uses " + r.dlq.Name + " as its DLQ; name it with --origin ARN", nil
	case 1:
		return r.routeSubscription(ctx, rec, subs[0])
	default:
		return broker.Destination{}, fmt.Sprintf("%s: %d SNS subscriptions share %s as their DLQ and the message does not say which one failed (%s); pick one with --origin SUBSCRIPTION_ARN", SkipAmbiguous, len(subs), r.dlq.Name, strings.Join(subs, ", ")), nil
	}
}

func names(arns []string) string {
	out := make([]string, len(arns))
	for i, a := range arns {
		out[i] = functionName(a)
	}
	return strings.Join(out, ", ")
}

func parseDestinationRecord(body string) (*destinationRecord, bool) {
	if !strings.Contains(body, "requestContext") {
		return nil, false
	}
	var dr destinationRecord
	if json.Unmarshal([]byte(body), &dr) != nil || dr.RequestContext == nil || dr.RequestContext.FunctionArn == "" {
		return nil, false
	}
	return &dr, true
}

// streamSkip says why a stream source's on-failure record cannot be
// replayed: it holds pointers to the batch, not the records.
func streamSkip(dr *destinationRecord) string {
	switch {
	case dr.KinesisBatchInfo != nil:
		b := dr.KinesisBatchInfo
		return fmt.Sprintf("%s: a Kinesis batch pointer (stream %s, shard %s, sequence %s to %s): the records are in the stream, not the message; read them back with the stream's tools while they are retained",
			SkipCannot, b.StreamArn, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber)
	case dr.DDBStreamBatchInfo != nil:
		b := dr.DDBStreamBatchInfo
		return fmt.Sprintf("%s: a DynamoDB Streams batch pointer (stream %s, shard %s, sequence %s to %s): the records are in the stream (24 h retention), not the message",
			SkipCannot, b.StreamArn, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber)
	case dr.MSKBatchInfo != nil || dr.KafkaBatchInfo != nil:
		return SkipCannot + ": a Kafka (MSK or self-managed) batch pointer: the records are in the topic, not the message"
	}
	return SkipCannot + ": a Lambda destination record without requestPayload"
}

// function returns the origin for a function ARN (cached), or why there is
// none.
func (r *Resolver) function(ctx context.Context, arn string) (*Origin, string, error) {
	r.mu.Lock()
	o, ok := r.functions[arn]
	gone := r.gone[arn]
	r.mu.Unlock()
	if ok || gone != "" {
		return o, gone, nil
	}
	in := &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(arn)}
	if p := strings.Split(arn, ":"); len(p) == 8 && p[5] == "function" {
		in.FunctionName, in.Qualifier = aws.String(strings.Join(p[:7], ":")), aws.String(p[7])
	}
	cfg, err := r.c.Lambda.GetFunctionConfiguration(ctx, in)
	if err != nil {
		if isNotFound(err) {
			r.setGone(arn, fmt.Sprintf("%s: Lambda function %s does not exist", SkipGone, arn))
			return nil, r.gone[arn], nil
		}
		return nil, "", awsErr("lambda:GetFunctionConfiguration", arn, err)
	}
	name := aws.ToString(cfg.FunctionName)
	o = &Origin{Kind: KindFunction, ID: arn, Label: "invoke function " + name + " (async)", Delivery: ViaInvoke, Function: arn,
		Guarantee: "Lambda accepted the event for asynchronous invocation (202): queued, not yet processed; the function's retries and DLQ apply again"}
	timeout := time.Duration(aws.ToInt32(cfg.Timeout)) * time.Second
	if timeout == 0 {
		timeout = 3 * time.Second
	}
	retries := int32(2)
	eic, err := r.c.Lambda.GetFunctionEventInvokeConfig(ctx, &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String(name)})
	onFailure := ""
	switch {
	case err == nil:
		if eic.MaximumRetryAttempts != nil {
			retries = *eic.MaximumRetryAttempts
		}
		if eic.DestinationConfig != nil && eic.DestinationConfig.OnFailure != nil {
			onFailure = aws.ToString(eic.DestinationConfig.OnFailure.Destination)
		}
	case isNotFound(err):
	default:
		return nil, "", awsErr("lambda:GetFunctionEventInvokeConfig", arn, err)
	}
	dlc := ""
	if cfg.DeadLetterConfig != nil {
		dlc = aws.ToString(cfg.DeadLetterConfig.TargetArn)
	}
	need := time.Duration(retries+1) * timeout
	backoff := ""
	if retries >= 1 {
		need += time.Minute
		backoff = " + 1m"
	}
	if retries >= 2 {
		need += 2 * time.Minute
		backoff = " + 1m + 2m"
	}
	need += broker.CanaryMargin
	switch {
	case dlc == r.dlq.ARN || onFailure == r.dlq.ARN:
		o.Returns, o.Need = true, need
		o.Why = fmt.Sprintf("function %s: %d attempt(s) × timeout %s%s (Lambda's retry backoff), + %s", name, retries+1, timeout, backoff, broker.CanaryMargin)
	case dlc != "":
		o.Why = fmt.Sprintf("function %s dead-letters into %s, not %s", name, arnPart(dlc, 5), r.dlq.Name)
	case onFailure != "":
		o.Why = fmt.Sprintf("function %s sends failures to %s, not %s", name, onFailure, r.dlq.Name)
	default:
		o.Why = fmt.Sprintf("function %s has no DLQ or on-failure destination: a copy that fails again is dropped", name)
	}
	r.mu.Lock()
	r.functions[arn] = o
	r.mu.Unlock()
	return o, "", nil
}

func (r *Resolver) setGone(id, why string) {
	r.mu.Lock()
	r.gone[id] = why
	r.mu.Unlock()
}

// deadLetterFunctions lists the functions whose DeadLetterConfig names the
// DLQ (lambda:ListFunctions).
func (r *Resolver) deadLetterFunctions(ctx context.Context) ([]string, error) {
	r.discover.Lock()
	defer r.discover.Unlock()
	r.mu.Lock()
	done, failed := r.found[KindFunction], r.listErr[KindFunction]
	r.mu.Unlock()
	if failed != "" {
		return nil, errors.New(failed)
	}
	if done {
		return r.dlqFns, nil
	}
	var fns []string
	p := lambda.NewListFunctionsPaginator(r.c.Lambda, &lambda.ListFunctionsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr("lambda:ListFunctions", "*", err)
		}
		for _, f := range page.Functions {
			if f.DeadLetterConfig != nil && aws.ToString(f.DeadLetterConfig.TargetArn) == r.dlq.ARN {
				fns = append(fns, aws.ToString(f.FunctionArn))
			}
		}
	}
	sort.Strings(fns)
	r.mu.Lock()
	r.dlqFns, r.found[KindFunction] = fns, true
	r.mu.Unlock()
	return fns, nil
}

// deadLetterSubscriptions lists the subscriptions whose RedrivePolicy names
// the DLQ (sns:ListSubscriptions, sns:GetSubscriptionAttributes).
func (r *Resolver) deadLetterSubscriptions(ctx context.Context) ([]string, error) {
	r.discover.Lock()
	defer r.discover.Unlock()
	r.mu.Lock()
	done, failed := r.found[KindSubscription], r.listErr[KindSubscription]
	r.mu.Unlock()
	if failed != "" {
		return nil, errors.New(failed)
	}
	if done {
		return r.dlqSubs, nil
	}
	found, err := subscriptionDLQs(ctx, r.c.SNS, func(dlq string) bool { return dlq == r.dlq.ARN }, awsErr)
	if err != nil {
		return nil, err
	}
	subs := make([]string, len(found))
	for i, s := range found {
		subs[i] = s.arn
	}
	r.mu.Lock()
	r.dlqSubs, r.found[KindSubscription] = subs, true
	r.mu.Unlock()
	return subs, nil
}

func redriveTarget(policy string) string {
	var p struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	_ = json.Unmarshal([]byte(policy), &p)
	return p.DeadLetterTargetArn
}

// subscription returns the origin for a subscription ARN (cached).
func (r *Resolver) subscription(ctx context.Context, arn string) (*Origin, string, error) {
	r.mu.Lock()
	o, ok := r.subs[arn]
	gone := r.gone[arn]
	r.mu.Unlock()
	if ok || gone != "" {
		return o, gone, nil
	}
	out, err := r.c.SNS.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	if err != nil {
		if isNotFound(err) {
			r.setGone(arn, fmt.Sprintf("%s: SNS subscription %s does not exist", SkipGone, arn))
			return nil, r.gone[arn], nil
		}
		return nil, "", awsErr("sns:GetSubscriptionAttributes", arn, err)
	}
	a := out.Attributes
	proto, endpoint := a["Protocol"], a["Endpoint"]
	topic := arnPart(a["TopicArn"], 5)
	label := fmt.Sprintf("subscription %s:%s (%s %s)", topic, arnPart(arn, 6), proto, lastPart(endpoint))
	o = &Origin{Kind: KindSubscription, ID: arn, SubscriptionARN: arn}
	switch proto {
	case "sqs":
		q, err := r.c.SQS.Resolve(ctx, endpoint)
		if err != nil {
			if sqs.IsNotFound(err) || errs.Code(err) == errs.ExitUsage {
				r.setGone(arn, fmt.Sprintf("%s: the SQS endpoint %s of subscription %s does not exist", SkipGone, endpoint, arn))
				return nil, r.gone[arn], nil
			}
			return nil, "", err
		}
		o.Delivery, o.Queue = ViaQueue, q
		raw := strings.EqualFold(a["RawMessageDelivery"], "true")
		o.Label = label
		if raw {
			o.Label += " raw"
		}
		o.ID = arn + map[bool]string{true: "|raw", false: "|envelope"}[raw]
		o.Guarantee = "SQS accepted the message into the subscription's queue (a message id); only that subscriber receives it"
		r.queueReturns(o, q)
	case "lambda":
		fo, skip, err := r.function(ctx, endpoint)
		if fo == nil || err != nil {
			if skip != "" {
				r.setGone(arn, skip)
			}
			return nil, skip, err
		}
		o.Delivery, o.Function, o.Label = ViaInvoke, endpoint, label
		o.Guarantee = "Lambda accepted the SNS event for asynchronous invocation (202); only that subscriber receives it"
		o.Returns, o.Need, o.Why = fo.Returns, fo.Need, fo.Why
	default:
		r.setGone(arn, fmt.Sprintf("%s: subscription %s delivers over %s; dlqctl replays SNS subscriptions with SQS and Lambda endpoints only (never by publishing to the topic, which would reach every subscriber)", SkipCannot, arn, proto))
		return nil, r.gone[arn], nil
	}
	r.mu.Lock()
	r.subs[arn] = o
	r.mu.Unlock()
	return o, "", nil
}

func lastPart(s string) string {
	if i := strings.LastIndexAny(s, ":/"); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	return s
}

// queueReturns fills the canary facts of an origin delivered to queue q: a
// copy that fails again comes back only if q dead-letters into the DLQ.
func (r *Resolver) queueReturns(o *Origin, q *sqs.Queue) {
	var rp sqs.RedrivePolicy
	if json.Unmarshal([]byte(q.Attrs["RedrivePolicy"]), &rp) != nil || rp.DeadLetterTargetARN == "" {
		o.Why = fmt.Sprintf("queue %s has no DLQ: a copy its consumer fails stays there", q.Name)
		return
	}
	if rp.DeadLetterTargetARN != r.dlq.ARN {
		o.Why = fmt.Sprintf("queue %s dead-letters into %s, not %s: watch that DLQ for returns", q.Name, sqs.NameFromARN(rp.DeadLetterTargetARN), r.dlq.Name)
		return
	}
	vis, _ := strconv.Atoi(q.Attrs["VisibilityTimeout"])
	o.Returns = true
	o.Need = time.Duration(rp.MaxReceiveCount)*time.Duration(vis)*time.Second + broker.CanaryMargin
	o.Why = fmt.Sprintf("maxReceiveCount %d × visibility timeout %ds of %s, + %s", rp.MaxReceiveCount, vis, q.Name, broker.CanaryMargin)
}

// routeSubscription routes rec to subscription arn in the shape its
// endpoint receives.
func (r *Resolver) routeSubscription(ctx context.Context, rec *record.Record, arn string) (broker.Destination, string, error) {
	o, skip, err := r.subscription(ctx, arn)
	if o == nil || err != nil {
		return broker.Destination{}, skip, err
	}
	envelope := isSNSEnvelope(rec.Body)
	switch {
	case o.Delivery == ViaInvoke && !envelope:
		return broker.Destination{}, SkipCannot + ": subscription " + arn + " invokes a Lambda function with the SNS envelope, but the message is not an SNS notification envelope", nil
	case o.Delivery == ViaInvoke:
		return destination(o, ShapeSNSEvent), "", nil
	case strings.HasSuffix(o.ID, "|envelope") && !envelope:
		return broker.Destination{}, SkipCannot + ": subscription " + arn + " delivers the SNS envelope (raw message delivery is off), but the message is not one", nil
	}
	return destination(o, ShapeBody), "", nil
}

func isSNSEnvelope(body string) bool {
	var e struct {
		Type     string
		TopicArn string
		Message  *string
	}
	return json.Unmarshal([]byte(body), &e) == nil && e.Type == "Notification" && e.TopicArn != "" && e.Message != nil
}

// target returns the origin for an EventBridge rule target (cached).
func (r *Resolver) target(ctx context.Context, ruleARN, targetARN string) (*Origin, string, error) {
	key := ruleARN + "|" + targetARN
	r.mu.Lock()
	o, ok := r.targets[key]
	gone := r.gone[key]
	r.mu.Unlock()
	if ok || gone != "" {
		return o, gone, nil
	}
	bus, rule := ruleName(ruleARN)
	in := &eventbridge.ListTargetsByRuleInput{Rule: aws.String(rule)}
	if bus != "" {
		in.EventBusName = aws.String(bus)
	}
	var matches []ebtypes.Target
	all, err := r.listTargets(ctx, in)
	if err != nil {
		if isNotFound(err) {
			r.setGone(key, fmt.Sprintf("%s: EventBridge rule %s does not exist", SkipGone, ruleARN))
			return nil, r.gone[key], nil
		}
		return nil, "", awsErr("events:ListTargetsByRule", ruleARN, err)
	}
	for _, t := range all {
		if aws.ToString(t.Arn) == targetARN {
			matches = append(matches, t)
		}
	}
	o, skip, err := r.targetOrigin(ctx, ruleARN, targetARN, rule, matches)
	if err != nil {
		return nil, "", err
	}
	r.mu.Lock()
	if o != nil {
		r.targets[key] = o
	} else {
		r.gone[key] = skip
	}
	r.mu.Unlock()
	return o, skip, nil
}

func (r *Resolver) targetOrigin(ctx context.Context, ruleARN, targetARN, rule string, matches []ebtypes.Target) (*Origin, string, error) {
	switch len(matches) {
	case 0:
		return nil, fmt.Sprintf("%s: rule %s has no target %s any more", SkipGone, rule, targetARN), nil
	case 1:
	default:
		return nil, fmt.Sprintf("%s: rule %s has %d targets with ARN %s (the message does not say which failed)", SkipAmbiguous, rule, len(matches), targetARN), nil
	}
	t := matches[0]
	id := aws.ToString(t.Id)
	if t.Input != nil || t.InputPath != nil || t.InputTransformer != nil {
		return nil, fmt.Sprintf("%s: target %s of rule %s rewrites the event (Input, InputPath or InputTransformer) and AWS does not document whether the DLQ holds the event before or after that; replay it yourself", SkipCannot, id, rule), nil
	}
	o := &Origin{Kind: KindTarget, ID: ruleARN + "|" + id}
	label := fmt.Sprintf("target %s of rule %s", id, rule)
	switch service(targetARN) {
	case "sqs":
		q, err := r.c.SQS.Resolve(ctx, targetARN)
		if err != nil {
			if sqs.IsNotFound(err) || errs.Code(err) == errs.ExitUsage {
				return nil, fmt.Sprintf("%s: the SQS queue %s of target %s does not exist", SkipGone, targetARN, id), nil
			}
			return nil, "", err
		}
		if q.FIFO {
			return nil, fmt.Sprintf("%s: target %s is a FIFO queue and the DLQ message carries no message group (the target's SqsParameters chose it)", SkipCannot, id), nil
		}
		o.Delivery, o.Queue, o.Label = ViaQueue, q, label+" (sqs "+q.Name+")"
		o.Guarantee = "SQS accepted the event into the target's queue (a message id); no other target or rule sees it"
		r.queueReturns(o, q)
	case "lambda":
		fo, skip, err := r.function(ctx, targetARN)
		if fo == nil || err != nil {
			return nil, skip, err
		}
		o.Delivery, o.Function, o.Label = ViaInvoke, targetARN, label+" (lambda "+functionName(targetARN)+", async)"
		o.Guarantee = "Lambda accepted the event for asynchronous invocation (202); no other target or rule sees it"
		o.Returns, o.Need, o.Why = fo.Returns, fo.Need, fo.Why
		if !o.Returns {
			o.Why += "; EventBridge's own DLQ only receives events EventBridge could not deliver"
		}
	default:
		return nil, fmt.Sprintf("%s: target %s of rule %s is a %s target; dlqctl replays EventBridge targets that are SQS queues or Lambda functions (never PutEvents to the bus, which every rule would match again)", SkipCannot, id, rule, service(targetARN)), nil
	}
	return o, "", nil
}

// deadLetterTargets lists the rule targets whose DeadLetterConfig names the
// DLQ (events:ListEventBuses, events:ListRules, events:ListTargetsByRule).
func (r *Resolver) deadLetterTargets(ctx context.Context) ([]*Origin, error) {
	r.discover.Lock()
	defer r.discover.Unlock()
	r.mu.Lock()
	done := r.found[KindTarget]
	r.mu.Unlock()
	if done {
		return r.ebTargets, nil
	}
	var out []*Origin
	buses := []string{"default"}
	var next *string
	for {
		page, err := r.c.Events.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{NextToken: next})
		if err != nil {
			return nil, awsErr("events:ListEventBuses", "*", err)
		}
		for _, b := range page.EventBuses {
			if n := aws.ToString(b.Name); n != "default" {
				buses = append(buses, n)
			}
		}
		if next = page.NextToken; next == nil {
			break
		}
	}
	for _, bus := range buses {
		var next *string
		for {
			page, err := r.c.Events.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String(bus), NextToken: next})
			if err != nil {
				return nil, awsErr("events:ListRules", bus, err)
			}
			for _, rule := range page.Rules {
				in := &eventbridge.ListTargetsByRuleInput{Rule: rule.Name, EventBusName: aws.String(bus)}
				targets, err := r.listTargets(ctx, in)
				if err != nil {
					return nil, awsErr("events:ListTargetsByRule", aws.ToString(rule.Arn), err)
				}
				for _, t := range targets {
					if t.DeadLetterConfig != nil && aws.ToString(t.DeadLetterConfig.Arn) == r.dlq.ARN {
						o, _, err := r.target(ctx, aws.ToString(rule.Arn), aws.ToString(t.Arn))
						if err != nil {
							return nil, err
						}
						if o != nil {
							out = append(out, o)
						}
					}
				}
			}
			if next = page.NextToken; next == nil {
				break
			}
		}
	}
	r.mu.Lock()
	r.ebTargets, r.found[KindTarget] = out, true
	r.mu.Unlock()
	return out, nil
}

// Candidates are the origins the account's configuration names for this
// DLQ (and --origin): what a canary's copies may go to.
func (r *Resolver) Candidates(ctx context.Context) ([]*Origin, error) {
	var out []*Origin
	if r.explicit != "" {
		var o *Origin
		var err error
		if service(r.explicit) == "lambda" {
			o, _, err = r.function(ctx, r.explicit)
		} else {
			o, _, err = r.subscription(ctx, r.explicit)
		}
		if err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, o)
		}
	}
	fns, err := r.deadLetterFunctions(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range fns {
		if o, _, err := r.function(ctx, f); err != nil {
			return nil, err
		} else if o != nil {
			out = append(out, o)
		}
	}
	subs, err := r.deadLetterSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range subs {
		if o, _, err := r.subscription(ctx, s); err != nil {
			return nil, err
		} else if o != nil {
			out = append(out, o)
		}
	}
	ts, err := r.deadLetterTargets(ctx)
	if err != nil {
		return nil, err
	}
	return append(out, ts...), nil
}

// isNotFound reports an AWS "no such resource" answer.
func isNotFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ResourceNotFoundException", "NotFound", "NotFoundException":
			return true
		}
	}
	return false
}

// awsErr turns an AccessDenied into bad input naming the IAM action.
func awsErr(action, resource string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDenied", "AccessDeniedException", "AuthorizationError", "AuthorizationErrorException":
			return errs.BadInputf("AccessDenied: finding the DLQ's origins needs %s on %s (dlqctl help iam): %s", action, resource, ae.ErrorMessage())
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%s on %s: %w", action, resource, err)
}

// listTargets reads every target of a rule.
func (r *Resolver) listTargets(ctx context.Context, in *eventbridge.ListTargetsByRuleInput) ([]ebtypes.Target, error) {
	var out []ebtypes.Target
	for {
		page, err := r.c.Events.ListTargetsByRule(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Targets...)
		if page.NextToken == nil {
			return out, nil
		}
		next := *in
		next.NextToken = page.NextToken
		in = &next
	}
}

// Unreplayed counts the messages of a run that stayed in the DLQ because
// their origin is unknown, ambiguous, gone or cannot be replayed (skip
// reasons of this package): work left, exit 4.
func Unreplayed(skipped map[string]int) int {
	n := 0
	for reason, c := range skipped {
		for _, p := range []string{SkipNoOrigin, SkipAmbiguous, SkipCannot, SkipGone} {
			if strings.HasPrefix(reason, p+":") {
				n += c
			}
		}
	}
	return n
}

// listFailed turns a failed account-wide listing into a skip reason (the
// message stays in the DLQ, named): a DLQ redriven --to source whose
// messages name no SQS source must not fail as a whole because the caller
// may not list Lambda functions or SNS subscriptions. An interrupted run
// stays an error.
func (r *Resolver) listFailed(ctx context.Context, kind Kind, err error) (string, error) {
	if ctx.Err() != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listErr[kind] == "" {
		r.listErr[kind] = fmt.Sprintf("%s: could not find which %s uses %s as its DLQ: %v", SkipNoOrigin, map[Kind]string{KindFunction: "Lambda function", KindSubscription: "SNS subscription"}[kind], r.dlq.Name, err)
	}
	return r.listErr[kind], nil
}
