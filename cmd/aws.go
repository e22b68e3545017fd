package cmd

// The AWS side of the factory: the clients are built by awsconf.Clients
// from the global flags (GlobalOptions.Settings). It names no broker
// package (the SQS client, an SQS endpoint, is built in factory.go).

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/awsconf"
)

// aws builds the AWS clients from the flags, once.
func (f *Factory) aws() *awsconf.Clients {
	f.awsOnce.Do(func() {
		f.awsC = &awsconf.Clients{Settings: &f.Opts.Settings, Verbosef: f.Verbosef,
			S3Options: func(o *s3.Options) { f.bucketAccess().Apply(o) }}
	})
	return f.awsC
}

// AWSConfig is the shared AWS configuration, loaded once (awsconf.Load).
func (f *Factory) AWSConfig(ctx context.Context) (aws.Config, error) { return f.aws().Config(ctx) }

// S3 returns an S3 client (awsconf.Clients.S3).
func (f *Factory) S3(ctx context.Context) (*s3.Client, error) { return f.aws().S3(ctx) }

// S3For returns an S3 client for bucket's region (awsconf.Clients.S3For).
func (f *Factory) S3For(ctx context.Context, bucket string) (*s3.Client, error) {
	return f.aws().S3For(ctx, bucket)
}

func (f *Factory) bucketAccess() archive.BucketAccess {
	return archive.BucketAccess{ExpectedOwner: f.Opts.BucketOwner, RequesterPays: f.Opts.RequesterPays}
}
