package inspect

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
)

// BenchmarkClassifyWithLogs measures `classify --all --summary --logs` on
// a plain DLQ of 1,000 messages whose consumer (a Powertools
// Lambda) logged each failure: messages classified per second end to end
// (read, log search at dlqctl's default rate limit of 4 calls/s, classify,
// release) and FilterLogEvents calls per 1,000 messages. --logs-refresh
// makes every iteration search again instead of reading the cache.
func BenchmarkClassifyWithLogs(b *testing.B) {
	// SQS on local-aws-sqs (moto's receive slows down with 1,000 messages
	// held), CloudWatch Logs on moto.
	env := testenv.Require(b)
	moto := testenv.RequireMoto(b)
	b.Setenv(testenv.EnvLogsEndpoint, moto.SQSEndpoint)
	c := env.SQS(b)
	name := testenv.UniqueName(b, "lgbench")
	out, err := c.CreateQueue(b.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		b.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	b.Cleanup(func() { _, _ = c.DeleteQueue(b.Context(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	group := "/aws/lambda/" + name
	sink := &worker.LogSink{API: moto.Logs(b), Group: group, Style: worker.StylePowertools}
	const n = 1000
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(`{"eventType":"OrderPaid","payload":{"order":"o-` + strconv.Itoa(j) + `"}}`)})
		}
		res, err := c.SendMessageBatch(b.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil || len(res.Failed) > 0 {
			b.Fatal(err, res)
		}
		var msgs []types.Message
		for _, ok := range res.Successful {
			msgs = append(msgs, types.Message{MessageId: ok.MessageId})
		}
		if err := sink.Batch(b.Context(), 0, worker.ModeDown, nil, msgs); err != nil {
			b.Fatal(err)
		}
	}
	callsRE := regexp.MustCompile(`(\d+) FilterLogEvents call`)
	state := b.TempDir()
	calls := 0
	start := time.Now()
	for b.Loop() {
		res := clitest.Run(b, env, "", "classify", url, "--all", "--summary", "-o", "json", "--logs", group, "--logs-refresh", "--state-dir", state)
		m := callsRE.FindStringSubmatch(res.Stderr)
		if res.Code != 0 || m == nil {
			b.Fatalf("classify: %d %s", res.Code, res.Stderr)
		}
		k, _ := strconv.Atoi(m[1])
		calls += k
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(calls)/float64(b.N)*1000/n, "calls/1000msgs")
}
