package sqs

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// An AWS receipt handle as SQS hands them out (base64, ~350 characters).
const awsHandle = "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a/+7G5x5ZMw3D0HDTH6KiYoNNEjjbiocuZwYeFA9dpQ7fq" +
	"cIusGBdNdLbYs63Jfe9Hk0qC4e1A9AfQK27pNs/pTJMJP/t4Lj4FHGkSjtt0Nb8W0u/lsWo+9q40EINJFqmB0mTvBuyCv5Ps" +
	"C3wrUt4ve4ljnRQuiUcd9R6clk6NWNmVXojpj/D7chGTaK1hGHpWJM8FNVAFa2a+1xqZXFtyFuDrwPhpy4CZiLW58Xxl6fb0" +
	"Ccnsb5rr1vZb2MMuJFeVAH6Oiv5UEZHXLB2h5Gp/7C/8wyoDNxM4Ef8uTb+MpzFQeeYb+Dg3qxMThVw=="

// local-aws-sqs handles: base64 of a UUID and a JSON blob.
const emulatorHandle = "NzVmNGQ4ZjMtYmJlZC00YjE2LThjNDAtMzQ3YjE2ZDRjN2Y1eyJkYXRlIjoxNzE5MzQ1Njc4OTAxLCJNZXNzYWdlSWQi" +
	"OiJhYmMxMjMiLCJRdWV1ZU5hbWUiOiJvcmRlcnMtZGxxIn0="

func TestScrubReceiptHandlesInRealisticTexts(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"AWS ReceiptHandleIsInvalid", `The input receipt handle "` + awsHandle + `" is not a valid receipt handle.`},
		{"AWS visibility change, stale handle", "Value " + awsHandle + " for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."},
		{"AWS expired handle", "Value " + awsHandle + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."},
		{"SDK operation error", `operation error SQS: DeleteMessage, https response error StatusCode: 400, RequestID: 5b1e8a2c-7d3f-5e44-9a1b-2c3d4e5f6a7b, ReceiptHandleIsInvalid: The input receipt handle "` + awsHandle + `" is not a valid receipt handle.`},
		{"JSON body", `{"__type":"com.amazonaws.sqs#ReceiptHandleIsInvalid","message":"The input receipt handle \"` + awsHandle + `\" is not a valid receipt handle."}`},
		{"local-aws-sqs", `ReceiptHandleIsInvalid: The input receipt handle "` + emulatorHandle + `" is not valid.`},
		{"local-aws-sqs FIFO", "InvalidParameterValue: Value " + emulatorHandle + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."},
		{"short quoted handle", `The input receipt handle "MbZj6wDWli+JvwwJaBV+3dcjk2YW2vA3" is not a valid receipt handle.`},
		{"bare long handle", "unexpected failure for " + awsHandle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := ScrubReceiptHandles(tc.in)
			for _, h := range []string{awsHandle, emulatorHandle, "MbZj6wDWli+JvwwJaBV+3dcjk2YW2vA3", awsHandle[:24], emulatorHandle[:24]} {
				if strings.Contains(out, h) {
					t.Fatalf("handle left in %q", out)
				}
			}
			if !strings.Contains(out, ScrubbedHandle) {
				t.Fatalf("no %s marker in %q", ScrubbedHandle, out)
			}
		})
	}
	// A known handle is scrubbed wherever it appears, however short.
	if out := ScrubReceiptHandles("entry rh-1234567890 failed", "rh-1234567890"); out != "entry <receipt-handle> failed" {
		t.Fatalf("known handle: %q", out)
	}
	// What is not a handle stays readable.
	for _, keep := range []string{
		"The specified queue does not exist.",
		`queue "https://sqs.eu-west-1.amazonaws.com/123456789012/payments-service-dead-letter-queue-for-the-orders-domain.fifo" not found`,
		"arn:aws:sqs:us-east-1:123456789012:orders-dlq",
		`message "5b1e8a2c-7d3f-5e44-9a1b-2c3d4e5f6a7b" failed: Throttling`,
		`Value 43300 for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds].`,
	} {
		if out := ScrubReceiptHandles(keep); out != keep {
			t.Fatalf("scrubbed a text without handles: %q -> %q", keep, out)
		}
	}
}

// TestWrapAWSErrorScrubsHandles: the SDK's error for a single delete echoes
// the handle; the wrapped error's text has none, errors.As still finds the
// typed error, and its message is scrubbed too.
func TestWrapAWSErrorScrubsHandles(t *testing.T) {
	raw := &smithy.OperationError{ServiceID: "SQS", OperationName: "DeleteMessage", Err: &types.ReceiptHandleIsInvalid{
		Message: aws.String(`The input receipt handle "` + awsHandle + `" is not a valid receipt handle.`)}}
	err := WrapAWSError(raw)
	if strings.Contains(err.Error(), awsHandle[:24]) || !strings.Contains(err.Error(), "ReceiptHandleIsInvalid") {
		t.Fatalf("wrapped: %v", err)
	}
	var rhi *types.ReceiptHandleIsInvalid
	if !errors.As(err, &rhi) || strings.Contains(rhi.ErrorMessage(), awsHandle[:24]) {
		t.Fatalf("errors.As: %v", rhi)
	}
	generic := WrapAWSError(&smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Value " + awsHandle + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."})
	if strings.Contains(generic.Error(), awsHandle[:24]) {
		t.Fatalf("generic: %v", generic)
	}
}

func TestEntryErrorsNeverCarryHandles(t *testing.T) {
	for _, e := range []types.BatchResultErrorEntry{
		{Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true, Message: aws.String(`The input receipt handle "` + awsHandle + `" is not a valid receipt handle.`)},
		{Code: aws.String("InvalidParameterValue"), SenderFault: true, Message: aws.String("Value " + awsHandle + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.")},
	} {
		err := entryErr(e, awsHandle)
		if !errors.Is(err, ErrLeaseLost) || strings.Contains(err.Error(), awsHandle[:24]) {
			t.Fatalf("entryErr = %v", err)
		}
	}
	// An entry error SQS might phrase any other way: the known handle goes.
	err := entryErr(types.BatchResultErrorEntry{Code: aws.String("InternalError"), Message: aws.String("failed " + awsHandle[:60])}, awsHandle[:60])
	if strings.Contains(err.Error(), awsHandle[:60]) {
		t.Fatalf("entryErr = %v", err)
	}
}
