package clitest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
)

var (
	incidentOnce sync.Once
	incident     *seed.Truth
	incidentErr  error
)

// SharedIncident seeds one incident per test binary (each package of
// cmd/cmdtest seeds its own, once) for read-only tests (tests that change
// queues must seed their own).
func SharedIncident(t testing.TB) (testenv.Env, *seed.Truth) {
	t.Helper()
	env := testenv.Require(t)
	incidentOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		incident, incidentErr = seed.Incident(ctx, env.SQS(t), seed.Options{Prefix: testenv.UniqueName(t, "ro")})
	})
	if incidentErr != nil {
		t.Fatalf("seeding the shared incident: %v", incidentErr)
	}
	return env, incident
}

// QueueDepth returns visible and in-flight counts of a queue.
func QueueDepth(t testing.TB, c *sqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", url, err)
	}
	return atoi(out.Attributes["ApproximateNumberOfMessages"]), atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// SettledDepth is queueDepth after a command that should have released
// everything: releases become visible a moment later (the emulator applies a
// visibility of 0 on its next timer tick; real SQS counts are approximate
// too), so it re-reads for up to 2 s while messages still show in flight —
// far less than any visibility the tests use, so a message really left
// invisible still fails the assertion.
func SettledDepth(t testing.TB, c *sqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		visible, inFlight = QueueDepth(t, c, url)
		if inFlight == 0 || time.Now().After(deadline) {
			return visible, inFlight
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CreateQueue creates a queue (deleted when the test ends) and returns its
// URL and ARN.
func CreateQueue(t *testing.T, c *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return url, a.Attributes["QueueArn"]
}

// FillQueue creates a queue and fills it with n messages: every fourth is an
// envelope with a transient failure, the rest plain envelopes.
func FillQueue(t *testing.T, env testenv.Env, prefix string, n int) (name, url string) {
	t.Helper()
	c := env.SQS(t)
	ctx := context.Background()
	name = testenv.UniqueName(t, prefix)
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	err = seed.FillDLQ(ctx, c, url, n, func(i int) string {
		if i%4 == 0 {
			return fmt.Sprintf(`{"eventId":"e-%d","eventType":"OrderCreated","eventVersion":2,"failure_reason":"timeout after %dms for order o-%d"}`, i, 800+i%900, i)
		}
		return fmt.Sprintf(`{"eventId":"e-%d","eventType":"OrderPaid","eventVersion":1,"payload":{"orderId":"o-%d"}}`, i, i)
	})
	if err != nil {
		t.Fatal(err)
	}
	return name, url
}

// Proxied returns env with SQS behind a fault proxy.
func Proxied(t *testing.T, env testenv.Env, faults ...faultproxy.Fault) (testenv.Env, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.New(env.SQSEndpoint, faults...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	penv := env
	penv.SQSEndpoint = p.URL
	return penv, p
}

// FIFODLQ creates a FIFO queue on moto holding groups×per messages, sent
// in group order (body "g<G>-<N>").
func FIFODLQ(t *testing.T, c *sqs.Client, name string, groups, per int) (url, arn string) {
	t.Helper()
	url, arn = CreateQueue(t, c, name+".fifo", map[string]string{"FifoQueue": "true"})
	for g := 1; g <= groups; g++ {
		for n := 0; n < per; n += 10 {
			var entries []types.SendMessageBatchRequestEntry
			for i := n; i < min(n+10, per); i++ {
				entries = append(entries, types.SendMessageBatchRequestEntry{
					Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf(`{"group":"g%d","n":%d}`, g, i)),
					MessageGroupId: aws.String(fmt.Sprintf("g%d", g)), MessageDeduplicationId: aws.String(fmt.Sprintf("g%d-%d", g, i)),
				})
			}
			out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("seeding %s: %v %v", name, err, out)
			}
		}
	}
	return url, arn
}

// ReceiveAll drains url (deleting), returning bodies in receive order.
func ReceiveAll(t *testing.T, c *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for empty := 0; empty < 2; {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bodies
}

// groupMessage decodes a test body {"group":…,"n":…}: a FIFO group and
// the message's place in it.
func groupMessage(t *testing.T, body string) (v struct {
	Group string `json:"group"`
	N     int    `json:"n"`
}) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return v
}

// CheckOrderPerGroup checks that each group's bodies appear in send order.
func CheckOrderPerGroup(t *testing.T, bodies []string) {
	t.Helper()
	last := map[string]int{}
	for _, b := range bodies {
		v := groupMessage(t, b)
		if prev, ok := last[v.Group]; ok && v.N != prev+1 {
			t.Errorf("group %s: message %d after %d (order lost)", v.Group, v.N, prev)
		}
		last[v.Group] = v.N
	}
}

// ArchiveManifest reads the one archive manifest in bucket.
func ArchiveManifest(t *testing.T, env testenv.Env, bucket string) *archive.Manifest {
	t.Helper()
	api := env.S3(t)
	out, err := api.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), archive.ManifestName) {
			m, err := archive.ReadManifest(t.Context(), archive.Ref{Src: archive.S3Source{API: api, Bucket: bucket}, Key: aws.ToString(o.Key)})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no manifest in s3://%s", bucket)
	return nil
}

// DrainBodies consumes a queue (receive and delete, 8 receivers) and counts
// each body: the destination's content, once per copy.
func DrainBodies(t *testing.T, c *sqs.Client, url string) map[string]int {
	t.Helper()
	got := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for range 8 {
		wg.Go(func() {
			empty := 0
			for empty < 3 {
				out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1})
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				if len(out.Messages) == 0 {
					empty++
					continue
				}
				empty = 0
				var del []types.DeleteMessageBatchRequestEntry
				mu.Lock()
				for k, m := range out.Messages {
					got[aws.ToString(m.Body)]++
					del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), ReceiptHandle: m.ReceiptHandle})
				}
				mu.Unlock()
				if _, err := c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return got
}

// InOrderOrSaidSo: a run that delivered every group in order exits 0; one
// that did not must have said which groups, and exited 4. Under load a
// receive's answer can be lost (moto answers 500 or drops the connection);
// when its messages come back together moto hands out the last of them and
// their group's later messages first (docs/emulators.md, row 27) — AWS
// keeps the order. dlqctl cannot undo that; it must not call it completed.
func InOrderOrSaidSo(t *testing.T, what string, r Result, bodies []string) {
	t.Helper()
	last := map[string]int{}
	out := map[string]bool{}
	for _, b := range bodies {
		v := groupMessage(t, b)
		if prev, ok := last[v.Group]; ok && v.N < prev {
			out[v.Group] = true
		}
		last[v.Group] = max(last[v.Group], v.N)
	}
	if len(out) == 0 {
		if r.Code != 0 {
			t.Fatalf("%s: exit %d with every group in order\n%s\n%s", what, r.Code, r.Stdout, r.Stderr)
		}
		CheckOrderPerGroup(t, bodies) // nothing skipped or repeated either
		return
	}
	groups := make([]string, 0, len(out))
	for g := range out {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	said := "of FIFO group(s) " + strings.Join(groups, ", ") + " were handed out by the queue after later messages of their group"
	if r.Code != 4 || !strings.Contains(r.Stdout+r.Stderr, said) {
		t.Fatalf("%s: groups %v arrived out of order, but the run exited %d without saying %q\n%s\n%s", what, groups, r.Code, said, r.Stdout, r.Stderr)
	}
	t.Logf("%s: the queue handed out group(s) %v out of order (a receive's answer was lost under load, and moto reorders what comes back); the run said so, exit 4", what, groups)
}

// ReceiveN receives (and deletes) n messages from url in receive order,
// then checks that nothing more is visible.
func ReceiveN(t *testing.T, c *sqs.Client, url string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var bodies []string
	// Generous: under a loaded CI machine moto answers slowly, and each
	// group unlocks only after its batch is deleted. The loop ends as soon
	// as all n are in.
	deadline := time.Now().Add(2 * time.Minute)
	for len(bodies) < n && time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(del) > 0 {
			if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v, f := QueueDepth(t, c, url); v+f != 0 {
		t.Fatalf("%s holds %d visible, %d in flight beyond the %d received", url, v, f, len(bodies))
	}
	return bodies
}
