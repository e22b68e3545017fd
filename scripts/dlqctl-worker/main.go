// Command worker is the demo/test consumer: it consumes an SQS queue and
// fails messages by rule (see internal/worker), so a redrive canary meets
// real bounce-backs through the queue's RedrivePolicy.
//
//	go run ./scripts/dlqctl-worker --queue orders --mode-file /tmp/orders.mode
//	echo bug > /tmp/orders.mode   # null amounts fail again
//	echo ok  > /tmp/orders.mode   # ship the fix
//	go run ./scripts/dlqctl-worker --queue orders --log-group /aws/lambda/orders --log-style lambda
//
// With --log-group every failure is also logged to CloudWatch Logs
// (endpoint: AWS_ENDPOINT_URL_CLOUDWATCH_LOGS), in the --log-style of a
// real consumer: powertools (Python Lambda with AWS Lambda Powertools, JSON),
// service (a Go service, slog text), java (Spring Boot, exception and stack
// trace) or lambda (Node.js Lambda runtime lines keyed by request id).
//
// AWS settings come from the environment (eval "$(scripts/stack.sh env)").
// It only ever talks to a local stack: an SQS endpoint (AWS_ENDPOINT_URL_SQS,
// else AWS_ENDPOINT_URL) or logs endpoint that is missing (which means AWS)
// or not a loopback address is refused with exit 2, so a shell pointed at a
// real account cannot have its queues consumed by the demo worker.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/localonly"
	"github.com/dlqctl/dlqctl/internal/worker"
)

func main() {
	q := flag.String("queue", "", "queue name or URL to consume")
	mode := flag.String("mode", worker.ModeOK, "ok, bug (fail null amounts) or down (fail everything)")
	modeFile := flag.String("mode-file", "", "file holding the mode, re-read on every batch (overrides --mode when readable)")
	conc := flag.Int("concurrency", 2, "receive loops")
	logGroup := flag.String("log-group", "", "also log every message handled to this CloudWatch Logs group")
	logStyle := flag.String("log-style", worker.StylePowertools, "log style: "+strings.Join(worker.LogStyles, ", "))
	flag.Parse()
	if *q == "" {
		fmt.Fprintln(os.Stderr, "worker: --queue is required")
		os.Exit(2)
	}
	sqsEndpoint := localonly.ServiceEndpoint("SQS")
	if err := localonly.Check("SQS endpoint", sqsEndpoint); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	logsEndpoint := localonly.ServiceEndpoint("CLOUDWATCH_LOGS")
	if *logGroup != "" {
		if err := localonly.Check("CloudWatch Logs endpoint", logsEndpoint); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	// The checked endpoints, explicitly: a profile's endpoint_url must not
	// take the worker anywhere else.
	api := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(sqsEndpoint) })
	url := *q
	if !strings.Contains(url, "://") {
		out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(url)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		url = aws.ToString(out.QueueUrl)
	}
	var sink *worker.LogSink
	if *logGroup != "" {
		sink = &worker.LogSink{API: cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) { o.BaseEndpoint = aws.String(logsEndpoint) }), Group: *logGroup, Style: *logStyle}
		if err := sink.Ensure(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "worker: logging to %s (%s style)\n", *logGroup, *logStyle)
	}
	fmt.Fprintf(os.Stderr, "worker: consuming %s (mode %s)\n", url, worker.ReadMode(*modeFile, *mode))
	done := make(chan worker.Stats, 1)
	go func() {
		done <- worker.Run(ctx, api, worker.Options{QueueURL: url, Mode: *mode, ModeFile: *modeFile, Concurrency: *conc, Logs: sink,
			OnError: func(err error) { fmt.Fprintln(os.Stderr, "worker:", err) }})
	}()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case s := <-done:
			fmt.Fprintf(os.Stderr, "worker: stopped: %s\n", s)
			return
		case <-t.C:
			fmt.Fprintf(os.Stderr, "worker: mode %s\n", worker.ReadMode(*modeFile, *mode))
		}
	}
}
