package queue

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// flakyDeleter fails receipt handle "rh-1" once with a retryable (server)
// error, "rh-2" always with a sender fault, and "rh-3" as an expired handle.
type flakyDeleter struct {
	API
	calls   int
	deleted map[string]int
}

func (f *flakyDeleter) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.calls++
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		switch rh := aws.ToString(e.ReceiptHandle); {
		case rh == "rh-1" && f.deleted["rh-1-failed"] == 0:
			f.deleted["rh-1-failed"]++
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), SenderFault: false})
		case rh == "rh-2":
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("AccessDenied"), SenderFault: true})
		case rh == "rh-3":
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
		default:
			f.deleted[rh]++
		}
	}
	return out, nil
}

func TestDeleteRetriesOnlyRetryableEntries(t *testing.T) {
	api := &flakyDeleter{deleted: map[string]int{}}
	c := New(api, "us-east-1")
	var msgs []*Message
	for _, rh := range []string{"rh-0", "rh-1", "rh-2", "rh-3"} {
		msgs = append(msgs, &Message{ReceiptHandle: rh})
	}
	failed, err := c.Delete(context.Background(), &Queue{URL: "u"}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if api.deleted["rh-0"] != 1 || api.deleted["rh-1"] != 1 {
		t.Fatalf("deleted %v: the retryable entry must succeed on retry, once", api.deleted)
	}
	if len(failed) != 2 || failed[msgs[2]] == nil || !errors.Is(failed[msgs[3]], ErrLeaseLost) {
		t.Fatalf("failed = %v; want the sender fault and the lost lease reported", failed)
	}
	if api.calls != 2 {
		t.Fatalf("%d calls; want the batch plus one retry of the retryable entry", api.calls)
	}
}
