package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/dlqctl/dlqctl/pkg/broker"
)

// EntryError is a per-entry failure inside a batch call. Message never
// contains a receipt handle (they are scrubbed).
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
// deleted, or its visibility expired and someone else received it. It is
// broker.ErrLeaseLost for errors.Is, in SQS's words.
var ErrLeaseLost error = leaseLostError{}

type leaseLostError struct{}

func (leaseLostError) Error() string {
	return "receipt handle no longer valid (message deleted or lease lost)"
}
func (leaseLostError) Is(target error) bool { return target == broker.ErrLeaseLost }

// CallError is the outcome of entries whose batch call failed as a whole
// (network, throttling after the SDK's retries, deadline). Sent says whether
// the call carrying the entry was sent: when it was, SQS may or may not have
// applied it; when it was not (an earlier call failed or the context ended
// first), the entry was certainly not applied.
type CallError struct {
	Op   string // "delete" or "visibility change"
	Sent bool
	Err  error // scrubbed of receipt handles
}

func (e *CallError) Error() string {
	if !e.Sent {
		return fmt.Sprintf("%s not sent (an earlier call failed or the run was stopped: %v)", e.Op, e.Err)
	}
	return fmt.Sprintf("%s call failed (%v); the message may or may not have been %s", e.Op, e.Err, pastTense(e.Op))
}

func (e *CallError) Unwrap() error { return e.Err }

func pastTense(op string) string {
	if op == opDelete {
		return "deleted"
	}
	return "changed"
}

const (
	opDelete     = "delete"
	opVisibility = "visibility change"
)

func entryErr(e types.BatchResultErrorEntry, known ...string) error {
	code, msg := aws.ToString(e.Code), ScrubReceiptHandles(aws.ToString(e.Message), known...)
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

// DefaultBatchConcurrency is how many batch calls (ChangeMessageVisibility,
// Delete) a Client keeps in flight at once when BatchConcurrency is 0. Over a
// link adding 40 ms per call, 20,000 held messages take 2,000 calls: 80 s one
// after another, 5 s at 16 in flight.
const DefaultBatchConcurrency = 16

// Deadlines of batch runs that must not be cut short by the caller's context
// (releases, lease deletes, extensions): a base plus a per-call budget for
// every round of concurrent calls, so the deadline grows with what is held.
const (
	batchBaseDeadline = 30 * time.Second
	batchRoundBudget  = 10 * time.Second // one call with its per-entry retries and the SDK's own retries
)

func (c *Client) concurrency() int {
	if c.BatchConcurrency > 0 {
		return c.BatchConcurrency
	}
	return DefaultBatchConcurrency
}

// BatchDeadline is how long a batch run over n entries may take: 30 s plus
// 10 s per round of concurrent calls (chunks of 10, BatchConcurrency in
// flight).
func (c *Client) BatchDeadline(n int) time.Duration {
	chunks := (n + MaxBatchEntries - 1) / MaxBatchEntries
	conc := c.concurrency()
	rounds := (chunks + conc - 1) / conc
	return batchBaseDeadline + time.Duration(rounds)*batchRoundBudget
}

// batchRun is one batch operation over n entries, sent in chunks of at most
// 10 with up to Client.BatchConcurrency calls in flight.
type batchRun struct {
	op string
	n  int
	// handle returns entry i's receipt handle (used to scrub error texts).
	handle func(i int) string
	// stop, checked before each chunk is sent, ends the run early; the
	// entries not sent get a *CallError with Sent=false.
	stop func() bool
	// start, when set, is called as a chunk [lo,hi) is about to be sent and
	// returns the entries of it to send (the rest are skipped, no error).
	start func(lo, hi int) []int
	// done, when set, is called once a chunk's entries have their outcome
	// (after per-entry retries), with the entries that were sent and the
	// run's outcome slice (read only errs[i] for i in idx).
	done func(idx []int, errs []error)
	// send makes one call for entries idx; request entry ids must be
	// strconv.Itoa(position in idx). It returns the ids reported successful
	// and the failed entries.
	send func(ctx context.Context, idx []int) (ok []*string, failed []types.BatchResultErrorEntry, err error)
}

// run sends every entry and returns each one's outcome (nil = applied) and
// the first call-level error (wrapped and scrubbed), if any. Retryable
// per-entry failures are retried with backoff, and only those; an entry SQS
// reports neither successful nor failed counts as a retryable failure. A
// call-level error stops sending further chunks (calls in flight finish).
func (c *Client) run(ctx context.Context, r batchRun) ([]error, error) {
	errs := make([]error, r.n)
	var (
		mu      sync.Mutex
		callErr error
		stopped error
	)
	shouldStop := func() error {
		mu.Lock()
		defer mu.Unlock()
		if callErr != nil {
			return callErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.stop != nil && r.stop() {
			return context.Canceled
		}
		return nil
	}
	sem := make(chan struct{}, c.concurrency())
	var wg sync.WaitGroup
	lo := 0
	for ; lo < r.n; lo += MaxBatchEntries {
		sem <- struct{}{}
		if stopped = shouldStop(); stopped != nil {
			<-sem
			break
		}
		hi := min(lo+MaxBatchEntries, r.n)
		idx := make([]int, 0, hi-lo)
		if r.start != nil {
			idx = r.start(lo, hi)
		} else {
			for i := lo; i < hi; i++ {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			<-sem
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.chunk(ctx, r, idx, errs); err != nil {
				mu.Lock()
				if callErr == nil {
					callErr = err
				}
				mu.Unlock()
			}
			if r.done != nil {
				r.done(idx, errs)
			}
		}()
	}
	wg.Wait()
	if lo < r.n && stopped != nil {
		ce := &CallError{Op: r.op, Err: stopped}
		for i := lo; i < r.n; i++ {
			errs[i] = ce
		}
	}
	return errs, callErr
}

// chunk sends one chunk and retries its retryable entries; it returns the
// call-level error that ended it, if any.
func (c *Client) chunk(ctx context.Context, r batchRun, idx []int, errs []error) error {
	pending := idx
	for attempt := 0; len(pending) > 0; attempt++ {
		ok, fails, err := r.send(ctx, pending)
		if err != nil {
			handles := make([]string, len(pending))
			for j, i := range pending {
				handles[j] = r.handle(i)
			}
			ce := &CallError{Op: r.op, Sent: true, Err: scrubError(WrapAWSError(err), handles...)}
			for _, i := range pending {
				errs[i] = ce
			}
			return ce.Err
		}
		outcome := make([]error, len(pending))
		for j := range outcome {
			outcome[j] = errNoResult
		}
		for _, id := range ok {
			if j, err := strconv.Atoi(aws.ToString(id)); err == nil && j >= 0 && j < len(pending) {
				outcome[j] = nil
			}
		}
		for _, f := range fails {
			if j, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && j >= 0 && j < len(pending) {
				outcome[j] = entryErr(f, r.handle(pending[j]))
			}
		}
		var retry []int
		for j, i := range pending {
			e := outcome[j]
			errs[i] = e
			if e != nil && retryable(e) && attempt < maxEntryRetries {
				retry = append(retry, i)
			}
		}
		pending = retry
		if len(pending) > 0 && backoff(ctx, attempt) != nil {
			return nil // the pending entries keep their (retryable) entry error
		}
	}
	return nil
}

// errNoResult is the outcome of an entry that a batch answer did not mention.
var errNoResult = &EntryError{Code: "NoResult", Message: "SQS reported neither success nor failure for this entry"}

func (c *Client) changeVisibility(ctx context.Context, q *Queue, handles []string, secs func(i int) int32, r batchRun) ([]error, error) {
	r.op, r.n = opVisibility, len(handles)
	r.handle = func(i int) string { return handles[i] }
	r.send = func(ctx context.Context, idx []int) ([]*string, []types.BatchResultErrorEntry, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(idx))
		for j, i := range idx {
			entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(j)),
				ReceiptHandle:     aws.String(handles[i]),
				VisibilityTimeout: secs(i),
			}
		}
		out, err := c.API.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		if err != nil {
			return nil, nil, err
		}
		ok := make([]*string, len(out.Successful))
		for k, s := range out.Successful {
			ok[k] = s.Id
		}
		return ok, out.Failed, nil
	}
	return c.run(ctx, r)
}

func (c *Client) deleteHandles(ctx context.Context, q *Queue, handles []string, r batchRun) ([]error, error) {
	r.op, r.n = opDelete, len(handles)
	r.handle = func(i int) string { return handles[i] }
	r.send = func(ctx context.Context, idx []int) ([]*string, []types.BatchResultErrorEntry, error) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(idx))
		for j, i := range idx {
			entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(handles[i])}
		}
		out, err := c.API.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		if err != nil {
			return nil, nil, err
		}
		ok := make([]*string, len(out.Successful))
		for k, s := range out.Successful {
			ok[k] = s.Id
		}
		return ok, out.Failed, nil
	}
	return c.run(ctx, r)
}

func handlesOf(msgs []*Message) []string {
	h := make([]string, len(msgs))
	for i, m := range msgs {
		h[i] = m.ReceiptHandle
	}
	return h
}

func byMessage(msgs []*Message, errs []error) map[*Message]error {
	failed := map[*Message]error{}
	for i, err := range errs {
		if err != nil {
			failed[msgs[i]] = err
		}
	}
	return failed
}

// ChangeVisibility sets the visibility timeout of msgs to d (0 releases
// them), using each message's own ReceiptHandle, in chunks of 10 with up to
// BatchConcurrency calls in flight. It returns the messages that could not
// be changed with the reason (after retrying retryable per-entry failures):
// an error wrapping ErrLeaseLost for invalid handles, an *EntryError, or a
// *CallError for entries whose call failed or was never sent. err is the
// first call-level error; a call-level error stops further calls.
func (c *Client) ChangeVisibility(ctx context.Context, q *Queue, msgs []*Message, d time.Duration) (map[*Message]error, error) {
	secs := int32(d / time.Second)
	errs, err := c.changeVisibility(ctx, q, handlesOf(msgs), func(int) int32 { return secs }, batchRun{})
	return byMessage(msgs, errs), err
}

// Delete deletes msgs with each message's own ReceiptHandle (in chunks of
// 10, up to BatchConcurrency calls in flight) and returns those that could
// not be deleted with the reason. A message whose receipt handle is no
// longer valid is reported with ErrLeaseLost: it was NOT deleted by this
// call. A *CallError with Sent=true means it may or may not have been
// deleted. Callers holding messages in a Lease should use Lease.Delete,
// which always uses the newest receipt handle of each message.
func (c *Client) Delete(ctx context.Context, q *Queue, msgs []*Message) (map[*Message]error, error) {
	errs, err := c.deleteHandles(ctx, q, handlesOf(msgs), batchRun{})
	return byMessage(msgs, errs), err
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
	// MaybeTwice: a call that carried this entry was retried by the SDK
	// after an attempt SQS may have carried out (its answer was lost: a
	// 5xx, a reset, a timeout), so a standard queue may hold the message
	// twice — or, for an entry that ended failed, once although the send
	// failed. Never set for a FIFO queue, which drops a repeat by its
	// deduplication id.
	MaybeTwice bool
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
	maybe := make([]bool, len(entries))
	defer func() {
		for i := range results {
			results[i].MaybeTwice = maybe[i]
		}
	}()
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
		out, err := c.API.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: req})
		if err != nil {
			for _, i := range pending {
				results[i].Err = err
			}
			return results, WrapAWSError(err)
		}
		if !q.FIFO && AttemptsThatMayHaveActed(out.ResultMetadata) > 0 {
			for _, i := range pending {
				maybe[i] = true
			}
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
