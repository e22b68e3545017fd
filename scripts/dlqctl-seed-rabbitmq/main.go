// Command dlqctl-seed-rabbitmq dead-letters messages for real on a RabbitMQ
// server (the local stack's, by default from DLQCTL_AMQP_URL): rejected,
// Spring AMQP recoverer, TTL expiry, per-message TTL, max-length overflow
// and a quorum queue's delivery limit, into PREFIX.dlq. It prints a JSON
// summary. For the demo, the runbooks and manual testing.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

func main() {
	url := flag.String("url", os.Getenv("DLQCTL_AMQP_URL"), "amqp://USER:PASS@HOST:PORT/ (default $DLQCTL_AMQP_URL)")
	prefix := flag.String("prefix", "demo", "name prefix: PREFIX.orders, PREFIX.dlx, PREFIX.dlq, ...")
	scale := flag.Int("scale", 1, "multiply every kind's count")
	bulk := flag.Int("bulk", 0, "also dead-letter this many rejected messages (benchmarks)")
	quorumDLQ := flag.Bool("quorum-dlq", false, "make the DLQ a quorum queue")
	reset := flag.Bool("reset", false, "delete PREFIX's queues and exchanges first")
	bucket := flag.String("bucket", "", "also create this S3 bucket (the AWS_* / AWS_ENDPOINT_URL_S3 environment: the local stack's S3) for archive demos")
	flag.Parse()
	if *bucket != "" {
		if err := createBucket(*bucket); err != nil {
			fmt.Fprintln(os.Stderr, "dlqctl-seed-rabbitmq:", err)
			os.Exit(1)
		}
	}
	if err := run(*url, *prefix, *scale, *bulk, *quorumDLQ, *reset); err != nil {
		fmt.Fprintln(os.Stderr, "dlqctl-seed-rabbitmq:", err)
		os.Exit(1)
	}
}

func createBucket(name string) error {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	return err
}

func run(url, prefix string, scale, bulk int, quorumDLQ, reset bool) error {
	if url == "" {
		return fmt.Errorf("no server: pass --url or set DLQCTL_AMQP_URL (scripts/stack.sh env)")
	}
	ref, err := amqp.ParseVHostRef(url, os.Getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn, err := amqp.Dial(ctx, ref, amqp.ConnOptions{ConnectionName: "dlqctl-seed-rabbitmq"})
	if err != nil {
		return err
	}
	defer conn.Close()
	if reset {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		amqpseed.Delete(ch, prefix)
		ch.Close()
	}
	o := amqpseed.Default(prefix)
	o.Rejected, o.Spring, o.Expired = o.Rejected*scale, o.Spring*scale, o.Expired*scale
	o.PerMessageTTL, o.MaxLen, o.DeliveryLimit = o.PerMessageTTL*scale, o.MaxLen*scale, o.DeliveryLimit*scale
	o.Rejected += bulk
	o.QuorumDLQ = quorumDLQ
	start := time.Now()
	n, err := amqpseed.Seed(ctx, conn, o)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"dlq": n.DLQ, "dlx": n.DLX, "exchange": n.Exchange, "messages": o.Total(),
		"by_reason": map[string]int{"rejected": o.Rejected, "spring-recoverer": o.Spring, "expired": o.Expired + o.PerMessageTTL, "maxlen": o.MaxLen, "delivery_limit": o.DeliveryLimit},
		"took":      time.Since(start).Round(time.Millisecond).String(),
	})
}
