package archive

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func TestBucketOwnerMustBeAnAccountIDOnAWS(t *testing.T) {
	if err := (BucketAccess{ExpectedOwner: "12345"}).Validate(false); errs.Code(err) != errs.ExitUsage {
		t.Fatalf("a 5-digit owner on AWS: %v; want a bad-input error", err)
	}
	for _, ok := range []BucketAccess{{ExpectedOwner: "123456789012"}, {}, {RequesterPays: true}} {
		if err := ok.Validate(false); err != nil {
			t.Fatalf("%+v: %v", ok, err)
		}
	}
	if err := (BucketAccess{ExpectedOwner: "dlqctl-local"}).Validate(true); err != nil {
		t.Fatalf("an S3-compatible server's owner id: %v", err)
	}
}
