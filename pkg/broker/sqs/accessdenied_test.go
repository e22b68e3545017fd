package sqs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// fakeDenyingSQS answers every SQS call (JSON protocol) with the error AWS
// gives when IAM refuses it.
func fakeDenyingSQS(t *testing.T, code, message string) *awssqs.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-query-error", code+";Sender")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"__type":"com.amazon.coral.service#` + code + `","message":"` + message + `"}`))
	}))
	t.Cleanup(srv.Close)
	return awssqs.New(awssqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAEXAMPLE", "secret", ""),
	})
}

// AccessDenied names the IAM action (as IAM spells it: a batch call is
// authorized as its single-message action) and the resource, and points to
// docs/iam.md; a KMS refusal names the KMS permissions.
func TestAccessDeniedNamesActionAndResource(t *testing.T) {
	ctx := context.Background()
	denied := "User: arn:aws:sts::123456789012:assumed-role/triage/ci is not authorized to perform: sqs:getqueueattributes on resource: arn:aws:sqs:us-east-1:123456789012:orders-dlq because no identity-based policy allows the sqs:getqueueattributes action"
	c := New(fakeDenyingSQS(t, "AccessDenied", denied), "us-east-1")
	_, err := c.Resolve(ctx, "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq")
	for _, want := range []string{"access denied: the credentials in use may not call sqs:GetQueueAttributes on arn:aws:sqs:us-east-1:123456789012:orders-dlq", "dlqctl help iam"} {
		if errs.Code(err) != errs.ExitUsage || err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Resolve: %v (exit %d), want %q", err, errs.Code(err), want)
		}
	}

	c = New(fakeDenyingSQS(t, "AccessDenied", "Access to the resource is denied."), "us-east-1")
	q := &Queue{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"}
	_, err = c.API.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL),
		Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String("h")}}})
	err = WrapAWSError(err)
	if err == nil || !strings.Contains(err.Error(), "may not call sqs:DeleteMessage on the queue (AWS: Access to the resource is denied.)") {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}

	c = New(fakeDenyingSQS(t, "KMS.AccessDeniedException", "The ciphertext refers to a customer master key that does not exist"), "us-east-1")
	_, err = c.Receive(ctx, q, 10, 0, 0)
	if err == nil || !strings.Contains(err.Error(), "KMS key these credentials may not use") || !strings.Contains(err.Error(), "kms:Decrypt") {
		t.Fatalf("Receive on a KMS queue: %v", err)
	}
}
