package redrive

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// TestAMQPEndOfRunMovesEverything: a redrive and an archive --delete with
// the default concurrency and prefetch (more messages than the prefetch,
// several workers reading one consumer) end only when the queue is
// drained: all N moved, status completed, exit 0.
func TestAMQPEndOfRunMovesEverything(t *testing.T) {
	const n = 1500 // more than the default prefetch (1000)
	env, names, prefix := clitest.BulkRabbit(t, n)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	res := clitest.Run(t, testenv.Env{}, "", "redrive", env.QueueRef(names.DLQ), "--to", "source", "--yes", "-o", "json")
	var sum clitest.AMQPRunSummary
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil {
		t.Fatalf("redrive: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 0 || sum.Status != "completed" || sum.Moved != n {
		t.Fatalf("redrive: exit %d, status %q, moved %d of %d\n%s", res.Code, sum.Status, sum.Moved, n, res.Stderr)
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("redrive said completed with %d messages left in the DLQ", left)
	}
	got := clitest.DrainIDs(t, env, names.Orders)
	for i := 0; i < n; i++ {
		if id := fmt.Sprintf("%s-bulk-%d", prefix, i); got[id] != 1 {
			t.Fatalf("%s reached the source %d times", id, got[id])
		}
	}

	// The same messages dead-lettered again, archived with --delete.
	senv := testenv.Require(t)
	env2, names2, _ := clitest.BulkRabbit(t, n)
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "re"), "_", "-"))
	if _, err := senv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	res = clitest.Run(t, senv, "", "archive", env2.QueueRef(names2.DLQ), "--to", "s3://"+bucket+"/dlq", "--delete", "--yes", "-o", "json")
	var arc struct {
		Status string `json:"status"`
		Stats  struct {
			Archived int `json:"archived"`
			Deleted  int `json:"deleted"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &arc); err != nil {
		t.Fatalf("archive: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 0 || arc.Status != "completed" || arc.Stats.Archived != n || arc.Stats.Deleted != n {
		t.Fatalf("archive --delete: exit %d %s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	if left := clitest.ReadyOf(t, env2, names2.DLQ); left != 0 {
		t.Fatalf("archive said completed with %d messages left in the DLQ", left)
	}
}

// TestAMQPEndOfRunOtherConsumerHolds: another consumer holds some of the
// DLQ's messages unacknowledged. The run moves everything else and says
// it is partial (exit 4), naming how many the other consumer holds.
func TestAMQPEndOfRunOtherConsumerHolds(t *testing.T) {
	const n, held = 300, 7
	env, names, _ := clitest.BulkRabbit(t, n)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	ch := clitest.OpenTestChannel(t, env)
	if err := ch.Qos(held, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(names.DLQ, "other-consumer", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < held; i++ {
		select {
		case <-ds:
		case <-time.After(10 * time.Second):
			t.Fatal("the other consumer got no delivery")
		}
	}
	res := clitest.Run(t, testenv.Env{}, "", "redrive", env.QueueRef(names.DLQ), "--to", "source", "--yes", "-o", "json")
	var sum clitest.AMQPRunSummary
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil {
		t.Fatalf("redrive: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 4 || sum.Status == "completed" || sum.Moved != n-held {
		t.Fatalf("redrive with %d held by another consumer: exit %d, status %q, moved %d\n%s\n%s", held, res.Code, sum.Status, sum.Moved, res.Stdout, res.Stderr)
	}
	all := res.Stdout + res.Stderr
	if !strings.Contains(all, fmt.Sprintf("%d message(s) are held unacknowledged by other consumers", held)) {
		t.Fatalf("the run does not name the %d messages another consumer holds:\n%s", held, all)
	}

	// archive --delete of the same DLQ refilled, the other consumer still
	// holding its 7: partial too, naming them.
	senv := testenv.Require(t)
	ref, _ := amqp.ParseVHostRef(env.URL, nil)
	conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := amqpseed.Bulk(context.Background(), conn, strings.TrimSuffix(names.DLQ, ".dlq"), n); err != nil {
		t.Fatal(err)
	}
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "rh"), "_", "-"))
	if _, err := senv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	res = clitest.Run(t, senv, "", "archive", env.QueueRef(names.DLQ), "--to", "s3://"+bucket+"/dlq", "--delete", "--yes", "-o", "json")
	all = res.Stdout + res.Stderr
	if res.Code != 4 || !strings.Contains(all, fmt.Sprintf("%d message(s) are held unacknowledged by other consumers", held)) {
		t.Fatalf("archive --delete with %d held by another consumer: exit %d\n%s", held, res.Code, all)
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("archive left %d ready", left)
	}
}
