package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/pipeline"
)

// lastSink delivers everything and notes when it delivered last.
type lastSink struct {
	recSink
	mu   sync.Mutex
	last time.Time
}

func (s *lastSink) Deliver(ctx context.Context, w int, key string, items []pipeline.Item, p []any) ([]pipeline.Outcome, pipeline.Commit) {
	outs, c := s.recSink.Deliver(ctx, w, key, items, p)
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
	return outs, c
}

// BenchmarkEndOfRunTail measures the tail of a run: the time from the last
// message delivered to the end of pipeline.Run (the run's own decision
// that the queue is drained, and what it waits for), for a standard queue
// on local-aws-sqs behind a proxy whose counts trail by 0 or 60 s, filled
// long before the run (the counts still show it full) or just before (the
// counts still say empty), and for a FIFO queue of 5 groups on moto (which
// locks groups as AWS does). Reported as tail-ms (and total-ms per run of
// 200 messages); the counts must not change the tail.
func BenchmarkEndOfRunTail(b *testing.B) {
	const n = 200
	for _, bc := range []struct {
		name string
		moto bool
		fifo bool
		lag  time.Duration
		just bool
	}{
		{name: "standard/lag=0s", lag: 0},
		{name: "standard/lag=60s/filled-long-before", lag: 60 * time.Second},
		{name: "standard/lag=60s/filled-just-before", lag: 60 * time.Second, just: true},
		{name: "fifo-moto/lag=0s", moto: true, fifo: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := testenv.Require(b)
			if bc.moto {
				e = testenv.RequireMoto(b)
			}
			api := e.SQS(b)
			p, err := faultproxy.New(e.SQSEndpoint)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			p.SetCountLag(bc.lag)
			c := sqs.New(awssqs.NewFromConfig(e.AWSConfig(context.Background()), func(o *awssqs.Options) { o.BaseEndpoint = aws.String(p.URL) }), e.Region)
			var tail, total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name, attrs := testenv.UniqueName(b, "tail"), map[string]string{}
				if bc.fifo {
					name, attrs = name+".fifo", map[string]string{"FifoQueue": "true"}
				}
				out, err := api.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
				if err != nil {
					b.Fatal(err)
				}
				url := aws.ToString(out.QueueUrl)
				fill := func() {
					for j := 0; j < n; j += 10 {
						var es []types.SendMessageBatchRequestEntry
						for k := j; k < j+10; k++ {
							en := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(k)), MessageBody: aws.String(fmt.Sprintf("g%d-%03d", k%5, k))}
							if bc.fifo {
								en.MessageGroupId, en.MessageDeduplicationId = aws.String(fmt.Sprintf("g%d", k%5)), aws.String(fmt.Sprint(k))
							}
							es = append(es, en)
						}
						if _, err := api.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: es}); err != nil {
							b.Fatal(err)
						}
					}
				}
				if bc.just {
					p.Watch(url)
					fill()
				} else {
					fill()
					time.Sleep(100 * time.Millisecond) // the emulator's counts catch up
					p.Watch(url)
				}
				q, err := c.Resolve(context.Background(), url)
				if err != nil {
					b.Fatal(err)
				}
				sink := &lastSink{}
				src := sqs.NewQueueSource(c, q, sqs.QueueSourceOptions{Visibility: 30 * time.Second})
				b.StartTimer()
				start := time.Now()
				res, err := pipeline.Run(context.Background(), src, sink, pipeline.Options{})
				end := time.Now()
				b.StopTimer()
				_ = src.Close(context.Background())
				if err != nil || !res.Complete || res.Delivered != n {
					b.Fatalf("run: %v, complete %v, delivered %d of %d: %s", err, res.Complete, res.Delivered, n, res.Note)
				}
				sink.mu.Lock()
				tail += end.Sub(sink.last)
				sink.mu.Unlock()
				total += end.Sub(start)
				_, _ = api.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(url)})
				b.StartTimer()
			}
			b.ReportMetric(float64(tail.Milliseconds())/float64(b.N), "tail-ms")
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "total-ms")
		})
	}
}
