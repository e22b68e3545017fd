// Package worker is a small SQS consumer for tests and the demo: it
// consumes a source queue and fails messages by rule, so redrive canaries
// and guards meet real bounce-backs through the queue's RedrivePolicy.
//
// Modes:
//
//	ok    process everything (delete after "handling")
//	bug   fail messages whose JSON body has a null "amount" at any depth
//	      (the bug that filled the DLQ); process the rest
//	down  fail everything (the dependency is down)
//
// With Options.Logs the worker also writes what it did to a CloudWatch Logs
// group in one of four realistic styles (see LogSink): the failure context
// that SQS does not keep, for dlqctl --logs to find.
//
// A failed message is not deleted; its visibility is set to 0 so it is
// received again at once, and after maxReceiveCount receives SQS moves it
// to the dead-letter queue. The mode can be read from a file on every
// batch, so a test or the demo "ships the fix" by writing "ok" to it.
package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Modes.
const (
	ModeOK   = "ok"
	ModeBug  = "bug"
	ModeDown = "down"
)

// API is what the worker needs from SQS.
type API interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Options configure a worker.
type Options struct {
	QueueURL string
	// Mode is used when ModeFile is empty or unreadable.
	Mode string
	// ModeFile, when set, holds the mode; it is re-read on every batch.
	ModeFile string
	// Concurrency is the number of receive loops (default 2).
	Concurrency int
	// Wait is the long-poll wait (default 1s).
	Wait time.Duration
	// OnMessage, when set, is called for every message handled.
	OnMessage func(body string, failed bool)
	// OnError, when set, is called for SQS errors (the worker carries on).
	OnError func(error)
	// Logs, when set, receives a log line (in its style) for every message
	// handled: failures with their error, as a real consumer logs them.
	Logs *LogSink
}

// Stats count what the worker did.
type Stats struct {
	Processed int64 `json:"processed"`
	Failed    int64 `json:"failed"`
}

// ReadMode returns the mode in path (trimmed), or def when it cannot be read.
func ReadMode(path, def string) string {
	if path == "" {
		return def
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	m := strings.TrimSpace(string(b))
	if m != ModeOK && m != ModeBug && m != ModeDown {
		return def
	}
	return m
}

// Fails reports whether a message body fails in mode.
func Fails(mode, body string) bool {
	switch mode {
	case ModeDown:
		return true
	case ModeBug:
		var v any
		if json.Unmarshal([]byte(body), &v) != nil {
			return false
		}
		return hasNullAmount(v)
	}
	return false
}

func hasNullAmount(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "amount" && val == nil {
				return true
			}
			if hasNullAmount(val) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNullAmount(e) {
				return true
			}
		}
	}
	return false
}

// Run consumes the queue until ctx ends.
func Run(ctx context.Context, api API, opt Options) Stats {
	if opt.Concurrency <= 0 {
		opt.Concurrency = 2
	}
	if opt.Wait <= 0 {
		opt.Wait = time.Second
	}
	if opt.Mode == "" {
		opt.Mode = ModeOK
	}
	var processed, failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < opt.Concurrency; i++ {
		wg.Add(1)
		loop := i
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// The receive is not cut short by ctx: an abandoned long poll
				// can still claim messages at the server that then nobody
				// holds (seen with local-aws-sqs). The batch received is
				// handled before the loop checks ctx again.
				out, err := api.ReceiveMessage(context.WithoutCancel(ctx), &sqs.ReceiveMessageInput{
					QueueUrl: aws.String(opt.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(opt.Wait / time.Second),
					VisibilityTimeout: 30, MessageAttributeNames: []string{"All"},
				})
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					if opt.OnError != nil {
						opt.OnError(err)
					}
					time.Sleep(200 * time.Millisecond)
					continue
				}
				mode := ReadMode(opt.ModeFile, opt.Mode)
				var ok, bad []types.Message
				for _, m := range out.Messages {
					if Fails(mode, aws.ToString(m.Body)) {
						bad = append(bad, m)
					} else {
						ok = append(ok, m)
					}
					if opt.OnMessage != nil {
						opt.OnMessage(aws.ToString(m.Body), Fails(mode, aws.ToString(m.Body)))
					}
				}
				bctx := context.WithoutCancel(ctx)
				if opt.Logs != nil && len(out.Messages) > 0 {
					// Logged before the failure is handed back to SQS, as a
					// consumer does.
					if err := opt.Logs.Batch(bctx, loop, mode, ok, bad); err != nil && opt.OnError != nil {
						opt.OnError(fmt.Errorf("writing logs: %w", err))
					}
				}
				if len(ok) > 0 {
					entries := make([]types.DeleteMessageBatchRequestEntry, len(ok))
					for i, m := range ok {
						entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
					}
					if _, err := api.DeleteMessageBatch(bctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(opt.QueueURL), Entries: entries}); err == nil {
						processed.Add(int64(len(ok)))
					} else if opt.OnError != nil {
						opt.OnError(err)
					}
				}
				if len(bad) > 0 {
					entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(bad))
					for i, m := range bad {
						entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}
					}
					out, err := api.ChangeMessageVisibilityBatch(bctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(opt.QueueURL), Entries: entries})
					if opt.OnError != nil {
						if err != nil {
							opt.OnError(err)
						} else if len(out.Failed) > 0 {
							opt.OnError(fmt.Errorf("failing %d message(s): %s", len(out.Failed), aws.ToString(out.Failed[0].Message)))
						}
					}
					failed.Add(int64(len(bad)))
				}
			}
		}()
	}
	wg.Wait()
	return Stats{Processed: processed.Load(), Failed: failed.Load()}
}

// String renders stats for logs.
func (s Stats) String() string { return fmt.Sprintf("%d processed, %d failed", s.Processed, s.Failed) }
