package redrive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func isBadInput(err error) bool { return errs.Code(err) == errs.ExitUsage }

// Skip reasons: why a message was not moved. They appear in plans, reports
// and NDJSON events.
const (
	SkipFiltered     = "not selected"         // --filter / --class did not match
	SkipNoSource     = "no source"            // no DeadLetterQueueSourceArn and the DLQ has several (or no) sources
	SkipSourceGone   = "source queue missing" // the source queue named by the message does not exist
	SkipTooLarge     = "too large for destination"
	SkipTooManyAttrs = "too many attributes"
	SkipLoop         = "max redrives reached" // already redriven --max-redrives times
	SkipReturned     = "returned during this run"
	SkipGroupBlocked = "behind an unselected message of its FIFO group"
	SkipNoGroup      = "no message group for FIFO destination"
	SkipMax          = "beyond --max"
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
	Entry sqs.SendEntry
	// Marked is false when the marker attribute could not be added (the
	// message already has 10 attributes, or it would exceed the size limit);
	// the journal is then the only record of the redrive.
	Marked bool
}

// BuildCopy makes the exact copy of rec for dest: body byte for byte, every
// attribute with its exact data type, the FIFO message group, a
// deterministic deduplication id (FIFO destinations), and the redrive marker
// attribute. It returns a skip reason instead when the copy cannot be made
// without changing the message.
func BuildCopy(rec *record.Record, runID string, dest *sqs.Queue, now time.Time) (Copy, string) {
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
	if len(attrs) > sqs.MaxAttributes {
		return Copy{}, SkipTooManyAttrs
	}
	limit := maxMessageBytes(dest)
	if sqs.MessageSize(rec.Body, attrs) > limit {
		return Copy{}, SkipTooLarge
	}
	marked := false
	if len(attrs) < sqs.MaxAttributes {
		mk, _ := json.Marshal(record.Marker{RunID: runID, OriginalID: orig, Count: prev + 1, At: now.UTC().Truncate(time.Second)})
		attrs[record.MarkerAttribute] = record.Attribute{Type: "String", Value: string(mk)}
		if sqs.MessageSize(rec.Body, attrs) <= limit {
			marked = true
		} else {
			delete(attrs, record.MarkerAttribute)
		}
	}
	sqsAttrs, err := sqs.SQSAttributes(attrs)
	if err != nil {
		return Copy{}, "attribute not valid base64"
	}
	e := sqs.SendEntry{Body: rec.Body, Attributes: sqsAttrs, Size: sqs.MessageSize(rec.Body, attrs)}
	if dest.FIFO {
		if rec.System.MessageGroupID == "" {
			return Copy{}, SkipNoGroup
		}
		e.GroupID = rec.System.MessageGroupID
		e.DedupID = DedupID(runID, rec.MessageID)
	}
	return Copy{Entry: e, Marked: marked}, ""
}

func maxMessageBytes(q *sqs.Queue) int {
	if q != nil {
		if v, err := strconv.Atoi(q.Attrs["MaximumMessageSize"]); err == nil && v > 0 {
			return min(v, sqs.MaxMessageBytes)
		}
	}
	return sqs.MaxMessageBytes
}

// Router picks the destination of a message: a queue, or a skip reason.
type Router interface {
	Route(ctx context.Context, rec *record.Record) (*sqs.Queue, string, error)
	// Describe names the destination for plans and prompts.
	Describe() string
}

type fixedRouter struct{ q *sqs.Queue }

// ToQueue routes every message to q (a recovery queue).
func ToQueue(q *sqs.Queue) Router { return fixedRouter{q} }

func (r fixedRouter) Route(context.Context, *record.Record) (*sqs.Queue, string, error) {
	return r.q, "", nil
}
func (r fixedRouter) Describe() string { return r.q.Name }

// SourceRouter sends each message back to the queue named by its
// DeadLetterQueueSourceArn. Messages without one go to the DLQ's single
// source queue, or are skipped when the DLQ has several (or none).
type SourceRouter struct {
	c        *sqs.Client
	fallback *sqs.Queue
	sources  int

	mu    sync.Mutex
	cache map[string]*sqs.Queue // by ARN; nil value = does not exist
}

// ToSource builds a SourceRouter; dlq (may be nil for archives) is asked
// for its source queues (ListDeadLetterSourceQueues) for the fallback.
func ToSource(ctx context.Context, c *sqs.Client, dlq *sqs.Queue) (*SourceRouter, error) {
	r := &SourceRouter{c: c, cache: map[string]*sqs.Queue{}}
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
func (r *SourceRouter) Fallback() *sqs.Queue { return r.fallback }

// Route resolves the message's source queue (cached by ARN).
func (r *SourceRouter) Route(ctx context.Context, rec *record.Record) (*sqs.Queue, string, error) {
	arn := rec.System.SourceQueueARN
	if arn == "" {
		if r.fallback != nil {
			return r.fallback, "", nil
		}
		return nil, SkipNoSource, nil
	}
	r.mu.Lock()
	q, ok := r.cache[arn]
	r.mu.Unlock()
	if !ok {
		var err error
		q, err = r.c.Resolve(ctx, arn)
		if err != nil {
			if sqs.IsNotFound(err) || isBadInput(err) {
				q = nil
			} else {
				return nil, "", err
			}
		}
		r.mu.Lock()
		r.cache[arn] = q
		r.mu.Unlock()
	}
	if q == nil {
		return nil, SkipSourceGone, nil
	}
	return q, "", nil
}
