package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// AWSEnv is what the AWS checks are given by the command: the loaded
// configuration (or why it did not load), where the region came from,
// the endpoints in effect and how to open the S3 and CloudWatch Logs
// clients.
type AWSEnv struct {
	Config    aws.Config
	ConfigErr error
	// Region and RegionSource: RegionInUse's answer (the loaded
	// configuration's region wins when it loaded).
	Region, RegionSource string
	// Profile is the AWS profile in use ("" none).
	Profile string
	// SQSEndpoint, S3Endpoint and STSEndpoint are the endpoints in effect
	// ("" AWS's own); SQSEndpointFlag the one the SQS client is given.
	SQSEndpoint, S3Endpoint, STSEndpoint, SQSEndpointFlag string
	// Overrides are the endpoint settings given (EndpointOverrides).
	Overrides []Endpoint
	// CredentialError says what a failed credentials retrieval means.
	CredentialError func(error) error
	// Parse parses a queue reference (Prober.Parse).
	Parse func(ref string) (QueueRef, error)
	// S3 and Logs open the clients of --archive's bucket and of --logs
	// (false: not available, those checks are left out).
	S3   func(ctx context.Context, bucket string) (S3API, bool)
	Logs func(ctx context.Context) (LogsAPI, bool)
}

// AWSTargets are what doctor was asked to check on AWS.
type AWSTargets struct {
	Queues []string // SQS queue references
	// SQS: check SQS permissions (SQS queues given, or no queue at all).
	SQS       bool
	Roles     []string
	To        string // destination queue ("" the DLQs' sources)
	Archive   string // s3://BUCKET/PREFIX ("" none)
	LogGroups []string
}

// AWS checks the AWS side: region, credentials, endpoints, identity, and
// the IAM permissions on the queues, the bucket and the log groups.
func AWS(ctx context.Context, env AWSEnv, t AWSTargets, rep *Report) {
	// Region, and where it came from.
	region, regionSource := env.Region, env.RegionSource
	cfg, cfgErr := env.Config, env.ConfigErr
	if cfgErr == nil {
		region = cfg.Region
	}
	rep.Region, rep.RegionSource = region, regionSource
	switch {
	case region == "":
		rep.Add(Check{Name: "region", Status: Fail, Detail: "no AWS region: not in --region, AWS_REGION, AWS_DEFAULT_REGION or the profile",
			Fix: "export AWS_REGION=REGION (the DLQ's region) or pass --region"})
	default:
		rep.Add(Check{Name: "region", Status: OK, Detail: region + " (from " + regionSource + ")"})
	}

	// Credentials.
	var creds Credentials
	credsKnown := false
	switch {
	case cfgErr != nil && region == "":
		rep.Add(Check{Name: "credentials", Status: NotChecked, Detail: "not checked: no region to load the AWS configuration with"})
	case cfgErr != nil:
		rep.Add(Check{Name: "credentials", Status: Fail, Detail: cfgErr.Error(), Fix: "see the message; 'dlqctl help iam' lists what each command needs"})
	case cfg.Credentials == nil:
		rep.Add(Check{Name: "credentials", Status: Fail, Detail: "no credentials provider", Fix: "set AWS_PROFILE or --profile"})
	default:
		v, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			rep.Add(Check{Name: "credentials", Status: Fail, Detail: env.CredentialError(err).Error()})
			break
		}
		creds = Credentials{Source: v.Source, AccessKeyID: v.AccessKeyID, Session: v.SessionToken != ""}
		credsKnown = true
		d := creds.Kind() + " from " + v.Source
		if p := env.Profile; p != "" {
			d += ", profile " + p
		}
		if v.CanExpire {
			d += fmt.Sprintf(", expire in %s", time.Until(v.Expires).Round(time.Minute))
		}
		rep.Add(Check{Name: "credentials", Status: OK, Detail: d})
	}

	// Endpoints, against the credentials.
	rep.Add(EnvironmentCheck(env.SQSEndpoint, env.S3Endpoint, env.Overrides, creds, credsKnown))

	// Identity.
	if cfgErr == nil && credsKnown {
		if env.SQSEndpoint != "" && EndpointKind(env.SQSEndpoint) == "local" && env.STSEndpoint == "" {
			rep.Add(Check{Name: "identity", Status: NotChecked, Action: "sts:GetCallerIdentity",
				Detail: "not checked: SQS is a local stack and STS would be AWS's own (set AWS_ENDPOINT_URL_STS to the stack's STS to check it)"})
		} else {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			stsC := sts.NewFromConfig(cfg, func(o *sts.Options) { o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(), 2) })
			rep.Add(Identity(cctx, stsC, rep))
			cancel()
		}
	}

	// Permissions.
	if cfgErr == nil && credsKnown && (len(t.Queues) > 0 || t.Archive != "" || len(t.LogGroups) > 0) {
		p := &Prober{Region: region, Roles: t.Roles, Principal: rep.Principal, Parse: env.Parse}
		if t.SQS {
			p.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
				o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(), 3)
				if e := env.SQSEndpointFlag; e != "" {
					o.BaseEndpoint = aws.String(e)
				}
			})
		}
		if rep.Principal != "" {
			// IAM's policy simulator, for what no harmless call proves
			// (AWS_ENDPOINT_URL_IAM is honoured by the SDK).
			p.IAM = iam.NewFromConfig(cfg, func(o *iam.Options) { o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(), 3) })
		}
		targets := Targets{Queues: t.Queues, To: t.To, LogGroups: t.LogGroups}
		if t.Archive != "" {
			bucket, prefix, _ := strings.Cut(strings.TrimPrefix(t.Archive, "s3://"), "/")
			targets.Bucket, targets.Prefix = bucket, prefix
			if c, ok := env.S3(ctx, bucket); ok {
				p.S3 = c
			}
		}
		if len(t.LogGroups) > 0 {
			if c, ok := env.Logs(ctx); ok {
				p.Logs = c
			}
		}
		p.Run(ctx, targets, rep)
	}
}
