package awsconf

import (
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// CredentialError turns a failure to obtain AWS credentials into one
// sentence that says which failure it is and how to fix it: no credentials
// anywhere, an expired or never started SSO session, an AssumeRole that STS
// refused, or an instance metadata service (IMDS) that could not be
// reached or has no role. profile is the profile in use ("" for none).
func CredentialError(err error, profile string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	detail := shortDetail(err)
	var op *smithy.OperationError
	isOp := errors.As(err, &op)
	var api smithy.APIError
	isAPI := errors.As(err, &api)

	var sso *ssocreds.InvalidTokenError
	if errors.As(err, &sso) || strings.Contains(msg, "SSO token") || strings.Contains(msg, "SSO session") ||
		(isOp && op.ServiceID == "SSO" && isAPI && api.ErrorCode() == "UnauthorizedException") {
		p := profile
		if p == "" {
			p = "default"
		}
		return errs.BadInputf("the AWS SSO session of profile %s has expired or was never started (%s); run `aws sso login --profile %s` and try again", p, detail, p)
	}

	if isOp && op.ServiceID == "STS" && strings.HasPrefix(op.OperationName, "AssumeRole") {
		who := "the profile in use"
		if profile != "" {
			who = "profile " + profile
		}
		if isAPI && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "AccessDeniedException") {
			return errs.BadInputf("AssumeRole denied: %s assumes a role and STS refused it (%s); check that the role's trust policy allows the source identity and that the source credentials may call sts:%s (see 'dlqctl help iam')", who, detail, op.OperationName)
		}
		return errs.BadInputf("%s assumes a role and STS %s failed (%s); check the source credentials and role_arn of %s", who, op.OperationName, detail, who)
	}

	if strings.Contains(msg, "EC2 IMDS") || (isOp && op.ServiceID == "ec2imds") {
		switch {
		case strings.Contains(msg, "AWS_EC2_METADATA_DISABLED"):
			// IMDS was switched off: the plain "no credentials" case.
		case imdsUnreachable(msg):
			return errs.BadInputf("no AWS credentials found: none in the environment or the shared config files, and the instance metadata service (IMDS at %s) could not be reached (%s); set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or --profile, or on EC2/ECS/EKS check the instance role and the metadata hop limit", imdsEndpoint(), detail)
		default:
			return errs.BadInputf("no AWS credentials found: none in the environment or the shared config files, and this machine's instance metadata service has no IAM role to give (%s); attach an instance profile, or set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or --profile", detail)
		}
	}

	if strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "failed to refresh cached credentials") ||
		strings.Contains(msg, "static credentials are empty") || strings.Contains(msg, "AnonymousCredentials") ||
		strings.Contains(msg, "AWS_EC2_METADATA_DISABLED") {
		return errs.BadInputf("no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or pass --profile")
	}
	return errs.BadInputf("cannot get AWS credentials (%s); check --profile and the AWS_* credential variables", detail)
}

// imdsUnreachable reports whether an IMDS error text is a network failure
// (no answer) rather than an answer without a role.
func imdsUnreachable(msg string) bool {
	for _, s := range []string{"request send failed", "dial tcp", "connection refused", "i/o timeout", "deadline exceeded",
		"request canceled", "no route to host", "network is unreachable", "connection reset", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func imdsEndpoint() string {
	if e := os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT"); e != "" {
		return e
	}
	return "169.254.169.254"
}

// shortDetail is the most specific part of an SDK error: the API error's
// code and message when there is one, else the last element of the chain
// of ", "-joined causes, at most 200 characters.
func shortDetail(err error) string {
	var api smithy.APIError
	s := ""
	if errors.As(err, &api) {
		s = api.ErrorCode()
		if m := api.ErrorMessage(); m != "" {
			s += ": " + m
		}
	} else {
		s = err.Error()
		if i := strings.LastIndex(s, "operation error "); i > 0 {
			s = s[i:]
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// ProfileInUse is the profile the SDK loads: --profile, else AWS_PROFILE
// ("" for the default profile).
func ProfileInUse(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("AWS_PROFILE")
}
