// Command seed builds a realistic dead-letter incident on the local SQS
// emulator and prints its queues and message counts as JSON.
//
//	go run ./scripts/dlqctl-seed --prefix demo [--scale 500] [--reset]
//
// The endpoint comes from --endpoint-url, else from the local stack
// (AWS_ENDPOINT_URL_SQS or the scripts/stack.sh env file). It never falls back
// to real AWS: seeding creates queues and sends messages, so any endpoint
// that is not a loopback address (127.0.0.1, ::1, localhost) is refused
// with exit 2.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/localonly"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	prefix := fs.String("prefix", "demo", "queue name prefix: PREFIX-dlq, PREFIX-orders, PREFIX-payments, PREFIX-dlq.fifo, PREFIX-orders.fifo")
	scale := fs.Int("scale", 0, "extra transient messages to dead-letter through PREFIX-orders")
	reset := fs.Bool("reset", false, "delete the PREFIX-* queues first")
	endpoint := fs.String("endpoint-url", "", "SQS endpoint of a local stack, loopback only (default: the local stack)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./scripts/dlqctl-seed [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}

	env, err := testenv.Lookup()
	if *endpoint != "" {
		if err != nil {
			env = testenv.Env{Region: "us-east-1", AccessKey: "dlqctl-local", SecretKey: "dlqctl-local-secret"}
		}
		env.SQSEndpoint = *endpoint
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "seed: no local stack: %v\nstart it with scripts/stack.sh start, or pass --endpoint-url\n", err)
		return 1
	}

	if err := localonly.Check("SQS endpoint", env.SQSEndpoint); err != nil {
		fmt.Fprintf(os.Stderr, "seed: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client := sqs.NewFromConfig(env.AWSConfig(ctx), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(env.SQSEndpoint)
	})
	truth, err := seed.Incident(ctx, client, seed.Options{Prefix: *prefix, Scale: *scale, Reset: *reset})
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // already "seed: ..."
		return 1
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(truth.Summary()); err != nil {
		fmt.Fprintf(os.Stderr, "seed: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "seed: %d messages dead-lettered in %s (create %s, send %s, dead-letter %s)\n",
		len(truth.Messages), truth.Timings.Total.Round(1e6), truth.Timings.CreateQueues.Round(1e6),
		truth.Timings.Send.Round(1e6), truth.Timings.DeadLetter.Round(1e6))
	return 0
}
