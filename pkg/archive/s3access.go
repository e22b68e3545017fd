package archive

import (
	"context"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// BucketAccess is how every S3 call of a run addresses the bucket.
type BucketAccess struct {
	// ExpectedOwner (--bucket-owner) is the 12-digit account id that must
	// own the bucket: S3 answers 403 instead of reading or writing a
	// bucket someone else owns (a mistyped or squatted bucket name must not
	// receive archived messages). Sent as x-amz-expected-bucket-owner on
	// every request.
	ExpectedOwner string
	// RequesterPays (--requester-pays) acknowledges that the caller pays
	// for requests to a requester-pays bucket (x-amz-request-payer).
	RequesterPays bool
}

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// Validate checks the flags' values. On AWS a bucket owner is a 12-digit
// account id; S3-compatible servers (customEndpoint) name owners their own
// way (versitygw: the owner's access key).
func (b BucketAccess) Validate(customEndpoint bool) error {
	if b.ExpectedOwner != "" && !customEndpoint && !accountID.MatchString(b.ExpectedOwner) {
		return errs.BadInputf("--bucket-owner %q is not an AWS account id; pass the 12-digit id of the account that owns the bucket", b.ExpectedOwner)
	}
	return nil
}

// Apply adds the headers to every request of an S3 client: pass it to
// s3.NewFromConfig. The headers are set before signing, so they are signed.
func (b BucketAccess) Apply(o *s3.Options) {
	if b.ExpectedOwner == "" && !b.RequesterPays {
		return
	}
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Build.Add(middleware.BuildMiddlewareFunc("dlqctlBucketAccess",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					if b.ExpectedOwner != "" {
						req.Header.Set("X-Amz-Expected-Bucket-Owner", b.ExpectedOwner)
					}
					if b.RequesterPays {
						req.Header.Set("X-Amz-Request-Payer", "requester")
					}
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	})
}
