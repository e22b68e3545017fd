package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Retention periods of the incident's queues.
const (
	DLQRetention    = 14 * 24 * 60 * 60 // seconds, the SQS maximum
	SourceRetention = 4 * 24 * 60 * 60  // seconds, the SQS default
)

// Max receive counts of the sources' redrive policies.
const (
	OrdersMaxReceiveCount   = 3
	PaymentsMaxReceiveCount = 2
	FIFOMaxReceiveCount     = 2
)

// sourceVisibility is the sources' VisibilityTimeout once seeding is done.
const sourceVisibility = 30

// Options configure Incident.
type Options struct {
	// Prefix names the queues: PREFIX-dlq, PREFIX-orders, PREFIX-payments,
	// PREFIX-dlq.fifo, PREFIX-orders.fifo. Required; [A-Za-z0-9_-]{1,60}.
	Prefix string
	// Scale adds that many extra transient (DatabaseTimeout) messages to the
	// orders source, dead-lettered like the rest. Default 0.
	Scale int
	// Now anchors timestamps in the bodies; zero means time.Now(). The same
	// Prefix and Now give byte-identical bodies.
	Now time.Time
	// Reset deletes existing queues with the incident's names first. Without
	// it, Incident refuses to seed into queues that already hold messages.
	Reset bool
	// Concurrency bounds parallel API calls; default 8.
	Concurrency int
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,60}$`)

// Incident creates the incident's queues on c, sends every message to its
// source and dead-letters it through the source's RedrivePolicy, then checks
// that each DLQ holds exactly the expected number of messages.
//
// Dead-lettering: the sources get VisibilityTimeout 0 (restored to 30 s
// afterwards) and received without deleting until they are empty.
// aws-sdk-go-v2 omits VisibilityTimeout: 0 from ReceiveMessage (zero value
// of an int32 field), so the queue default has to be 0; per-request 0 is not
// possible. local-aws-sqs moves a message when its visibility expires with
// ApproximateReceiveCount >= maxReceiveCount.
func Incident(ctx context.Context, c *sqs.Client, opt Options) (*Truth, error) {
	if !prefixRE.MatchString(opt.Prefix) {
		return nil, fmt.Errorf("seed: prefix %q must match %s", opt.Prefix, prefixRE)
	}
	if opt.Scale < 0 {
		return nil, fmt.Errorf("seed: negative scale %d", opt.Scale)
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 8
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	start := time.Now()
	t := &Truth{Prefix: opt.Prefix}

	if err := createQueues(ctx, c, t, opt); err != nil {
		return nil, err
	}
	t.Timings.CreateQueues = time.Since(start)

	msgs := plan(opt.Prefix, now, opt.Scale)
	byName := map[string]Queue{t.Orders.Name: t.Orders, t.Payments.Name: t.Payments, t.FIFOSource.Name: t.FIFOSource}
	for i := range msgs {
		src := byName[msgs[i].SourceName]
		msgs[i].SourceARN = src.ARN
		if src.FIFO {
			msgs[i].DLQName = t.FIFODLQ.Name
		} else {
			msgs[i].DLQName = t.DLQ.Name
		}
	}
	t.Messages = msgs

	sendStart := time.Now()
	if err := sendAll(ctx, c, t, opt.Concurrency); err != nil {
		return nil, err
	}
	t.Timings.Send = time.Since(sendStart)

	dlStart := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, q := range []Queue{t.Orders, t.Payments, t.FIFOSource} {
		wg.Go(func() {
			workers := opt.Concurrency // receives mostly wait on the emulator's 10 ms tick
			if q.FIFO {
				workers = 1 // FIFO groups serialise receives anyway
			}
			errs[i] = drainIntoDLQ(ctx, c, q, workers)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, q := range []Queue{t.DLQ, t.FIFODLQ} {
		if err := waitCount(ctx, c, q, len(t.InQueue(q.Name))); err != nil {
			return nil, err
		}
	}
	for _, q := range []Queue{t.Orders, t.Payments, t.FIFOSource} {
		if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl:   aws.String(q.URL),
			Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(sourceVisibility)},
		}); err != nil {
			return nil, fmt.Errorf("seed: restoring visibility timeout of %s: %w", q.Name, err)
		}
	}
	t.Timings.DeadLetter = time.Since(dlStart)
	t.Timings.Total = time.Since(start)
	return t, nil
}

func createQueues(ctx context.Context, c *sqs.Client, t *Truth, opt Options) error {
	p := opt.Prefix
	t.DLQ = Queue{Name: p + suffixDLQ, RetentionSeconds: DLQRetention}
	t.FIFODLQ = Queue{Name: p + suffixFIFODLQ, FIFO: true, RetentionSeconds: DLQRetention}
	t.Orders = Queue{Name: p + suffixOrders, MaxReceiveCount: OrdersMaxReceiveCount, RetentionSeconds: SourceRetention}
	t.Payments = Queue{Name: p + suffixPayments, MaxReceiveCount: PaymentsMaxReceiveCount, RetentionSeconds: SourceRetention}
	t.FIFOSource = Queue{Name: p + suffixFIFOSource, FIFO: true, MaxReceiveCount: FIFOMaxReceiveCount, RetentionSeconds: SourceRetention}

	if opt.Reset {
		for _, q := range t.Queues() {
			u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
			var missing *types.QueueDoesNotExist
			if errors.As(err, &missing) {
				continue
			}
			if err != nil {
				return fmt.Errorf("seed: looking up %s: %w", q.Name, err)
			}
			if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: u.QueueUrl}); err != nil {
				return fmt.Errorf("seed: deleting %s: %w", q.Name, err)
			}
		}
	}

	// DLQs first: the emulator validates redrive targets.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, q := range []*Queue{&t.DLQ, &t.FIFODLQ} {
		wg.Go(func() { errs[i] = createQueue(ctx, c, q, "", p) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	errs = make([]error, 3)
	for i, pair := range []struct{ q, dlq *Queue }{{&t.Orders, &t.DLQ}, {&t.Payments, &t.DLQ}, {&t.FIFOSource, &t.FIFODLQ}} {
		wg.Go(func() { errs[i] = createQueue(ctx, c, pair.q, pair.dlq.ARN, p) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// Refuse to mix with an earlier incident's messages.
	for _, q := range t.Queues() {
		n, err := queueDepth(ctx, c, q.URL)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("seed: queue %s already holds %d messages; use another prefix or Reset", q.Name, n)
		}
	}
	return nil
}

func createQueue(ctx context.Context, c *sqs.Client, q *Queue, dlqARN, prefix string) error {
	attrs := map[string]string{
		"MessageRetentionPeriod": strconv.Itoa(q.RetentionSeconds),
		"MaximumMessageSize":     "1048576",
		"VisibilityTimeout":      strconv.Itoa(sourceVisibility),
	}
	if q.FIFO {
		attrs["FifoQueue"] = "true"
	}
	if dlqARN != "" {
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": q.MaxReceiveCount})
		attrs["RedrivePolicy"] = string(policy)
	}
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: attrs})
	var exists *types.QueueNameExists
	if errors.As(err, &exists) {
		return fmt.Errorf("seed: queue %s already exists with other attributes or tags; use another prefix or Reset: %w", q.Name, err)
	}
	if err != nil {
		return fmt.Errorf("seed: creating %s: %w", q.Name, err)
	}
	q.URL = aws.ToString(out.QueueUrl)
	// Tags separately: local-aws-sqs compares CreateQueue tags of an existing
	// queue as a JSON string, so Go's random map order makes a re-run fail
	// with QueueAlreadyExists.
	if _, err := c.TagQueue(ctx, &sqs.TagQueueInput{
		QueueUrl: out.QueueUrl,
		Tags:     map[string]string{"env": "local", "team": "checkout", "seeded-by": "dlqctl-seed", "incident": prefix},
	}); err != nil {
		return fmt.Errorf("seed: tagging %s: %w", q.Name, err)
	}
	if dlqARN != "" {
		// Visibility 0 until dead-lettering is done. Set separately:
		// local-aws-sqs 2.0.2 ignores VisibilityTimeout "0" on CreateQueue
		// (the queue gets 30) but honours it on SetQueueAttributes.
		if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl: out.QueueUrl, Attributes: map[string]string{"VisibilityTimeout": "0"},
		}); err != nil {
			return fmt.Errorf("seed: setting visibility timeout of %s: %w", q.Name, err)
		}
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return fmt.Errorf("seed: reading ARN of %s: %w", q.Name, err)
	}
	q.ARN = a.Attributes[string(types.QueueAttributeNameQueueArn)]
	return nil
}

// queueDepth is visible + in flight + delayed. (local-aws-sqs counts in-flight
// messages in ApproximateNumberOfMessages as well; the sum is only used for
// "is it empty".)
func queueDepth(ctx context.Context, c *sqs.Client, url string) (int, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("seed: reading depth of %s: %w", url, err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n, nil
}

func visibleCount(ctx context.Context, c *sqs.Client, url string) (int, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
}

// sendAll sends the standard messages in concurrent batches and the FIFO
// messages in order, recording each MessageID.
func sendAll(ctx context.Context, c *sqs.Client, t *Truth, workers int) error {
	urls := map[string]string{t.Orders.Name: t.Orders.URL, t.Payments.Name: t.Payments.URL, t.FIFOSource.Name: t.FIFOSource.URL}
	type job struct {
		url string
		idx []int
	}
	var std, fifo []job
	for _, src := range []string{t.Orders.Name, t.Payments.Name, t.FIFOSource.Name} {
		var idx []int
		for i, m := range t.Messages {
			if m.SourceName == src {
				idx = append(idx, i)
			}
		}
		if src != t.FIFOSource.Name {
			// Interleave kinds the way a real DLQ does (deterministically):
			// the emulator keeps insertion order, and a DLQ whose first page
			// is all bare envelopes is a poor demo and a weak test.
			slices.SortFunc(idx, func(a, b int) int { return strings.Compare(t.Messages[a].BodySHA256, t.Messages[b].BodySHA256) })
		}
		for _, b := range chunk(idx, func(i int) int { return entrySize(t.Messages[i].Body, t.Messages[i].Attributes) }) {
			if src == t.FIFOSource.Name {
				fifo = append(fifo, job{urls[src], b})
			} else {
				std = append(std, job{urls[src], b})
			}
		}
	}
	send := func(j job) error {
		entries := make([]types.SendMessageBatchRequestEntry, len(j.idx))
		for k, i := range j.idx {
			m := t.Messages[i]
			entries[k] = types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String(m.Body), MessageAttributes: m.Attributes,
			}
			if m.GroupID != "" {
				entries[k].MessageGroupId = aws.String(m.GroupID)
				entries[k].MessageDeduplicationId = aws.String(m.DedupID)
			}
		}
		ids, err := sendBatch(ctx, c, j.url, entries)
		if err != nil {
			return err
		}
		for k, i := range j.idx {
			t.Messages[i].MessageID = ids[k]
		}
		return nil
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				if err := send(j); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, j := range std {
		jobs <- j
	}
	close(jobs)
	// FIFO order within a group is the order of sends: one batch at a time.
	for _, j := range fifo {
		if err := send(j); err != nil {
			firstErr = cmpErrLocked(&mu, firstErr, err)
			break
		}
	}
	wg.Wait()
	return firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func cmpErrLocked(mu *sync.Mutex, first, err error) error {
	mu.Lock()
	defer mu.Unlock()
	return cmpErr(first, err)
}

// drainIntoDLQ receives from a source (visibility 0, no delete) until it is
// empty, i.e. until the server has dead-lettered every message.
func drainIntoDLQ(ctx context.Context, c *sqs.Client, q Queue, workers int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for !done.Load() {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl:            aws.String(q.URL),
					MaxNumberOfMessages: 10,
				})
				if err != nil {
					errs[w] = fmt.Errorf("seed: dead-lettering %s: %w", q.Name, err)
					done.Store(true)
					return
				}
				if len(out.Messages) > 0 {
					continue
				}
				n, err := queueDepth(ctx, c, q.URL)
				if err != nil {
					errs[w] = err
					done.Store(true)
					return
				}
				if n == 0 {
					done.Store(true)
					return
				}
				select {
				case <-ctx.Done():
					errs[w] = fmt.Errorf("seed: dead-lettering %s: %d messages left: %w", q.Name, n, ctx.Err())
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitCount waits until the queue shows want messages (the move is
// asynchronous on real SQS; on the emulator it is already done).
func waitCount(ctx context.Context, c *sqs.Client, q Queue, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := visibleCount(ctx, c, q.URL)
		if err != nil {
			return fmt.Errorf("seed: counting %s: %w", q.Name, err)
		}
		if n == want {
			return nil
		}
		if n > want || time.Now().After(deadline) {
			return fmt.Errorf("seed: %s holds %d messages, want %d", q.Name, n, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
