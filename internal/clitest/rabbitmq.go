package clitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// BulkRabbit seeds n plain dead letters (PREFIX-bulk-i) into a fresh DLQ.
func BulkRabbit(t *testing.T, n int) (testenv.RabbitMQ, amqpseed.Names, string) {
	t.Helper()
	o := amqpseed.Options{Prefix: RabbitPrefix(t)}
	env, names := SeedRabbit(t, o)
	ref, _ := amqp.ParseVHostRef(env.URL, nil)
	conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := amqpseed.Bulk(context.Background(), conn, o.Prefix, n); err != nil {
		t.Fatal(err)
	}
	return env, names, o.Prefix
}

// AMQPRunSummary is the part of a RabbitMQ redrive's -o json summary the
// tests read.
type AMQPRunSummary struct {
	Status string `json:"status"`
	Moved  int    `json:"moved"`
	Note   string `json:"note"`
}

// Bucket creates an S3 bucket for one test.
func Bucket(t *testing.T, senv testenv.Env, prefix string) string {
	t.Helper()
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, prefix), "_", "-"))
	if _, err := senv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return bucket
}

// SeedRabbit dead-letters o's messages on the stack's RabbitMQ and points
// dlqctl at its management API.
func SeedRabbit(t *testing.T, o amqpseed.Options) (testenv.RabbitMQ, amqpseed.Names) {
	t.Helper()
	env := testenv.RequireRabbitMQ(t)
	t.Setenv(testenv.EnvAMQPManagementURL, env.ManagementURL)
	ref, err := amqp.ParseVHostRef(env.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := amqp.Dial(ctx, ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			amqpseed.Delete(ch, o.Prefix)
		}
		conn.Close()
	})
	n, err := amqpseed.Seed(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	return env, n
}

// RabbitPrefix is a fresh queue-name prefix, all of one length (so none is
// the prefix of another), unique across the test processes that share the
// node: the time to the microsecond and four random hex digits.
func RabbitPrefix(t *testing.T) string {
	t.Helper()
	var rnd [2]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	return "c" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "") + hex.EncodeToString(rnd[:])
}

// OpenTestEndpoint opens dlqctl's RabbitMQ endpoint for queue.
func OpenTestEndpoint(t *testing.T, env testenv.RabbitMQ, queue string) *amqp.Endpoint {
	t.Helper()
	ref, err := broker.ParseRef(env.QueueRef(queue))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := amqp.OpenEndpoint(context.Background(), ref, amqp.Config{ManagementURL: env.ManagementURL})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// DrainIDs consumes a RabbitMQ queue and counts each message-id.
func DrainIDs(t *testing.T, env testenv.RabbitMQ, queue string) map[string]int {
	t.Helper()
	return DrainBy(t, env, queue, func(d amqp091.Delivery) string { return d.MessageId })
}

// DrainBy consumes a RabbitMQ queue and counts its messages by key(d).
func DrainBy(t *testing.T, env testenv.RabbitMQ, queue string, key func(amqp091.Delivery) string) map[string]int {
	t.Helper()
	ref, _ := amqp.ParseVHostRef(env.URL, nil)
	conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		got[key(d)]++
	}
}

// ReadyOf is the number of ready messages in queue.
func ReadyOf(t *testing.T, env testenv.RabbitMQ, queue string) int {
	t.Helper()
	ep := OpenTestEndpoint(t, env, queue)
	d, err := ep.Depth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(d.Ready)
}

// WaitNoUnacked waits until the management API reports no unacknowledged
// messages in queue (its counts trail by the statistics interval).
func WaitNoUnacked(t *testing.T, env testenv.RabbitMQ, queue string) {
	t.Helper()
	ep := OpenTestEndpoint(t, env, queue)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		q, err := ep.Management().Queue(context.Background(), "/", queue)
		if err == nil && q.Unacked == 0 && q.Consumers == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s still has unacknowledged messages a minute after the kill", queue)
}

// OpenTestChannel is an AMQP channel on the test node, closed with the test.
func OpenTestChannel(t *testing.T, env testenv.RabbitMQ) *amqp091.Channel {
	t.Helper()
	ref, _ := amqp.ParseVHostRef(env.URL, nil)
	conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
