package awsconf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Settings are the AWS parts of dlqctl's global flags.
type Settings struct {
	Region  string
	Profile string
	// EndpointURL (--endpoint-url) is the endpoint of a local stack that
	// serves both SQS and S3; SQSEndpointURL and S3EndpointURL
	// (--sqs-endpoint-url, --s3-endpoint-url) override one service each
	// and win over it.
	EndpointURL    string
	SQSEndpointURL string
	S3EndpointURL  string
	// PathStyle (--s3-path-style) forces path-style S3 addressing.
	PathStyle bool
}

// SQSEndpointFlag is the SQS endpoint given by flags ("" leaves it to the
// SDK: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, else AWS's regional one).
func (s Settings) SQSEndpointFlag() string { return firstSet(s.SQSEndpointURL, s.EndpointURL) }

// S3EndpointFlag is the S3 endpoint given by flags ("" leaves it to the
// SDK: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS's regional one).
func (s Settings) S3EndpointFlag() string { return firstSet(s.S3EndpointURL, s.EndpointURL) }

// SQSEndpointOverride is the SQS endpoint in effect when it is not AWS's
// default: the flags, else AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL.
func (s Settings) SQSEndpointOverride() string { return Override(s.SQSEndpointFlag(), "SQS") }

// Override is the endpoint of an AWS service (its SDK id in upper case:
// "SQS", "STS") when it is not AWS's default: flag, else
// AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL ("" for none).
func Override(flag, service string) string {
	return firstSet(flag, os.Getenv("AWS_ENDPOINT_URL_"+service), os.Getenv("AWS_ENDPOINT_URL"))
}

// S3EndpointOverride is the S3 endpoint in effect when it is not AWS's
// default: the flags, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL.
func (s Settings) S3EndpointOverride() string { return Override(s.S3EndpointFlag(), "S3") }

// CustomS3Endpoint: S3 is an S3-compatible server (versitygw, MinIO, a
// local stack) named by a flag or the environment, not one of AWS's own
// endpoints.
func (s Settings) CustomS3Endpoint() bool {
	e := s.S3EndpointOverride()
	return e != "" && !IsAWSEndpoint(e)
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Clients builds dlqctl's AWS clients (each with its own retryer) from one
// shared configuration, loaded once, and the Settings of the flags, read
// when a client is built. S3Options adds to every S3 client's options (the
// bucket access headers) and Verbosef says which endpoints are in use;
// either may be nil.
type Clients struct {
	Settings  *Settings
	S3Options func(*s3.Options)
	Verbosef  func(format string, a ...any)

	once sync.Once
	cfg  aws.Config
	err  error
}

// Config loads the shared AWS configuration once (Load).
func (c *Clients) Config(ctx context.Context) (aws.Config, error) {
	c.once.Do(func() { c.cfg, c.err = Load(ctx, c.Settings.Region, c.Settings.Profile, c.Verbosef) })
	return c.cfg, c.err
}

func (c *Clients) verbosef(format string, a ...any) {
	if c.Verbosef != nil {
		c.Verbosef(format, a...)
	}
}

// S3 returns an S3 client. Path-style addressing is used with
// --s3-path-style and whenever S3 is an S3-compatible server (a custom
// endpoint that is not AWS's), which is what such servers expect; never by
// itself for AWS's own S3 endpoints (FIPS, VPC endpoints), where
// virtual-hosted addressing is the documented form.
func (c *Clients) S3(ctx context.Context) (*s3.Client, error) {
	cfg, err := c.Config(ctx)
	if err != nil {
		return nil, err
	}
	s := c.Settings
	pathStyle := s.PathStyle || s.CustomS3Endpoint()
	cl := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = NewRetryer()
		if e := s.S3EndpointFlag(); e != "" {
			o.BaseEndpoint = aws.String(e)
		}
		o.UsePathStyle = pathStyle
		if c.S3Options != nil {
			c.S3Options(o)
		}
	})
	c.verbosef("s3 endpoint %s%s", EndpointOr(s.S3EndpointFlag(), "AWS_ENDPOINT_URL_S3"), map[bool]string{true: " (path-style)", false: ""}[pathStyle])
	return cl, nil
}

// S3For returns an S3 client for bucket's region: aws-sdk-go-v2 does not
// follow S3's cross-region redirects, so a bucket in another region than
// the queue's is reached with a client for its own region (asked with
// HeadBucket). With a custom endpoint the one client is used as it is.
func (c *Clients) S3For(ctx context.Context, bucket string) (*s3.Client, error) {
	cl, err := c.S3(ctx)
	if err != nil {
		return nil, err
	}
	if c.Settings.S3EndpointOverride() != "" {
		return cl, nil
	}
	region, err := BucketRegion(ctx, cl, bucket)
	if err != nil {
		return nil, errs.BadInputf("%v", err)
	}
	if region == "" || region == cl.Options().Region {
		return cl, nil
	}
	c.verbosef("S3 bucket %s is in %s: using a client for that region", bucket, region)
	return s3.New(cl.Options(), func(o *s3.Options) { o.Region = region }), nil
}

// BucketRegion asks S3 which region holds bucket (HeadBucket answers with
// x-amz-bucket-region, also on the 301 a bucket in another region gets).
// It returns "" when S3 does not say (S3-compatible servers often do not;
// archive.CheckBucket then reports the problem). aws-sdk-go-v2 does not
// follow S3's cross-region redirects, so a client for another region than
// the bucket's fails every call: callers build a client for the region
// returned.
func BucketRegion(ctx context.Context, api interface {
	HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
}, bucket string) (string, error) {
	out, err := api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return aws.ToString(out.BucketRegion), nil
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
			return r, nil
		}
		if re.HTTPStatusCode() == http.StatusMovedPermanently {
			return "", fmt.Errorf("S3 bucket %q is in another region and S3 did not say which; pass --region with the bucket's region", bucket)
		}
	}
	return "", nil
}

// Logs returns the CloudWatch Logs client for --logs (read-only use:
// FilterLogEvents). Its endpoint is the SDK's: AWS_ENDPOINT_URL_CLOUDWATCH_LOGS
// (or AWS_ENDPOINT_URL), not --endpoint-url, which names the SQS/S3
// endpoint. Throttling is retried with backoff (up to 10 attempts, 20 s
// apart at most) on top of dlqctl's own rate limit.
func (c *Clients) Logs(ctx context.Context) (*cloudwatchlogs.Client, error) {
	cfg, err := c.Config(ctx)
	if err != nil {
		return nil, err
	}
	c.verbosef("cloudwatch logs endpoint %s", EndpointOr("", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"))
	return cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) {
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 10
			o.MaxBackoff = 20 * time.Second
			o.RateLimiter = ratelimit.None
		})
	}), nil
}

// Origins are the Lambda, SNS and EventBridge clients `redrive --to
// source` needs for a DLQ fed by them, and Kinesis to read back the
// batches on-failure records point to.
type Origins struct {
	Lambda      *lambda.Client
	SNS         *sns.Client
	EventBridge *eventbridge.Client
	Kinesis     *kinesis.Client
}

// Origins builds them. Their endpoints are the SDK's:
// AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL_SNS, AWS_ENDPOINT_URL_EVENTBRIDGE,
// AWS_ENDPOINT_URL_KINESIS (or AWS_ENDPOINT_URL); --endpoint-url names the
// SQS/S3 endpoint only.
func (c *Clients) Origins(ctx context.Context) (Origins, error) {
	cfg, err := c.Config(ctx)
	if err != nil {
		return Origins{}, err
	}
	c.verbosef("lambda endpoint %s, sns endpoint %s, eventbridge endpoint %s, kinesis endpoint %s", EndpointOr("", "AWS_ENDPOINT_URL_LAMBDA"), EndpointOr("", "AWS_ENDPOINT_URL_SNS"), EndpointOr("", "AWS_ENDPOINT_URL_EVENTBRIDGE"), EndpointOr("", "AWS_ENDPOINT_URL_KINESIS"))
	return Origins{
		Lambda:      lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.Retryer = NewRetryer() }),
		SNS:         sns.NewFromConfig(cfg, func(o *sns.Options) { o.Retryer = NewRetryer() }),
		EventBridge: eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) { o.Retryer = NewRetryer() }),
		Kinesis:     kinesis.NewFromConfig(cfg, func(o *kinesis.Options) { o.Retryer = NewRetryer() }),
	}, nil
}
