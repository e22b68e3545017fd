package awsconf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func opErr(service, op string, err error) error {
	return &smithy.OperationError{ServiceID: service, OperationName: op, Err: err}
}

// TestCredentialErrorSaysWhichSourceFailed: each way of not getting
// credentials is one exit-2 sentence naming it and the fix.
func TestCredentialErrorSaysWhichSourceFailed(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "")
	denied := &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform sts:AssumeRole"}
	for _, c := range []struct {
		err     error
		profile string
		want    string
	}{
		{&ssocreds.InvalidTokenError{Err: errors.New("token expired")}, "dev",
			"the AWS SSO session of profile dev has expired or was never started ("},
		{fmt.Errorf("failed to refresh cached credentials, the SSO session has expired or is invalid"), "",
			"the AWS SSO session of profile default has expired"},
		{opErr("STS", "AssumeRole", denied), "ops",
			"AssumeRole denied: profile ops assumes a role and STS refused it (AccessDenied: not authorized to perform sts:AssumeRole); check that the role's trust policy allows the source identity and that the source credentials may call sts:AssumeRole (see 'dlqctl help iam')"},
		{opErr("STS", "AssumeRoleWithWebIdentity", &smithy.GenericAPIError{Code: "ExpiredToken", Message: "expired"}), "",
			"the profile in use assumes a role and STS AssumeRoleWithWebIdentity failed (ExpiredToken: expired); check the source credentials and role_arn of the profile in use"},
		{fmt.Errorf("failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, request send failed, dial tcp 169.254.169.254:80: connect: connection refused"), "",
			"no AWS credentials found: none in the environment or the shared config files, and the instance metadata service (IMDS at 169.254.169.254) could not be reached ("},
		{fmt.Errorf("failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, http response error StatusCode: 404"), "",
			"no AWS credentials found: none in the environment or the shared config files, and this machine's instance metadata service has no IAM role to give ("},
		{fmt.Errorf("failed to retrieve credentials: AWS_EC2_METADATA_DISABLED"), "",
			"no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or pass --profile"},
		{errors.New("static credentials are empty"), "",
			"no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or pass --profile"},
		{errors.New("something else " + strings.Repeat("x", 300)), "",
			"cannot get AWS credentials (something else xxx"},
	} {
		got := CredentialError(c.err, c.profile)
		if got == nil || errs.Code(got) != errs.ExitUsage || !strings.HasPrefix(got.Error(), c.want) || strings.Contains(got.Error(), "\n") {
			t.Errorf("%v:\n got %v\nwant exit 2 starting %q", c.err, got, c.want)
		}
	}
	if CredentialError(nil, "") != nil {
		t.Error("nil error: not nil")
	}
	long := CredentialError(errors.New(strings.Repeat("y", 500)), "").Error()
	if !strings.Contains(long, strings.Repeat("y", 200)+"…)") || strings.Contains(long, strings.Repeat("y", 201)) {
		t.Errorf("a long cause is not cut at 200 characters: %q", long)
	}
}

func TestProfileInUse(t *testing.T) {
	t.Setenv("AWS_PROFILE", "env")
	if ProfileInUse("flag") != "flag" || ProfileInUse("") != "env" {
		t.Errorf("%q %q", ProfileInUse("flag"), ProfileInUse(""))
	}
}

func TestIsAWSEndpoint(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://sqs.eu-west-1.amazonaws.com":                      true,
		"https://s3.cn-north-1.amazonaws.com.cn":                   true,
		"https://s3-fips.us-gov-west-1.amazonaws.com.":             true,
		"https://bucket.vpce-1a2b.s3.us-east-1.vpce.amazonaws.com": true,
		"https://sqs.us-east-1.api.aws":                            true,
		"http://127.0.0.1:4566":                                    false,
		"http://minio.local:9000":                                  false,
		"https://amazonaws.com.evil.example":                       false,
		"::not a url":                                              false,
	} {
		if got := IsAWSEndpoint(raw); got != want {
			t.Errorf("%s: %v, want %v", raw, got, want)
		}
	}
}

func TestEndpointOr(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	if got := EndpointOr("", "AWS_ENDPOINT_URL_SQS"); got != "(AWS default)" {
		t.Errorf("nothing set: %q", got)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://all")
	if got := EndpointOr("", "AWS_ENDPOINT_URL_SQS"); got != "http://all" {
		t.Errorf("AWS_ENDPOINT_URL: %q", got)
	}
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://sqs")
	if got := EndpointOr("", "AWS_ENDPOINT_URL_SQS"); got != "http://sqs" {
		t.Errorf("AWS_ENDPOINT_URL_SQS: %q", got)
	}
	if got := EndpointOr("http://flag", "AWS_ENDPOINT_URL_SQS"); got != "http://flag" {
		t.Errorf("flag: %q", got)
	}
}

// TestLoadSaysWhatIsMissing: a missing profile or region is exit 2 naming
// the fix, before any call; static credentials in the environment load,
// and no error shows the secret key.
func TestLoadSaysWhatIsMissing(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret-key-never-shown")
	ctx := context.Background()
	if _, err := Load(ctx, "", "nosuch", nil); err == nil || errs.Code(err) != errs.ExitUsage ||
		err.Error() != `AWS profile "nosuch" not found in ~/.aws/config or ~/.aws/credentials; check --profile / AWS_PROFILE` {
		t.Errorf("missing profile: %v", err)
	}
	if _, err := Load(ctx, "", "", nil); err == nil || errs.Code(err) != errs.ExitUsage ||
		err.Error() != "no AWS region configured; pass --region or set AWS_REGION" {
		t.Errorf("no region: %v", err)
	}
	cfg, err := Load(ctx, "eu-west-1", "", nil)
	if err != nil || cfg.Region != "eu-west-1" {
		t.Fatalf("static credentials: %v %q", err, cfg.Region)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	if _, err := Load(ctx, "eu-west-1", "", nil); err == nil || errs.Code(err) != errs.ExitUsage || !strings.HasPrefix(err.Error(), "no AWS credentials found") {
		t.Errorf("no credentials: %v", err)
	}
}

// TestSDKLogLinesGoToVerbose: the SDK's own warnings (here IMDS answering
// the token request with 403, so the SDK falls back to IMDSv1 and says
// so) never reach stderr ahead of the one sentence that names the
// problem; they go to the verbose log (-v).
func TestSDKLogLinesGoToVerbose(t *testing.T) {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		http.NotFound(w, r)
	}))
	defer imds.Close()
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	var verbose []string
	_, lerr := Load(context.Background(), "eu-west-1", "", func(format string, a ...any) { verbose = append(verbose, fmt.Sprintf(format, a...)) })
	os.Stderr = stderr
	w.Close()
	written, _ := io.ReadAll(r)
	if errs.Code(lerr) != errs.ExitUsage || !strings.HasPrefix(lerr.Error(), "no AWS credentials found") {
		t.Fatalf("Load: %v, want the no-credentials sentence", lerr)
	}
	if len(written) > 0 {
		t.Errorf("the SDK wrote to stderr: %q", written)
	}
	if !slices.ContainsFunc(verbose, func(l string) bool { return strings.HasPrefix(l, "AWS SDK warn: ") && strings.Contains(l, "IMDSv1") }) {
		t.Errorf("the SDK's warning is not in the verbose log: %q", verbose)
	}
}
