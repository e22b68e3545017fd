package seed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS batch limits.
const (
	maxBatchEntries = 10
	// maxBatchBytes stays under the 1 MiB batch payload limit with room for
	// attribute names and types.
	maxBatchBytes = 1000 * 1000
)

// FillConcurrency is the number of concurrent SendMessageBatch calls FillDLQ
// makes.
const FillConcurrency = 8

// FillDLQ sends n messages with bodies mk(0)..mk(n-1) straight to queueURL
// using concurrent SendMessageBatch calls; it is for volume tests and
// benchmarks, so the messages are not dead-lettered and carry no
// DeadLetterQueueSourceArn. A FIFO queue (URL ending in .fifo) gets 8
// message groups ("fill-0".."fill-7", i%8) and unique deduplication ids.
//
// The order of arrival is not the order of i on a standard queue. FillDLQ
// returns once the queue counts every message (see settle).
func FillDLQ(ctx context.Context, c *sqs.Client, queueURL string, n int, mk func(i int) string) error {
	if n <= 0 {
		return nil
	}
	fifo := strings.HasSuffix(queueURL, ".fifo")
	var nonce string
	if fifo {
		b := make([]byte, 6)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		nonce = hex.EncodeToString(b)
	}
	bodies := make([]string, n)
	idx := make([]int, n)
	for i := range n {
		bodies[i] = mk(i)
		idx[i] = i
	}
	batches := chunk(idx, func(i int) int { return len(bodies[i]) })

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan []int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	workers := FillConcurrency
	if fifo {
		workers = 1 // keep each group's order
	}
	for range workers {
		wg.Go(func() {
			for b := range jobs {
				entries := make([]types.SendMessageBatchRequestEntry, len(b))
				for k, i := range b {
					entries[k] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String(bodies[i])}
					if fifo {
						entries[k].MessageGroupId = aws.String("fill-" + strconv.Itoa(i%8))
						entries[k].MessageDeduplicationId = aws.String(nonce + "-" + strconv.Itoa(i))
					}
				}
				if _, err := sendBatch(ctx, c, queueURL, entries); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			}
		})
	}
feed:
	for _, b := range batches {
		select {
		case jobs <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return settle(ctx, c, queueURL)
}

// settle waits (up to 2 s) until the queue reports no delayed messages.
// local-aws-sqs stores every new message as "delayed" until the next event
// loop tick, even with DelaySeconds 0, so a GetQueueAttributes right after
// a send can under-count ApproximateNumberOfMessages.
func settle(ctx context.Context, c *sqs.Client, url string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesDelayed},
		})
		if err != nil {
			return fmt.Errorf("seed: reading %s: %w", url, err)
		}
		if out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)] == "0" || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// chunk splits idx into batches of at most 10 entries and maxBatchBytes.
func chunk(idx []int, size func(i int) int) [][]int {
	var out [][]int
	var cur []int
	bytes := 0
	for _, i := range idx {
		s := size(i)
		if len(cur) > 0 && (len(cur) == maxBatchEntries || bytes+s > maxBatchBytes) {
			out = append(out, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, i)
		bytes += s
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// entrySize approximates what SQS counts against the batch size limit.
func entrySize(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for k, v := range attrs {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// sendBatch sends one batch, retrying failed entries (throttling, transient
// server errors) up to 5 times, and returns the message ids in entry order.
func sendBatch(ctx context.Context, c *sqs.Client, url string, entries []types.SendMessageBatchRequestEntry) ([]string, error) {
	ids := make([]string, len(entries))
	pos := make(map[string]int, len(entries))
	for k, e := range entries {
		pos[aws.ToString(e.Id)] = k
	}
	pending := entries
	for attempt := 0; ; attempt++ {
		out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: pending})
		if err != nil {
			return nil, fmt.Errorf("seed: SendMessageBatch to %s: %w", url, err)
		}
		for _, ok := range out.Successful {
			ids[pos[aws.ToString(ok.Id)]] = aws.ToString(ok.MessageId)
		}
		if len(out.Failed) == 0 {
			return ids, nil
		}
		f := out.Failed[0]
		if attempt == 4 || f.SenderFault {
			return nil, fmt.Errorf("seed: SendMessageBatch to %s: %d entries failed, first: %s: %s",
				url, len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		retry := make([]types.SendMessageBatchRequestEntry, 0, len(out.Failed))
		for _, f := range out.Failed {
			retry = append(retry, entries[pos[aws.ToString(f.Id)]])
		}
		pending = retry
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
}
