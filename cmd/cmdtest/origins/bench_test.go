package origins

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("DLQCTL_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 300
}

// BenchmarkOriginRedriveVsBareLoop: for each origin kind, DLQCTL_BENCH_N
// messages (default 300) redriven --to source by dlqctl (in-process: origin
// resolution, journal with fsync, lease, per-entry accounting) and by a
// bare loop of the same calls (receive 10 → deliver to the origin: Invoke
// Event, or SendMessageBatch to the subscriber's / target's queue →
// DeleteMessageBatch), 8 workers each, order loop, dlqctl, dlqctl, loop.
// Reports msgs/s of each and the ratio per kind.
func BenchmarkOriginRedriveVsBareLoop(b *testing.B) {
	n := benchN()
	for _, kind := range []string{"lambda-async", "sns-subscription", "eventbridge-target"} {
		b.Run(kind, func(b *testing.B) {
			s := newStack(b)
			var dl, lp []float64
			for i := 0; i < b.N; i++ {
				for _, who := range []string{"loop", "dlqctl", "dlqctl", "loop"} {
					dlqURL, deliver, count := s.benchKind(b, kind, n)
					start := time.Now()
					if who == "dlqctl" {
						r := s.run(b, "redrive", dlqURL, "--yes", "--concurrency", "8", "--state-dir", b.TempDir(), "-o", "json")
						if r.Code != 0 {
							b.Fatalf("dlqctl exit %d: %s", r.Code, r.Stderr)
						}
						dl = append(dl, float64(n)/time.Since(start).Seconds())
					} else {
						moved := s.bareLoop(b, dlqURL, deliver, n)
						lp = append(lp, float64(moved)/time.Since(start).Seconds())
					}
					// dlqctl delivers each message once; the bare loop
					// can deliver one twice (moto handed a message to two
					// receives), which only makes it look faster.
					if got := count(); got != n && (who == "dlqctl" || got < n) {
						b.Fatalf("%s delivered %d of %d", who, got, n)
					}
				}
			}
			m := func(xs []float64) float64 {
				t := 0.0
				for _, x := range xs {
					t += x
				}
				return t / float64(len(xs))
			}
			b.ReportMetric(m(dl), "dlqctl-msgs/s")
			b.ReportMetric(m(lp), "loop-msgs/s")
			b.ReportMetric(m(dl)/m(lp), "ratio")
			b.Logf("%s: %d messages, 8 workers: dlqctl %.0f msgs/s %v, bare loop %.0f msgs/s %v, ratio %.2f", kind, n, m(dl), dl, m(lp), lp, m(dl)/m(lp))
		})
	}
}

// benchKind sets up one DLQ of kind with n messages; deliver is what the
// bare loop calls per received batch; count says how many reached the
// origin.
func (s *stack) benchKind(b *testing.B, kind string, n int) (dlqURL string, deliver func(context.Context, []sqstypes.Message) error, count func() int) {
	ctx := context.Background()
	dlqURL, dlqARN := s.queue(b, "bench-dlq", nil)
	body := func(i int) string { return fmt.Sprintf(`{"orderId":"b-%05d","pad":"%s"}`, i, strings.Repeat("x", 200)) }
	var attrs func(int) map[string]string
	switch kind {
	case "lambda-async":
		fn, _ := s.function(b, "bench-fn", dlqARN, 3, nil)
		attrs = lambdaAsyncAttrs
		deliver = func(ctx context.Context, ms []sqstypes.Message) error {
			var wg sync.WaitGroup
			var first atomic.Value
			for _, m := range ms {
				wg.Add(1)
				go func(p string) {
					defer wg.Done()
					if _, err := s.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), InvocationType: lambdatypes.InvocationTypeEvent, Payload: []byte(p)}); err != nil {
						first.CompareAndSwap(nil, err)
					}
				}(aws.ToString(m.Body))
			}
			wg.Wait()
			if err, _ := first.Load().(error); err != nil {
				return err
			}
			return nil
		}
		before := len(s.fake.Invocations())
		count = func() int { return len(s.fake.Invocations()) - before }
	case "sns-subscription", "eventbridge-target":
		url, arn := s.queue(b, "bench-origin", nil)
		if kind == "sns-subscription" {
			topic, err := s.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(strings.ReplaceAll(dlqARN[strings.LastIndexByte(dlqARN, ':')+1:], "dlq", "topic"))})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn),
				Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `"}`, "RawMessageDelivery": "true"}}); err != nil {
				b.Fatal(err)
			}
		} else {
			_, ruleARN := s.rule(b, s.eventBus(b), ebtypes.Target{Id: aws.String("q"), Arn: aws.String(arn), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)}})
			attrs = func(int) map[string]string {
				return map[string]string{"RULE_ARN": ruleARN, "TARGET_ARN": arn, "ERROR_CODE": "THROTTLING"}
			}
		}
		deliver = func(ctx context.Context, ms []sqstypes.Message) error {
			var es []sqstypes.SendMessageBatchRequestEntry
			for i, m := range ms {
				es = append(es, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: m.Body})
			}
			_, err := s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: es})
			return err
		}
		count = func() int { v, f := clientDepth(b, s, url); return v + f }
	}
	s.sendBatch(b, dlqURL, n, body, attrs)
	return dlqURL, deliver, count
}

func clientDepth(b testing.TB, s *stack, url string) (int, int) {
	out, err := s.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		b.Fatal(err)
	}
	v, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	f, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return v, f
}

// bareLoop: 8 workers of receive → deliver → delete, until n are moved.
func (s *stack) bareLoop(b testing.TB, url string, deliver func(context.Context, []sqstypes.Message) error, n int) int64 {
	ctx := context.Background()
	var moved atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for moved.Load() < int64(n) {
				out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
					VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}})
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				if err := deliver(ctx, out.Messages); err != nil {
					b.Error(err)
					return
				}
				var del []sqstypes.DeleteMessageBatchRequestEntry
				for i, m := range out.Messages {
					del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
				}
				if _, err := s.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
					b.Error(err)
					return
				}
				moved.Add(int64(len(out.Messages)))
			}
		}()
	}
	wg.Wait()
	return moved.Load()
}
