package inspect

import (
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

func writeAWSConfig(t *testing.T, home, config string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Each way of having no usable credentials is told as what it is, with its
// fix, as a bad-input error (exit 2) before any queue is touched.
func TestCredentialErrorsSayWhich(t *testing.T) {
	// A fake instance metadata service that answers but has no role.
	noRole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			w.Write([]byte("token"))
			return
		}
		http.NotFound(w, r)
	}))
	defer noRole.Close()
	// A fake STS that refuses every AssumeRole.
	var assumeCalls int
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("Action") == "AssumeRole" {
			assumeCalls++
		}
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code>` +
			`<Message>User: arn:aws:iam::123456789012:user/ci is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::123456789012:role/dlqctl-operator</Message>` +
			`</Error><RequestId>r-1</RequestId></ErrorResponse>`))
	}))
	defer sts.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	cases := []struct {
		name  string
		setup func(t *testing.T, home string)
		args  []string
		want  []string
	}{
		{
			name: "imds unreachable",
			setup: func(t *testing.T, home string) {
				t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", closedURL)
			},
			want: []string{"no AWS credentials found", "instance metadata service (IMDS at " + closedURL + ") could not be reached", "--profile"},
		},
		{
			name: "imds without a role",
			setup: func(t *testing.T, home string) {
				t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", noRole.URL)
			},
			want: []string{"no AWS credentials found", "has no IAM role to give", "attach an instance profile"},
		},
		{
			name: "imds disabled, nothing configured",
			setup: func(t *testing.T, home string) {
				t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			},
			want: []string{"no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or pass --profile"},
		},
		{
			name: "sso session never started",
			setup: func(t *testing.T, home string) {
				writeAWSConfig(t, home, "[profile ops]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = ReadOnly\nregion = us-east-1\n\n"+
					"[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\n")
			},
			args: []string{"--profile", "ops"},
			want: []string{"the AWS SSO session of profile ops has expired or was never started", "run `aws sso login --profile ops`"},
		},
		{
			name: "legacy sso profile with an expired token",
			setup: func(t *testing.T, home string) {
				writeAWSConfig(t, home, "[profile legacy]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\nsso_account_id = 123456789012\nsso_role_name = ReadOnly\n")
				cache := filepath.Join(home, ".aws", "sso", "cache")
				os.MkdirAll(cache, 0o700)
				// The SDK names the legacy cache file after the SHA-1 of the
				// start URL.
				sum := sha1.Sum([]byte("https://corp.awsapps.com/start"))
				os.WriteFile(filepath.Join(cache, hex.EncodeToString(sum[:])+".json"), []byte(`{"accessToken":"x","expiresAt":"2020-01-01T00:00:00Z"}`), 0o600)
				t.Setenv("AWS_PROFILE", "legacy")
			},
			want: []string{"the AWS SSO session of profile legacy has expired or was never started", "run `aws sso login --profile legacy`"},
		},
		{
			name: "assume role denied",
			setup: func(t *testing.T, home string) {
				writeAWSConfig(t, home, "[profile base]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = secret\n\n"+
					"[profile operator]\nrole_arn = arn:aws:iam::123456789012:role/dlqctl-operator\nsource_profile = base\nregion = us-east-1\n")
				t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
			},
			args: []string{"--profile", "operator"},
			want: []string{"AssumeRole denied: profile operator assumes a role and STS refused it", "arn:aws:iam::123456789012:role/dlqctl-operator", "trust policy", "sts:AssumeRole", "dlqctl help iam"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := clitest.IsolateAWS(t)
			c.setup(t, home)
			res := clitest.Run(t, testenv.Env{}, "", append([]string{"sample", "orders-dlq"}, c.args...)...)
			t.Logf("stderr: %s", res.Stderr)
			if res.Code != 2 || res.Stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q, want exit 2", res.Code, res.Stdout, res.Stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("stderr %q lacks %q", res.Stderr, w)
				}
			}
			if strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", res.Stderr)
			}
		})
	}
	if assumeCalls == 0 {
		t.Error("the fake STS never saw an AssumeRole: the test did not exercise the role profile")
	}
}

// A queue URL in another region than --region is refused with the same
// sentence as an ARN in another region, before SQS is called.
func TestQueueURLInAnotherRegion(t *testing.T) {
	clitest.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for _, ref := range []string{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
		"arn:aws:sqs:eu-west-1:123456789012:orders-dlq",
	} {
		res := clitest.Run(t, testenv.Env{}, "", "sample", ref, "--region", "us-east-1")
		want := "dlqctl: queue " + ref + " is in region eu-west-1 but dlqctl is using us-east-1; pass --region eu-west-1\n"
		if res.Code != 2 || res.Stderr != want {
			t.Errorf("%s: exit %d stderr %q, want exit 2 and %q", ref, res.Code, res.Stderr, want)
		}
	}
}
