// Package awsconf loads the AWS configuration every command shares
// (--region, --profile, the SDK's own environment) and says what went
// wrong when it cannot: a missing profile or region, and which of the
// credential sources failed and how to fix it. Credentials themselves are
// never printed. It knows no broker.
package awsconf

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Load loads the shared AWS configuration for region and profile (either
// "" for the SDK's default) and gets the credentials now (the SDK caches
// them for every client): a failure is told as what it is — none
// configured, an expired SSO session, a refused AssumeRole, an unreachable
// IMDS — instead of surfacing inside the first API call. Its errors are
// bad input (exit 2), or ctx's error when ctx ended.
//
// The SDK's own log lines (its default logger writes them to stderr:
// "WARN falling back to IMDSv1 …" before the sentence that says no
// credentials were found, S3's checksum notices) go to logf, which the
// commands show with -v; nil drops them.
func Load(ctx context.Context, region, profile string, logf func(format string, a ...any)) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = 256
			t.MaxIdleConnsPerHost = 128
		})),
		config.WithLogger(logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			if logf != nil {
				logf("AWS SDK %s: %s", strings.ToLower(string(c)), fmt.Sprintf(format, v...))
			}
		})),
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		if strings.Contains(err.Error(), "failed to get shared config profile") {
			return cfg, errs.BadInputf("AWS profile %q not found in ~/.aws/config or ~/.aws/credentials; check --profile / AWS_PROFILE", profile)
		}
		return cfg, errs.BadInputf("cannot load AWS configuration: %v; check --profile and the AWS_* variables", err)
	}
	if cfg.Region == "" {
		return cfg, errs.BadInputf("no AWS region configured; pass --region or set AWS_REGION")
	}
	if cfg.Credentials != nil {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			if ctx.Err() != nil {
				return cfg, ctx.Err()
			}
			return cfg, CredentialError(err, ProfileInUse(profile))
		}
	}
	return cfg, nil
}

// NewRetryer is the retryer each SQS, S3, Lambda, SNS, EventBridge and
// Kinesis client gets its own of: 6 attempts, no client-side rate limit
// (dlqctl paces itself).
func NewRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 6
		o.RateLimiter = ratelimit.None
	})
}

// IsAWSEndpoint reports whether an endpoint URL names one of AWS's own
// hosts (commercial, China, dual-stack, GovCloud/FIPS, VPC endpoints, the
// ISO partitions).
func IsAWSEndpoint(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".c2s.ic.gov", ".sc2s.sgov.gov", ".cloud.adc-e.uk", ".csp.hci.ic.gov"} {
		if strings.HasSuffix(h, d) {
			return true
		}
	}
	return false
}

// EndpointOr names the endpoint in use for -v: flag, else the environment
// variable env, else AWS_ENDPOINT_URL, else "(AWS default)".
func EndpointOr(flag, env string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv(env); v != "" {
		return v
	}
	if v := os.Getenv("AWS_ENDPOINT_URL"); v != "" {
		return v
	}
	return "(AWS default)"
}
