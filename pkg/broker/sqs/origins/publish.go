package origins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// MaxInvokePayload is the largest event Lambda accepts for an asynchronous
// invocation (1 MiB).
const MaxInvokePayload = 1 << 20

// Publisher delivers copies to their origins: it is the engine's
// broker.Publisher for a Resolver's destinations.
type Publisher struct {
	lambda *lambda.Client
	queue  *sqs.Publisher
}

// NewPublisher delivers with these clients (nil clients: Prepare only, for
// dry runs).
func NewPublisher(c Clients) *Publisher {
	return &Publisher{lambda: c.Lambda, queue: sqs.NewPublisher(c.SQS)}
}

type invokeEntry struct {
	payload []byte
}

func target(dest broker.Destination) (*delivery, error) {
	d, ok := dest.Target.(*delivery)
	if !ok || d == nil || d.o == nil {
		return nil, errors.New("the destination is not an AWS origin")
	}
	return d, nil
}

// Prepare builds what the origin receives.
func (p *Publisher) Prepare(rec *record.Record, dest broker.Destination, opt broker.CopyOptions) (broker.Outgoing, string) {
	if _, ok := dest.Target.(*sqs.Queue); ok { // Resolver.Fallback
		return p.queue.Prepare(rec, dest, opt)
	}
	d, err := target(dest)
	if err != nil {
		return broker.Outgoing{}, err.Error()
	}
	if d.o.Delivery == ViaQueue {
		cp := *rec
		if d.o.Kind == KindTarget {
			// What EventBridge added when it dead-lettered the event is not
			// part of what the target receives.
			cp.Attributes = make(map[string]record.Attribute, len(rec.Attributes))
			for k, v := range rec.Attributes {
				cp.Attributes[k] = v
			}
			for _, k := range ebAttributes {
				delete(cp.Attributes, k)
			}
		}
		return p.queue.Prepare(&cp, sqs.QueueTarget(d.o.Queue), opt)
	}
	var payload []byte
	switch d.shape {
	case ShapeRequestPayload:
		dr, ok := parseDestinationRecord(rec.Body)
		if !ok || dr.RequestPayload == nil {
			return broker.Outgoing{}, SkipCannot + ": not a Lambda destination record with requestPayload"
		}
		payload = dr.RequestPayload
	case ShapeStreamBatch:
		payload = d.payload
	case ShapeSNSEvent:
		b, err := snsLambdaEvent(rec.Body, d.o.SubscriptionARN)
		if err != nil {
			return broker.Outgoing{}, SkipCannot + ": " + err.Error()
		}
		payload = b
	default:
		payload = []byte(rec.Body)
	}
	if !json.Valid(payload) {
		return broker.Outgoing{}, SkipCannot + ": the event is not JSON, which Lambda's Invoke requires"
	}
	if len(payload) > MaxInvokePayload {
		return broker.Outgoing{}, broker.SkipTooLarge
	}
	// An invocation carries no attributes: the run's journal is the only
	// record of the redrive.
	return broker.Outgoing{Size: len(payload), Marked: false, Native: invokeEntry{payload: payload}}, ""
}

// Publish delivers one batch to one origin.
func (p *Publisher) Publish(ctx context.Context, dest broker.Destination, batch []broker.Outgoing) ([]broker.Result, error) {
	if _, ok := dest.Target.(*sqs.Queue); ok { // Resolver.Fallback
		return p.queue.Publish(ctx, dest, batch)
	}
	d, err := target(dest)
	if err != nil {
		return nil, err
	}
	if d.o.Delivery == ViaQueue {
		return p.queue.Publish(ctx, sqs.QueueTarget(d.o.Queue), batch)
	}
	if p.lambda == nil {
		return nil, errors.New("no Lambda client")
	}
	out := make([]broker.Result, len(batch))
	var wg sync.WaitGroup
	for i, o := range batch {
		e, ok := o.Native.(invokeEntry)
		if !ok {
			out[i].Err = broker.Rejected(errors.New("the copy was not prepared for Lambda"))
			continue
		}
		wg.Add(1)
		go func(i int, e invokeEntry) {
			defer wg.Done()
			out[i] = p.invoke(ctx, d.o.Function, e.payload)
		}(i, e)
	}
	wg.Wait()
	return out, nil
}

// invoke calls Invoke (Event). 202 is "accepted"; a 4xx answer means Lambda
// certainly did not queue it; anything else leaves the outcome unknown.
func (p *Publisher) invoke(ctx context.Context, fn string, payload []byte) broker.Result {
	res, err := p.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), InvocationType: lambdatypes.InvocationTypeEvent, Payload: payload})
	if err != nil {
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
			return broker.Result{Err: broker.Rejected(err)}
		}
		return broker.Result{Err: err}
	}
	r := broker.Result{MaybeTwice: sqs.AttemptsThatMayHaveActed(res.ResultMetadata) > 0}
	if res.StatusCode != 202 {
		r.Err = fmt.Errorf("lambda Invoke (Event) of %s answered %d, not 202", fn, res.StatusCode)
		return r
	}
	r.ID, _ = awsmiddleware.GetRequestIDMetadata(res.ResultMetadata)
	if r.ID == "" {
		r.ID = "202"
	}
	return r
}

// Close releases nothing: the clients are shared.
func (p *Publisher) Close(context.Context) error { return nil }

// snsLambdaEvent wraps an SNS notification envelope in the event SNS
// invokes a Lambda subscriber with.
func snsLambdaEvent(body, subscription string) ([]byte, error) {
	var env map[string]any
	if err := json.Unmarshal([]byte(body), &env); err != nil || env["Type"] != "Notification" {
		return nil, errors.New("the message is not an SNS notification envelope")
	}
	sns := map[string]any{}
	rename := map[string]string{"SigningCertURL": "SigningCertUrl", "UnsubscribeURL": "UnsubscribeUrl"}
	for k, v := range env {
		if n, ok := rename[k]; ok {
			k = n
		}
		sns[k] = v
	}
	if _, ok := sns["MessageAttributes"]; !ok {
		sns["MessageAttributes"] = map[string]any{}
	}
	if _, ok := sns["Subject"]; !ok {
		sns["Subject"] = nil
	}
	return json.Marshal(map[string]any{"Records": []any{map[string]any{
		"EventSource":          "aws:sns",
		"EventVersion":         "1.0",
		"EventSubscriptionArn": subscription,
		"Sns":                  sns,
	}}})
}
