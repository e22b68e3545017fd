package health

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	sqsbroker "github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

func TestQueuesWarnsWhenDLQRetentionIsShorterThanSource(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	p := testenv.UniqueName(t, "ret")
	_, dlqARN := clitest.CreateQueue(t, c, p+"-dlq", map[string]string{"MessageRetentionPeriod": "86400"})
	clitest.CreateQueue(t, c, p+"-src", map[string]string{
		"MessageRetentionPeriod": "345600",
		"RedrivePolicy":          fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":"5"}`, dlqARN),
	})
	res := clitest.Run(t, env, "", "queues", "--prefix", p)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "retention 1d is shorter than source "+p+"-src's 4d") {
		t.Errorf("no retention warning on stderr: %q", res.Stderr)
	}
	js := clitest.Run(t, env, "", "queues", "--prefix", p, "-o", "json")
	var dlqs []sqsbroker.DLQInfo
	if err := json.Unmarshal([]byte(js.Stdout), &dlqs); err != nil || len(dlqs) != 1 || len(dlqs[0].Warnings) != 1 || dlqs[0].Sources[0].MaxReceiveCount != 5 {
		t.Fatalf("json = %s (%v)", js.Stdout, err)
	}
}

func TestSampleWarnsWhenDLQHasItsOwnRedrivePolicy(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	p := testenv.UniqueName(t, "chain")
	_, lastARN := clitest.CreateQueue(t, c, p+"-last", nil)
	dlqURL, _ := clitest.CreateQueue(t, c, p+"-dlq", map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":"3"}`, lastARN),
	})
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	res := clitest.Run(t, env, "", "sample", p+"-dlq")
	if res.Code != 0 || !strings.Contains(res.Stderr, "has its own RedrivePolicy (maxReceiveCount 3)") {
		t.Fatalf("exit %d stderr %q", res.Code, res.Stderr)
	}
}
