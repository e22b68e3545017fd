package runbooks

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// TestRabbitMQRunbook runs rabbitmq-dlq.md against the stack's RabbitMQ
// node on a freshly dead-lettered incident (rejected, Spring recoverer,
// TTL, max-length, quorum delivery limit) and S3 on versitygw.
func TestRabbitMQRunbook(t *testing.T) {
	if _, err := os.Stat("rabbitmq-dlq.md"); err != nil {
		t.Fatal(err)
	}
	env := testenv.Require(t)
	rmq := testenv.RequireRabbitMQ(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref, err := amqp.ParseVHostRef(rmq.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := amqp.Dial(ctx, ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prefix := "rb" + time.Now().Format("150405.000000")
	o := amqpseed.Default(prefix)
	names, err := amqpseed.Seed(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// The recovery queue dead-letters into the DLQ (the restore canary
	// watches it).
	if _, err := ch.QueueDeclare(prefix+".recovery", true, false, false, false, amqp091.Table{"x-dead-letter-exchange": names.DLX}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			amqpseed.Delete(ch, prefix)
			_, _ = ch.QueueDelete(prefix+".recovery", false, false, false)
		}
	})
	bucket := testenv.BucketName(t, "rbq")
	if _, err := env.S3(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	inc := &incident{bucket: bucket, vars: map[string]string{
		"DLQ":                        rmq.QueueRef(names.DLQ),
		"VHOST":                      rmq.URL,
		"PREFIX":                     prefix,
		"RECOVERY":                   rmq.QueueRef(prefix + ".recovery"),
		"BUCKET":                     bucket,
		"DLQCTL_AMQP_MANAGEMENT_URL": rmq.ManagementURL,
		"DLQCTL_AMQP_PASSWORD":       rmq.Password,
	}}
	out := runRunbook(t, env, "rabbitmq-dlq.md", inc)
	_ = out
	// After the runbook: the DLQ holds only what died again during the
	// replay (a TTL or length limit hit again), the recovery queue what
	// was archived.
	q, err := ch.QueueDeclarePassive(prefix+".recovery", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Messages == 0 {
		t.Errorf("nothing was restored to the recovery queue")
	}
	orders, err := ch.QueueDeclarePassive(names.Orders, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the runbook: %d restored to recovery, %d back on %s", q.Messages, orders.Messages, names.Orders)
}
