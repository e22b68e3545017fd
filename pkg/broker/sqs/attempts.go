package sqs

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/middleware"
)

// AttemptsThatMayHaveActed counts the attempts of a call that the SDK's
// retryer made and then retried although SQS may have carried them out:
// their answer was a 5xx, a reset or a timeout (see MayHaveActed). A
// ReceiveMessage retried so may have handed out messages nobody got (they
// stay in flight until their visibility ends); a SendMessageBatch may have
// enqueued its messages twice (a standard queue does not deduplicate).
// md is the call output's ResultMetadata.
func AttemptsThatMayHaveActed(md middleware.Metadata) int {
	ar, ok := retry.GetAttemptResults(md)
	if !ok {
		return 0
	}
	n := 0
	for _, a := range ar.Results {
		if a.Err != nil && MayHaveActed(a.Err) {
			n++
		}
	}
	return n
}

// MayHaveActed reports whether a failed attempt may have been carried out
// by SQS: anything but an error answer SQS gives before acting (a 4xx:
// throttling, a bad request). A 5xx may come after SQS acted, and a reset
// or a timeout says nothing about what happened at the server.
func MayHaveActed(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
		return false
	}
	return true
}
