// Command worker is the demo/test consumer: it consumes an SQS queue and
// fails messages by rule (see internal/worker), so a redrive canary meets
// real bounce-backs through the queue's RedrivePolicy.
//
//	go run ./scripts/dlqctl-worker --queue orders --mode-file /tmp/orders.mode
//	echo bug > /tmp/orders.mode   # null amounts fail again
//	echo ok  > /tmp/orders.mode   # ship the fix
//
// AWS settings come from the environment (eval "$(scripts/stack.sh env)").
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
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/worker"
)

func main() {
	q := flag.String("queue", "", "queue name or URL to consume")
	mode := flag.String("mode", worker.ModeOK, "ok, bug (fail null amounts) or down (fail everything)")
	modeFile := flag.String("mode-file", "", "file holding the mode, re-read on every batch (overrides --mode when readable)")
	conc := flag.Int("concurrency", 2, "receive loops")
	flag.Parse()
	if *q == "" {
		fmt.Fprintln(os.Stderr, "worker: --queue is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	api := sqs.NewFromConfig(cfg)
	url := *q
	if !strings.Contains(url, "://") {
		out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(url)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		url = aws.ToString(out.QueueUrl)
	}
	fmt.Fprintf(os.Stderr, "worker: consuming %s (mode %s)\n", url, worker.ReadMode(*modeFile, *mode))
	done := make(chan worker.Stats, 1)
	go func() {
		done <- worker.Run(ctx, api, worker.Options{QueueURL: url, Mode: *mode, ModeFile: *modeFile, Concurrency: *conc})
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
