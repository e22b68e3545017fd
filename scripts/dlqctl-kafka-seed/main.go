// Command dlqctl-kafka-seed builds a Kafka dead-letter incident on the local
// Kafka test server (kfake, started by scripts/stack.sh) and prints its
// topics and record counts as JSON:
//
//	go run ./scripts/dlqctl-kafka-seed --prefix demo [--orders 60] [--payments 20] [--inventory 20]
//
// Topics: PREFIX-orders with PREFIX-orders-retry-1/2/3 and PREFIX-orders-dlq
// (the hand-rolled retry-topic pattern, dlq_* / original_* headers),
// PREFIX-payments and PREFIX-payments-dlt (Spring Kafka's
// DeadLetterPublishingRecoverer headers), PREFIX-inventory and
// PREFIX-connect-dlq (Kafka Connect's errors.deadletterqueue headers),
// written by consumers that really consume the source records and fail.
// The brokers come from --brokers, else DLQCTL_KAFKA_BROKERS or the stack's
// env file.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("dlqctl-kafka-seed", flag.ContinueOnError)
	prefix := fs.String("prefix", "demo", "topic name prefix")
	brokers := fs.String("brokers", "", "bootstrap brokers HOST:PORT[,…] (default: the local stack's kfake)")
	orders := fs.Int("orders", 60, "order events the failing orders service consumes")
	payments := fs.Int("payments", 20, "payments the failing Spring listener consumes")
	inventory := fs.Int("inventory", 20, "records the failing Connect sink consumes")
	partitions := fs.Int("partitions", 3, "partitions of the source topics")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *brokers == "" {
		b, err := testenv.LookupKafka()
		if err != nil {
			fmt.Fprintf(os.Stderr, "dlqctl-kafka-seed: no --brokers and no local stack: %v\n", err)
			return 2
		}
		*brokers = b
	}
	addr, err := kafka.ParseAddress("kafka://" + *brokers + "/seed")
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-kafka-seed: %v\n", err)
		return 2
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-kafka-seed: %v\n", err)
		return 1
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := kafkaseed.Seed(ctx, cl, kafkaseed.Options{Prefix: strings.ToLower(*prefix), Orders: *orders, Payments: *payments, Inventory: *inventory, Partitions: int32(*partitions)})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-kafka-seed: %v\n", err)
		return 1
	}
	out := map[string]any{"brokers": *brokers, "topics": res.Topics, "dead_letters": res.DeadLetters}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	return 0
}
