package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// EntryError is a per-entry failure inside a batch call.
type EntryError struct {
	Code        string
	Message     string
	SenderFault bool
}

func (e *EntryError) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// ErrLeaseLost means a receipt handle is no longer valid: the message was
// deleted, or its visibility expired and someone else received it.
var ErrLeaseLost = errors.New("receipt handle no longer valid (message deleted or lease lost)")

func entryErr(e types.BatchResultErrorEntry) error {
	code, msg := aws.ToString(e.Code), aws.ToString(e.Message)
	switch {
	case strings.Contains(code, "ReceiptHandleIsInvalid"), strings.Contains(code, "MessageNotInflight"),
		code == "InvalidParameterValue" && strings.Contains(msg, "ReceiptHandle"):
		return fmt.Errorf("%w: %s", ErrLeaseLost, msg)
	}
	return &EntryError{Code: code, Message: msg, SenderFault: e.SenderFault}
}

// retryable reports whether a per-entry failure may succeed when retried.
func retryable(err error) bool {
	var ee *EntryError
	if !errors.As(err, &ee) {
		return false
	}
	if !ee.SenderFault {
		return true
	}
	switch ee.Code {
	case "ThrottlingException", "RequestThrottled", "Throttling", "ServiceUnavailable", "InternalError", "KmsThrottled", "KMS.ThrottlingException":
		return true
	}
	return false
}

func backoff(ctx context.Context, attempt int) error {
	d := entryRetryBaseWait << attempt
	if d > 3*time.Second {
		d = 3 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// perEntry runs a batch API over msgs in chunks of 10: call sends one
// chunk (entry ids are the indexes in the chunk) and returns its failed
// entries. Retryable per-entry failures are retried with backoff; the
// result maps each message that finally failed to its reason. A call-level
// error stops the run: it is returned and recorded for every message not
// yet done.
func perEntry(ctx context.Context, msgs []*Message, call func(chunk []*Message) ([]types.BatchResultErrorEntry, error)) (map[*Message]error, error) {
	failed := map[*Message]error{}
	for start := 0; start < len(msgs); start += MaxBatchEntries {
		pending := msgs[start:min(start+MaxBatchEntries, len(msgs))]
		for attempt := 0; len(pending) > 0; attempt++ {
			fails, err := call(pending)
			if err != nil {
				for _, m := range msgs[start:] {
					failed[m] = err
				}
				return failed, WrapAWSError(err)
			}
			var retry []*Message
			for _, f := range fails {
				i, _ := strconv.Atoi(aws.ToString(f.Id))
				if i < 0 || i >= len(pending) {
					continue
				}
				e := entryErr(f)
				if retryable(e) && attempt < maxEntryRetries {
					retry = append(retry, pending[i])
					continue
				}
				failed[pending[i]] = e
			}
			pending = retry
			if len(pending) > 0 {
				if err := backoff(ctx, attempt); err != nil {
					for _, m := range pending {
						failed[m] = err
					}
					break
				}
			}
		}
	}
	return failed, nil
}

// ChangeVisibility sets the visibility timeout of msgs to d (0 releases
// them). It returns the messages that could not be changed with the reason
// (after retrying retryable per-entry failures). A call-level error is
// returned as err and applies to the messages not yet processed.
func (c *Client) ChangeVisibility(ctx context.Context, q *Queue, msgs []*Message, d time.Duration) (map[*Message]error, error) {
	return perEntry(ctx, msgs, func(chunk []*Message) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(m.ReceiptHandle),
				VisibilityTimeout: int32(d / time.Second),
			}
		}
		out, err := c.API.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
}

// Delete deletes msgs and returns those that could not be deleted with the
// reason. A message whose receipt handle is no longer valid is reported with
// ErrLeaseLost: it was NOT deleted by this call.
func (c *Client) Delete(ctx context.Context, q *Queue, msgs []*Message) (map[*Message]error, error) {
	return perEntry(ctx, msgs, func(chunk []*Message) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(m.ReceiptHandle)}
		}
		out, err := c.API.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
}

// SendEntry is one message to send.
type SendEntry struct {
	Body         string
	Attributes   map[string]types.MessageAttributeValue
	GroupID      string
	DedupID      string
	DelaySeconds int32
	// Size is the SQS size of the entry (body + attributes); computed by
	// SendBatch when zero.
	Size int
}

// SendResult is the outcome of one entry of SendBatch.
type SendResult struct {
	MessageID      string
	SequenceNumber string
	Err            error
}

// SendBatch sends up to 10 entries (≤ 1 MiB in total) in one
// SendMessageBatch call, retrying only retryable per-entry failures. The
// result has one element per entry. A call-level error (err != nil) means
// the outcome of the entries not yet acknowledged is unknown: the caller must
// treat them as possibly sent.
func (c *Client) SendBatch(ctx context.Context, q *Queue, entries []SendEntry) ([]SendResult, error) {
	if len(entries) > MaxBatchEntries {
		return nil, fmt.Errorf("SendBatch: %d entries, at most %d", len(entries), MaxBatchEntries)
	}
	results := make([]SendResult, len(entries))
	pending := make([]int, len(entries))
	for i := range entries {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		req := make([]types.SendMessageBatchRequestEntry, len(pending))
		for j, i := range pending {
			e := entries[i]
			r := types.SendMessageBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				MessageBody:       aws.String(e.Body),
				MessageAttributes: e.Attributes,
				DelaySeconds:      e.DelaySeconds,
			}
			if e.GroupID != "" {
				r.MessageGroupId = aws.String(e.GroupID)
			}
			if e.DedupID != "" {
				r.MessageDeduplicationId = aws.String(e.DedupID)
			}
			req[j] = r
		}
		out, err := c.API.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: req})
		if err != nil {
			for _, i := range pending {
				results[i].Err = err
			}
			return results, WrapAWSError(err)
		}
		for _, s := range out.Successful {
			i, _ := strconv.Atoi(aws.ToString(s.Id))
			if i >= 0 && i < len(results) {
				results[i] = SendResult{MessageID: aws.ToString(s.MessageId), SequenceNumber: aws.ToString(s.SequenceNumber)}
			}
		}
		var retry []int
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if i < 0 || i >= len(results) {
				continue
			}
			e := entryErr(f)
			if retryable(e) && attempt < maxEntryRetries {
				retry = append(retry, i)
				continue
			}
			results[i].Err = e
		}
		pending = retry
		if len(pending) > 0 {
			if err := backoff(ctx, attempt); err != nil {
				for _, i := range pending {
					results[i].Err = err
				}
				return results, err
			}
		}
	}
	return results, nil
}
