// Package queue is dlqctl's access to SQS: queue references (name, URL or
// ARN), receive/peek/release, lease heartbeats, batch send/delete with
// per-entry retry, and the message record.
package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// API is the narrow part of the SQS client dlqctl uses; *awssqs.Client
// satisfies it, and unit tests may use the shared fake.
type API interface {
	GetQueueUrl(context.Context, *awssqs.GetQueueUrlInput, ...func(*awssqs.Options)) (*awssqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
	ListQueues(context.Context, *awssqs.ListQueuesInput, ...func(*awssqs.Options)) (*awssqs.ListQueuesOutput, error)
	ListDeadLetterSourceQueues(context.Context, *awssqs.ListDeadLetterSourceQueuesInput, ...func(*awssqs.Options)) (*awssqs.ListDeadLetterSourceQueuesOutput, error)
	ReceiveMessage(context.Context, *awssqs.ReceiveMessageInput, ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *awssqs.ChangeMessageVisibilityBatchInput, ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityBatchOutput, error)
	DeleteMessageBatch(context.Context, *awssqs.DeleteMessageBatchInput, ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error)
	SendMessageBatch(context.Context, *awssqs.SendMessageBatchInput, ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error)
	StartMessageMoveTask(context.Context, *awssqs.StartMessageMoveTaskInput, ...func(*awssqs.Options)) (*awssqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(context.Context, *awssqs.ListMessageMoveTasksInput, ...func(*awssqs.Options)) (*awssqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(context.Context, *awssqs.CancelMessageMoveTaskInput, ...func(*awssqs.Options)) (*awssqs.CancelMessageMoveTaskOutput, error)
}

// Limits of real SQS that dlqctl enforces itself (the emulator may not).
const (
	MaxBatchEntries    = 10
	MaxBatchBytes      = 1 << 20
	MaxMessageBytes    = 1 << 20
	MaxAttributes      = 10
	MaxVisibility      = 12 * time.Hour
	FIFODedupWindow    = 5 * time.Minute
	maxEntryRetries    = 5
	entryRetryBaseWait = 100 * time.Millisecond
)

// Client wraps the SQS API with dlqctl's safety habits.
type Client struct {
	API    API
	Region string
	// BatchConcurrency bounds the batch calls (visibility changes, deletes)
	// in flight at once for one operation; 0 means DefaultBatchConcurrency.
	BatchConcurrency int
}

// New returns a Client over api.
func New(api API, region string) *Client {
	return &Client{API: api, Region: region}
}

// Queue is a resolved queue reference.
type Queue struct {
	URL   string
	ARN   string
	Name  string
	FIFO  bool
	Attrs map[string]string
}

// RedrivePolicy is a queue's RedrivePolicy attribute.
type RedrivePolicy struct {
	DeadLetterTargetARN string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

// UnmarshalJSON accepts maxReceiveCount as a number or a string (SQS returns
// either, depending on protocol and how the policy was set).
func (p *RedrivePolicy) UnmarshalJSON(b []byte) error {
	var raw struct {
		DeadLetterTargetARN string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p.DeadLetterTargetARN = raw.DeadLetterTargetARN
	s := strings.Trim(string(raw.MaxReceiveCount), `"`)
	if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("maxReceiveCount %s is not a number", s)
		}
		p.MaxReceiveCount = n
	}
	return nil
}

// RedrivePolicy returns the queue's parsed RedrivePolicy, or nil.
func (q *Queue) RedrivePolicy() *RedrivePolicy {
	s := q.Attrs[string(types.QueueAttributeNameRedrivePolicy)]
	if s == "" {
		return nil
	}
	var p RedrivePolicy
	if json.Unmarshal([]byte(s), &p) != nil || p.DeadLetterTargetARN == "" {
		return nil
	}
	return &p
}

// Retention is the queue's MessageRetentionPeriod (0 when unknown).
func (q *Queue) Retention() time.Duration {
	return time.Duration(q.intAttr(types.QueueAttributeNameMessageRetentionPeriod)) * time.Second
}

// VisibilityTimeout is the queue's default visibility timeout.
func (q *Queue) VisibilityTimeout() time.Duration {
	return time.Duration(q.intAttr(types.QueueAttributeNameVisibilityTimeout)) * time.Second
}

// Counts are the approximate visible, in-flight and delayed depths.
type Counts struct {
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	Delayed  int `json:"delayed"`
}

// Counts returns the approximate depths from the last attribute read.
func (q *Queue) Counts() Counts {
	return Counts{
		Visible:  q.intAttr(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight: q.intAttr(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:  q.intAttr(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}
}

func (q *Queue) intAttr(n types.QueueAttributeName) int {
	v, _ := strconv.Atoi(q.Attrs[string(n)])
	return v
}

// NameFromARN returns the queue name of an SQS ARN ("" if it is not one).
func NameFromARN(arn string) string { return record.ARNName(arn, "sqs") }

// Resolve turns a queue reference (name, URL or ARN) into a Queue with its
// attributes loaded. An unknown queue is a bad-input error.
func (c *Client) Resolve(ctx context.Context, ref string) (*Queue, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	ref = r.Raw
	// An ARN or an AWS queue URL of another region: SQS would answer that
	// the queue does not exist, which hides the real problem.
	if c.Region != "" && r.Region != "" && r.Region != c.Region {
		return nil, errs.BadInputf("queue %s is in region %s but dlqctl is using %s; pass --region %s", ref, r.Region, c.Region, r.Region)
	}
	var qurl string
	switch r.Kind {
	case RefURL:
		qurl = r.URL
	default:
		in := &awssqs.GetQueueUrlInput{QueueName: aws.String(r.Name)}
		if r.Kind == RefARN && r.Account != "" {
			in.QueueOwnerAWSAccountId = aws.String(r.Account)
		}
		out, err := c.API.GetQueueUrl(ctx, in)
		if err != nil {
			return nil, c.wrapQueueErr(ref, err)
		}
		qurl = aws.ToString(out.QueueUrl)
	}
	q := &Queue{URL: qurl}
	if err := c.Refresh(ctx, q); err != nil {
		return nil, c.wrapQueueErr(ref, err)
	}
	return q, nil
}

// Refresh re-reads all attributes of q.
func (c *Client) Refresh(ctx context.Context, q *Queue) error {
	out, err := c.API.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return err
	}
	q.Attrs = out.Attributes
	q.ARN = out.Attributes[string(types.QueueAttributeNameQueueArn)]
	q.Name = NameFromARN(q.ARN)
	if q.Name == "" {
		q.Name = q.URL[strings.LastIndex(q.URL, "/")+1:]
	}
	q.FIFO = out.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true" || strings.HasSuffix(q.Name, ".fifo")
	return nil
}

// IsNotFound reports whether err says the queue does not exist.
func IsNotFound(err error) bool {
	var nf *types.QueueDoesNotExist
	if errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue":
			return true
		}
	}
	return false
}

func (c *Client) wrapQueueErr(ref string, err error) error {
	if IsNotFound(err) {
		region := c.Region
		if region == "" {
			region = "the configured region"
		}
		return errs.BadInput(broker.Kindf(broker.ErrNotFound, "queue %q does not exist in %s; check the name, --region and --sqs-endpoint-url (`dlqctl queues` lists DLQs)", ref, region))
	}
	return WrapAWSError(err)
}

// WrapAWSError turns credential and region problems into clear bad-input
// errors and leaves everything else untouched.
//
// Receipt handles echoed by SQS (ReceiptHandleIsInvalid and similar) are
// scrubbed from the text: the result never contains one.
func WrapAWSError(err error) error {
	if err == nil {
		return nil
	}
	err = scrubError(err)
	msg := err.Error()
	switch {
	case strings.Contains(msg, "failed to retrieve credentials"), strings.Contains(msg, "no EC2 IMDS role found"),
		strings.Contains(msg, "static credentials are empty"), strings.Contains(msg, "AnonymousCredentials"):
		return errs.BadInputf("no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or pass --profile")
	case strings.Contains(msg, "ExpiredToken"), strings.Contains(msg, "RequestExpired") && strings.Contains(msg, "token"):
		return errs.BadInputf("the AWS session credentials have expired (%s); refresh them (`aws sso login`, assume the role again, or new AWS_SESSION_TOKEN) and re-run", firstLine(msg))
	case strings.Contains(msg, "InvalidClientTokenId"), strings.Contains(msg, "UnrecognizedClientException"), strings.Contains(msg, "SignatureDoesNotMatch"):
		return errs.BadInput(broker.Kindf(broker.ErrAccessDenied, "AWS rejected the credentials (%s); check --profile or the AWS_* credential variables", firstLine(msg)))
	case strings.Contains(msg, "Invalid region"), strings.Contains(msg, "could not resolve endpoint"):
		return errs.BadInputf("no usable AWS region; pass --region or set AWS_REGION")
	}
	// The endpoint refused the connection or its name does not resolve:
	// nothing reached SQS (a timeout or a reset may have).
	if problem, _, ok := broker.NetProblem(err); ok && (problem == "connection refused" || strings.HasPrefix(problem, "no such host") || strings.HasPrefix(problem, "cannot resolve")) {
		where := "the SQS endpoint"
		var ue *url.Error
		if errors.As(err, &ue) {
			if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
				where += " " + u.Scheme + "://" + u.Host
			}
		}
		return errs.BadInput(broker.Kindf(broker.ErrUnreachable, "cannot connect to %s: %s; check --sqs-endpoint-url / --endpoint-url / AWS_ENDPOINT_URL_SQS, that it is running, and your network", where, problem))
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch code := ae.ErrorCode(); {
		case code == "AccessDenied" || code == "AccessDeniedException":
			return accessDenied(err, ae)
		case strings.HasPrefix(code, "KMS.") || code == "KmsAccessDenied":
			return errs.BadInputf("the queue is encrypted with a KMS key these credentials may not use (%s: %s); grant kms:GenerateDataKey (to send) and kms:Decrypt (to receive) on that key — see 'dlqctl help iam'", code, firstLine(ScrubReceiptHandles(ae.ErrorMessage())))
		}
	}
	return err
}

// notAuthorized reads the action and resource out of AWS's AccessDenied
// text ("User: … is not authorized to perform: sqs:receivemessage on
// resource: arn:aws:sqs:…:orders-dlq because …").
var notAuthorized = regexp.MustCompile(`(?i)perform:\s*([a-z0-9-]+:[A-Za-z0-9*]+)\s+on resource:\s*(\S+)`)

// accessDenied names the IAM action that was refused (from the operation:
// batch calls are authorized as their single-message action, and AWS's
// text spells actions in lower case) and the resource, and points to
// docs/iam.md.
func accessDenied(err error, ae smithy.APIError) error {
	msg := ScrubReceiptHandles(ae.ErrorMessage())
	action, resource := "", "the queue"
	if m := notAuthorized.FindStringSubmatch(msg); m != nil {
		action, resource = m[1], strings.TrimRight(m[2], ".,;")
	}
	var op *smithy.OperationError
	if errors.As(err, &op) && op.OperationName != "" {
		action = IAMAction(op.ServiceID, op.OperationName)
	}
	if action == "" {
		action = "the SQS action"
	}
	return errs.BadInputf("access denied: the credentials in use may not call %s on %s (AWS: %s); grant it to the role or user — 'dlqctl help iam' lists the actions each command needs", action, resource, firstLine(msg))
}

// IAMAction is the IAM action that authorizes an API operation of an AWS
// service: "sqs:DeleteMessage" for SQS DeleteMessageBatch (batch calls are
// authorized as their single-message action).
func IAMAction(serviceID, operation string) string {
	prefix := strings.ToLower(strings.ReplaceAll(serviceID, " ", ""))
	if prefix == "sqs" {
		operation = strings.TrimSuffix(operation, "Batch")
	}
	return prefix + ":" + operation
}

// ScrubbedHandle replaces receipt handles in error texts.
const ScrubbedHandle = "<receipt-handle>"

var (
	// `Value AQEB... for parameter ReceiptHandle is invalid` (AWS and
	// local-aws-sqs echo the handle unquoted in this form).
	valueForReceiptHandle = regexp.MustCompile(`(?i)(value\s+)\S+(\s+for\s+parameter\s+ReceiptHandle)`)
	// `The input receipt handle "AQEB..." is not a valid receipt handle.`
	// (also with escaped or single quotes); only in texts about handles.
	quotedToken    = regexp.MustCompile(`(\\?["'])[A-Za-z0-9+/=_.\-]{16,}(\\?["'])`)
	mentionsHandle = regexp.MustCompile(`(?i)receipt[ _-]?handle`)
	// Any base64-like run this long is a handle (AWS handles are ~300-400
	// characters, local-aws-sqs ~160); queue URLs and ARNs break on '.' and
	// ':' well before it.
	longToken = regexp.MustCompile(`[A-Za-z0-9+/=_\-]{100,}`)
)

// ScrubReceiptHandles replaces every receipt handle in s with
// "<receipt-handle>": the known values given, the handle in "Value X for
// parameter ReceiptHandle", quoted handle-like tokens in texts about receipt
// handles, and any base64-like token of 100 characters or more.
func ScrubReceiptHandles(s string, known ...string) string {
	for _, h := range known {
		if len(h) >= 8 {
			s = strings.ReplaceAll(s, h, ScrubbedHandle)
		}
	}
	s = valueForReceiptHandle.ReplaceAllString(s, "${1}"+ScrubbedHandle+"${2}")
	if mentionsHandle.MatchString(s) {
		s = quotedToken.ReplaceAllString(s, "${1}"+ScrubbedHandle+"${2}")
	}
	return longToken.ReplaceAllString(s, ScrubbedHandle)
}

// scrubbedError carries an error whose text had receipt handles in it: Error
// is the scrubbed text, Unwrap the original (for errors.Is/As).
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubError returns err with receipt handles scrubbed from its text. The
// messages of SQS error values inside it are scrubbed in place too, so an
// error pulled out with errors.As does not carry a handle either.
func scrubError(err error, known ...string) error {
	if err == nil {
		return nil
	}
	var rhi *types.ReceiptHandleIsInvalid
	if errors.As(err, &rhi) && rhi.Message != nil {
		rhi.Message = aws.String(ScrubReceiptHandles(*rhi.Message, known...))
	}
	var mni *types.MessageNotInflight
	if errors.As(err, &mni) && mni.Message != nil {
		mni.Message = aws.String(ScrubReceiptHandles(*mni.Message, known...))
	}
	var gen *smithy.GenericAPIError
	if errors.As(err, &gen) {
		gen.Message = ScrubReceiptHandles(gen.Message, known...)
	}
	msg := err.Error()
	if clean := ScrubReceiptHandles(msg, known...); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// ListQueueURLs lists every queue URL with the prefix, following pagination.
func (c *Client) ListQueueURLs(ctx context.Context, prefix string) ([]string, error) {
	var urls []string
	in := &awssqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if prefix != "" {
		in.QueueNamePrefix = aws.String(prefix)
	}
	p := awssqs.NewListQueuesPaginator(c.API, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, WrapAWSError(err)
		}
		urls = append(urls, out.QueueUrls...)
	}
	return urls, nil
}

// SourceQueueURLs lists the queues whose RedrivePolicy targets dlq.
func (c *Client) SourceQueueURLs(ctx context.Context, dlq *Queue) ([]string, error) {
	var urls []string
	p := awssqs.NewListDeadLetterSourceQueuesPaginator(c.API, &awssqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq.URL), MaxResults: aws.Int32(1000)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, WrapAWSError(err)
		}
		urls = append(urls, out.QueueUrls...)
	}
	return urls, nil
}

// ReceiveAttributeNames are requested through both the current
// MessageSystemAttributeNames and the older AttributeNames field: the local
// emulator honours only the latter, real SQS both.
var receiveSystemAttrs = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}

// Message is a received message: its record and the receipt handle that
// dlqctl holds (never printed).
type Message struct {
	Record
	ReceiptHandle string    `json:"-"`
	ReceivedAt    time.Time `json:"-"`
}

// Receive receives up to max (≤10) messages, hiding them for visibility.
func (c *Client) Receive(ctx context.Context, q *Queue, max int, visibility, wait time.Duration) ([]*Message, error) {
	if max <= 0 || max > MaxBatchEntries {
		max = MaxBatchEntries
	}
	out, err := c.API.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.URL),
		MaxNumberOfMessages:         int32(max),
		VisibilityTimeout:           int32(visibility / time.Second),
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageSystemAttributeNames: receiveSystemAttrs,
		AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // emulator honours only this
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, WrapAWSError(err)
	}
	now := time.Now().UTC()
	msgs := make([]*Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msgs = append(msgs, &Message{Record: FromSQS(q.ARN, m, q.Retention(), now), ReceiptHandle: aws.ToString(m.ReceiptHandle), ReceivedAt: now})
	}
	return msgs, nil
}

// QueueURLs lists the URLs of the queues whose name starts with prefix (one
// ListQueues page, up to 1000): what shell completion offers.
func QueueURLs(ctx context.Context, api API, prefix string) ([]string, error) {
	in := &awssqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if prefix != "" {
		in.QueueNamePrefix = aws.String(prefix)
	}
	out, err := api.ListQueues(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.QueueUrls, nil
}
