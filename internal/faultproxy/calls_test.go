package faultproxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestCallLogAndDeny: the proxy records each call's action, resource and
// SDK app id, and a Deny fault answers AccessDenied as AWS does, which
// the SDK reports as an API error with that code.
func TestCallLogAndDeny(t *testing.T) {
	env := testenv.Require(t)
	p, err := New(env.SQSEndpoint, Fault{Action: "GetQueueAttributes", Kind: Deny})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := env.AWSConfig(t.Context())
	cfg.AppID = "caller-7" // what AWS_SDK_UA_APP_ID sets in LoadDefaultConfig
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(p.URL) })
	name := testenv.UniqueName(t, "calls")
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" || !strings.Contains(ae.ErrorMessage(), "sqs:getqueueattributes") {
		t.Fatalf("GetQueueAttributes through Deny: %v", err)
	}
	calls := p.Calls()
	if len(calls) != 2 || calls[0] != (Call{Action: "CreateQueue", Resource: name, AppID: "caller-7"}) ||
		calls[1] != (Call{Action: "GetQueueAttributes", Resource: aws.ToString(out.QueueUrl), AppID: "caller-7"}) {
		t.Fatalf("calls: %+v", calls)
	}
	p.ResetStats()
	if len(p.Calls()) != 0 {
		t.Fatal("ResetStats kept the call log")
	}
}
