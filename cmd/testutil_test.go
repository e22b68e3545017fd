package cmd

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// cliResult is what a user sees from one dlqctl invocation.
type cliResult struct {
	Stdout, Stderr string
	Code           int
}

// runCLI runs dlqctl in-process against the local stack (non-TTY streams)
// and checks its -o json/ndjson output against docs/schema.
// It sets the AWS_* variables of env (unless env is the zero Env) for the duration of the test, so tests
// using it must not call t.Parallel.
func runCLI(t testing.TB, env testenv.Env, stdin string, args ...string) cliResult {
	t.Helper()
	if env.SQSEndpoint != "" {
		setStackEnv(t, env)
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := Run(ctx, output.Test(strings.NewReader(stdin), &out, &errOut, false), args)
	res := cliResult{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	// Every -o json / -o ndjson output the suite produces must follow
	// its schema in docs/schema (see schema_test.go).
	checkOutputContract(t, args, res)
	return res
}

func setStackEnv(t testing.TB, env testenv.Env) {
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v)
		}
	}
}

var (
	incidentOnce sync.Once
	incident     *seed.Truth
	incidentErr  error
)

// sharedIncident seeds one incident per test process for read-only tests
// (tests that change queues must seed their own).
func sharedIncident(t testing.TB) (testenv.Env, *seed.Truth) {
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

// queueDepth returns visible and in-flight counts of a queue.
func queueDepth(t testing.TB, c *awssqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{
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

// settledDepth is queueDepth after a command that should have released
// everything: releases become visible a moment later (the emulator applies a
// visibility of 0 on its next timer tick; real SQS counts are approximate
// too), so it re-reads for up to 2 s while messages still show in flight —
// far less than any visibility the tests use, so a message really left
// invisible still fails the assertion.
func settledDepth(t testing.TB, c *awssqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		visible, inFlight = queueDepth(t, c, url)
		if inFlight == 0 || time.Now().After(deadline) {
			return visible, inFlight
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createQueue creates a queue (deleted when the test ends) and returns its
// URL and ARN.
func createQueue(t *testing.T, c *awssqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	out, err := c.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	a, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return url, a.Attributes["QueueArn"]
}
