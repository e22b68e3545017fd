package cmd

// The AWS side of the factory: the shared configuration, the S3 and
// CloudWatch Logs clients and the endpoint flags. It names no broker
// package (the SQS client, an SQS endpoint, is built in factory.go).

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/awsconf"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// AWSConfig loads the shared AWS configuration once (awsconf.Load).
func (f *Factory) AWSConfig(ctx context.Context) (aws.Config, error) {
	f.once.Do(func() { f.cfg, f.cfgErr = awsconf.Load(ctx, f.Opts.Region, f.Opts.Profile) })
	return f.cfg, f.cfgErr
}

// newRetryer is awsconf.NewRetryer (factory.go's SQS client takes one).
func newRetryer() aws.Retryer { return awsconf.NewRetryer() }

// S3 returns an S3 client (with its own retryer). Path-style addressing is
// used with --s3-path-style and whenever S3 is an S3-compatible server (a
// custom endpoint that is not AWS's), which is what such servers expect;
// never by itself for AWS's own S3 endpoints (FIPS, VPC endpoints), where
// virtual-hosted addressing is the documented form.
func (f *Factory) S3(ctx context.Context) (*s3.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	pathStyle := f.Opts.PathStyle || f.customS3Endpoint()
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = awsconf.NewRetryer()
		if e := f.s3EndpointFlag(); e != "" {
			o.BaseEndpoint = aws.String(e)
		}
		o.UsePathStyle = pathStyle
		f.bucketAccess().Apply(o)
	})
	f.Verbosef("s3 endpoint %s%s", endpointOr(f.s3EndpointFlag(), "AWS_ENDPOINT_URL_S3"), map[bool]string{true: " (path-style)", false: ""}[pathStyle])
	return c, nil
}

// sqsEndpointFlag is the SQS endpoint given by flags ("" leaves it to the
// SDK: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, else AWS's regional one).
func (f *Factory) sqsEndpointFlag() string {
	if f.Opts.SQSEndpointURL != "" {
		return f.Opts.SQSEndpointURL
	}
	return f.Opts.EndpointURL
}

// s3EndpointFlag is the S3 endpoint given by flags ("" leaves it to the
// SDK: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS's regional one).
func (f *Factory) s3EndpointFlag() string {
	if f.Opts.S3EndpointURL != "" {
		return f.Opts.S3EndpointURL
	}
	return f.Opts.EndpointURL
}

// s3EndpointOverride is the S3 endpoint in effect when it is not AWS's
// default: the flags, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL.
func (f *Factory) s3EndpointOverride() string {
	if e := f.s3EndpointFlag(); e != "" {
		return e
	}
	if e := os.Getenv("AWS_ENDPOINT_URL_S3"); e != "" {
		return e
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// customS3Endpoint: S3 is an S3-compatible server (versitygw, MinIO, a
// local stack) named by a flag or the environment, not one of AWS's own
// endpoints.
func (f *Factory) customS3Endpoint() bool {
	e := f.s3EndpointOverride()
	return e != "" && !isAWSEndpoint(e)
}

// isAWSEndpoint is awsconf.IsAWSEndpoint.
func isAWSEndpoint(raw string) bool { return awsconf.IsAWSEndpoint(raw) }

func (f *Factory) bucketAccess() archive.BucketAccess {
	return archive.BucketAccess{ExpectedOwner: f.Opts.BucketOwner, RequesterPays: f.Opts.RequesterPays}
}

// S3For returns an S3 client for bucket's region: aws-sdk-go-v2 does not
// follow S3's cross-region redirects, so a bucket in another region than
// the queue's is reached with a client for its own region (asked with
// HeadBucket). With a custom endpoint the one client is used as it is.
func (f *Factory) S3For(ctx context.Context, bucket string) (*s3.Client, error) {
	c, err := f.S3(ctx)
	if err != nil {
		return nil, err
	}
	if f.s3EndpointOverride() != "" {
		return c, nil
	}
	region, err := archive.BucketRegion(ctx, c, bucket)
	if err != nil {
		return nil, errs.BadInputf("%v", err)
	}
	if region == "" || region == c.Options().Region {
		return c, nil
	}
	f.Verbosef("S3 bucket %s is in %s: using a client for that region", bucket, region)
	return s3.New(c.Options(), func(o *s3.Options) { o.Region = region }), nil
}

// Logs returns the CloudWatch Logs client for --logs (read-only use:
// FilterLogEvents). Its endpoint is the SDK's: AWS_ENDPOINT_URL_CLOUDWATCH_LOGS
// (or AWS_ENDPOINT_URL), not --endpoint-url, which names the SQS/S3
// endpoint. Throttling is retried with backoff (up to 10 attempts, 20 s
// apart at most) on top of dlqctl's own rate limit.
func (f *Factory) Logs(ctx context.Context) (*cloudwatchlogs.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	f.Verbosef("cloudwatch logs endpoint %s", endpointOr("", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"))
	return cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) {
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 10
			o.MaxBackoff = 20 * time.Second
			o.RateLimiter = ratelimit.None
		})
	}), nil
}

// endpointOr is awsconf.EndpointOr.
func endpointOr(flag, env string) string { return awsconf.EndpointOr(flag, env) }

// OriginClients are the Lambda, SNS and EventBridge clients `redrive --to
// source` needs for a DLQ fed by them, and Kinesis to read back the batches
// on-failure records point to (each with its own retryer). Their endpoints
// are the SDK's: AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL_SNS,
// AWS_ENDPOINT_URL_EVENTBRIDGE, AWS_ENDPOINT_URL_KINESIS (or
// AWS_ENDPOINT_URL); --endpoint-url names
// the SQS/S3 endpoint only.
func (f *Factory) OriginClients(ctx context.Context) (*lambda.Client, *sns.Client, *eventbridge.Client, *kinesis.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	f.Verbosef("lambda endpoint %s, sns endpoint %s, eventbridge endpoint %s, kinesis endpoint %s", endpointOr("", "AWS_ENDPOINT_URL_LAMBDA"), endpointOr("", "AWS_ENDPOINT_URL_SNS"), endpointOr("", "AWS_ENDPOINT_URL_EVENTBRIDGE"), endpointOr("", "AWS_ENDPOINT_URL_KINESIS"))
	return lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.Retryer = awsconf.NewRetryer() }),
		sns.NewFromConfig(cfg, func(o *sns.Options) { o.Retryer = awsconf.NewRetryer() }),
		eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) { o.Retryer = awsconf.NewRetryer() }),
		kinesis.NewFromConfig(cfg, func(o *kinesis.Options) { o.Retryer = awsconf.NewRetryer() }), nil
}
