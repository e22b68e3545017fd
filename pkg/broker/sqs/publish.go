package sqs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Skip reasons of copies SQS cannot carry unchanged (they appear in plans,
// reports and NDJSON events).
const (
	SkipTooLarge     = broker.SkipTooLarge
	SkipTooManyAttrs = broker.SkipTooManyAttrs
	SkipNoGroup      = "no message group for FIFO destination"
	SkipNoSource     = broker.SkipNoSource
	SkipSourceGone   = broker.SkipSourceGone
)

// DedupID is the MessageDeduplicationId of the copy of origID made by run:
// deterministic, so a copy re-sent within 5 minutes (after a crash and
// resume) is de-duplicated by SQS itself.
func DedupID(runID, origID string) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + origID))
	return hex.EncodeToString(sum[:])
}

// Copy is the exact copy of a record, ready to send.
type Copy struct {
	Entry SendEntry
	// Marked is false when the marker attribute could not be added (the
	// message already has 10 attributes, or it would exceed the size limit);
	// the journal is then the only record of the redrive.
	Marked bool
}

// BuildCopy makes the exact copy of rec for dest: body byte for byte, every
// attribute with its exact data type, the FIFO message group, a
// deterministic deduplication id (FIFO destinations, from dedupKey and the
// message id), and the redrive marker attribute naming runID. It returns a
// skip reason instead when the copy cannot be made without changing the
// message.
func BuildCopy(rec *record.Record, runID, dedupKey string, dest *Queue, now time.Time) (Copy, string) {
	attrs := make(map[string]record.Attribute, len(rec.Attributes)+1)
	prev := 0
	orig := rec.MessageID
	for k, v := range rec.Attributes {
		if k == record.MarkerAttribute {
			var m record.Marker
			if json.Unmarshal([]byte(v.Value), &m) == nil {
				prev = m.Count
				if m.OriginalID != "" {
					orig = m.OriginalID
				}
			}
			continue
		}
		attrs[k] = v
	}
	if len(attrs) > MaxAttributes {
		return Copy{}, SkipTooManyAttrs
	}
	limit := maxMessageBytes(dest)
	if MessageSize(rec.Body, attrs) > limit {
		return Copy{}, SkipTooLarge
	}
	marked := false
	if len(attrs) < MaxAttributes {
		mk, _ := json.Marshal(record.Marker{RunID: runID, OriginalID: orig, Count: prev + 1, At: now.UTC().Truncate(time.Second)})
		attrs[record.MarkerAttribute] = record.Attribute{Type: "String", Value: string(mk)}
		if MessageSize(rec.Body, attrs) <= limit {
			marked = true
		} else {
			delete(attrs, record.MarkerAttribute)
		}
	}
	sqsAttrs, err := SQSAttributes(attrs)
	if err != nil {
		return Copy{}, "attribute not valid base64"
	}
	e := SendEntry{Body: rec.Body, Attributes: sqsAttrs, Size: MessageSize(rec.Body, attrs)}
	if dest.FIFO {
		if rec.System.MessageGroupID == "" {
			return Copy{}, SkipNoGroup
		}
		if dedupKey == "" {
			dedupKey = runID
		}
		e.GroupID = rec.System.MessageGroupID
		e.DedupID = DedupID(dedupKey, rec.MessageID)
	}
	return Copy{Entry: e, Marked: marked}, ""
}

func maxMessageBytes(q *Queue) int {
	if q != nil {
		if v, err := strconv.Atoi(q.Attrs["MaximumMessageSize"]); err == nil && v > 0 {
			return min(v, MaxMessageBytes)
		}
	}
	return MaxMessageBytes
}

// Publisher sends copies to SQS queues (broker.Publisher): Destination.Target
// is the *Queue.
type Publisher struct{ c *Client }

// NewPublisher returns a Publisher over c (nil for one that only prepares
// copies: a dry run).
func NewPublisher(c *Client) *Publisher { return &Publisher{c: c} }

func destQueue(dest broker.Destination) (*Queue, error) {
	q, ok := dest.Target.(*Queue)
	if !ok || q == nil {
		return nil, errors.New("the destination is not an SQS queue")
	}
	return q, nil
}

// Prepare builds the copy (BuildCopy) of rec for dest.
func (p *Publisher) Prepare(rec *record.Record, dest broker.Destination, opt broker.CopyOptions) (broker.Outgoing, string) {
	q, err := destQueue(dest)
	if err != nil {
		return broker.Outgoing{}, err.Error()
	}
	cp, skip := BuildCopy(rec, opt.RunID, opt.DedupKey, q, opt.Now)
	if skip != "" {
		return broker.Outgoing{}, skip
	}
	return broker.Outgoing{Size: cp.Entry.Size, Marked: cp.Marked, Native: cp.Entry}, ""
}

// Publish sends one SendMessageBatch (SendBatch): an entry SQS refused
// after its retries is broker.ErrRejected; a failed call is returned as
// the error (entries without a result then have an unknown outcome).
func (p *Publisher) Publish(ctx context.Context, dest broker.Destination, batch []broker.Outgoing) ([]broker.Result, error) {
	q, err := destQueue(dest)
	if err != nil {
		return nil, err
	}
	entries := make([]SendEntry, len(batch))
	for i, o := range batch {
		e, ok := o.Native.(SendEntry)
		if !ok {
			return nil, errors.New("the copy was not prepared by the SQS publisher")
		}
		entries[i] = e
	}
	res, callErr := p.c.SendBatch(ctx, q, entries)
	out := make([]broker.Result, len(batch))
	for i := range out {
		var r SendResult
		if i < len(res) {
			r = res[i]
		}
		out[i].MaybeTwice = r.MaybeTwice
		switch {
		case r.Err == nil && r.MessageID != "":
			out[i].ID = r.MessageID
		case callErr != nil:
			out[i].Err = callErr
		case r.Err != nil:
			out[i].Err = broker.Rejected(r.Err)
		default:
			out[i].Err = errors.New("the destination returned no result for this message")
		}
	}
	return out, callErr
}

// Close has nothing to release.
func (p *Publisher) Close(context.Context) error { return nil }

// QueueTarget is q as a publish destination.
func QueueTarget(q *Queue) broker.Destination {
	return broker.Destination{Key: q.URL, Label: q.Name, Target: q}
}

type fixedRouter struct{ q *Queue }

// ToQueue routes every message to q (a recovery queue).
func ToQueue(q *Queue) broker.Router { return fixedRouter{q} }

func (r fixedRouter) Route(context.Context, *record.Record) (broker.Destination, string, error) {
	return QueueTarget(r.q), "", nil
}
func (r fixedRouter) Describe() string { return r.q.Name }

// SourceRouter sends each message back to the queue named by its
// DeadLetterQueueSourceArn. Messages without one go to the DLQ's single
// source queue, or are skipped when the DLQ has several (or none).
type SourceRouter struct {
	c        *Client
	fallback *Queue
	sources  int

	mu    sync.Mutex
	cache map[string]*Queue // by ARN; nil value = does not exist
}

// ToSource builds a SourceRouter; dlq (may be nil for archives) is asked
// for its source queues (ListDeadLetterSourceQueues) for the fallback.
func ToSource(ctx context.Context, c *Client, dlq *Queue) (*SourceRouter, error) {
	r := &SourceRouter{c: c, cache: map[string]*Queue{}}
	if dlq == nil {
		return r, nil
	}
	urls, err := c.SourceQueueURLs(ctx, dlq)
	if err != nil {
		return nil, err
	}
	r.sources = len(urls)
	if len(urls) == 1 {
		q, err := c.Resolve(ctx, urls[0])
		if err != nil {
			return nil, err
		}
		r.fallback = q
		r.cache[q.ARN] = q
	}
	return r, nil
}

// Describe says where messages go.
func (r *SourceRouter) Describe() string {
	if r.fallback != nil {
		return "source (" + r.fallback.Name + ")"
	}
	return "source (each message's DeadLetterQueueSourceArn)"
}

// Fallback is the DLQ's single source queue, or nil.
func (r *SourceRouter) Fallback() *Queue { return r.fallback }

// Route resolves the message's source queue (cached by ARN).
func (r *SourceRouter) Route(ctx context.Context, rec *record.Record) (broker.Destination, string, error) {
	arn := rec.System.SourceQueueARN
	if arn == "" {
		if r.fallback != nil {
			return QueueTarget(r.fallback), "", nil
		}
		return broker.Destination{}, SkipNoSource, nil
	}
	r.mu.Lock()
	q, ok := r.cache[arn]
	r.mu.Unlock()
	if !ok {
		var err error
		q, err = r.c.Resolve(ctx, arn)
		if err != nil {
			if IsNotFound(err) || errs.Code(err) == errs.ExitUsage {
				q = nil
			} else {
				return broker.Destination{}, "", err
			}
		}
		r.mu.Lock()
		r.cache[arn] = q
		r.mu.Unlock()
	}
	if q == nil {
		return broker.Destination{}, SkipSourceGone, nil
	}
	return QueueTarget(q), "", nil
}

var _ broker.Publisher = (*Publisher)(nil)
