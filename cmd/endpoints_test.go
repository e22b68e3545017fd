package cmd_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// Which endpoint each client gets, and when S3 is addressed path-style:
// --endpoint-url is a local stack for both; --sqs-endpoint-url and
// --s3-endpoint-url set one service each (an SQS FIPS or VPC endpoint
// never lands on S3); path-style only for S3 servers that are not AWS's.
func TestEndpointFlagsPerService(t *testing.T) {
	cases := []struct {
		name          string
		args          []string
		env           map[string]string
		sqs, s3       string // the clients' BaseEndpoint ("" = AWS's regional endpoint)
		pathStyle     bool
		customS3, any bool
	}{
		{name: "aws defaults", sqs: "", s3: ""},
		{name: "local stack for both", args: []string{"--endpoint-url", "http://127.0.0.1:4566"},
			sqs: "http://127.0.0.1:4566", s3: "http://127.0.0.1:4566", pathStyle: true, customS3: true, any: true},
		{name: "sqs vpc endpoint only", args: []string{"--sqs-endpoint-url", "https://vpce-0a1b2c3d-abcd.sqs.us-east-1.vpce.amazonaws.com"},
			sqs: "https://vpce-0a1b2c3d-abcd.sqs.us-east-1.vpce.amazonaws.com", s3: ""},
		{name: "sqs fips only", args: []string{"--sqs-endpoint-url", "https://sqs-fips.us-east-1.amazonaws.com"},
			sqs: "https://sqs-fips.us-east-1.amazonaws.com", s3: ""},
		{name: "s3 compatible server", args: []string{"--s3-endpoint-url", "http://127.0.0.1:9000"},
			sqs: "", s3: "http://127.0.0.1:9000", pathStyle: true, customS3: true, any: true},
		{name: "s3 vpc endpoint stays virtual-hosted", args: []string{"--s3-endpoint-url", "https://bucket.vpce-1a2b3c4d-5e6f.s3.us-east-1.vpce.amazonaws.com"},
			s3: "https://bucket.vpce-1a2b3c4d-5e6f.s3.us-east-1.vpce.amazonaws.com", any: true},
		{name: "per-service flags win over the stack", args: []string{"--endpoint-url", "http://127.0.0.1:4566", "--sqs-endpoint-url", "http://127.0.0.1:9324"},
			sqs: "http://127.0.0.1:9324", s3: "http://127.0.0.1:4566", pathStyle: true, customS3: true, any: true},
		// The SDK itself reads the per-service variables into BaseEndpoint.
		{name: "env s3 server", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}, s3: "http://127.0.0.1:9000", pathStyle: true, customS3: true, any: true},
		{name: "env real s3", env: map[string]string{"AWS_ENDPOINT_URL_S3": "https://s3.eu-west-1.amazonaws.com"}, s3: "https://s3.eu-west-1.amazonaws.com", any: true},
		{name: "env sqs endpoint stays on sqs", env: map[string]string{"AWS_ENDPOINT_URL_SQS": "https://sqs-fips.us-east-1.amazonaws.com"}, sqs: "https://sqs-fips.us-east-1.amazonaws.com"},
		{name: "explicit path style on aws", args: []string{"--s3-path-style"}, pathStyle: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clitest.IsolateAWS(t)
			t.Setenv("AWS_ENDPOINT_URL_SQS", "")
			os.Unsetenv("AWS_ENDPOINT_URL_SQS")
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var errOut bytes.Buffer
			f := &cmd.Factory{IO: output.Test(strings.NewReader(""), &bytes.Buffer{}, &errOut, false)}
			root := cmd.NewRootCmd(f)
			root.SetArgs(append(c.args, "filters"))
			root.SetOut(&bytes.Buffer{})
			if err := root.Execute(); err != nil {
				t.Fatalf("flags %v: %v", c.args, err)
			}
			ctx := context.Background()
			qc, err := f.SQS(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(qc.API.(*sqs.Client).Options().BaseEndpoint); got != c.sqs {
				t.Errorf("SQS endpoint %q, want %q", got, c.sqs)
			}
			sc, err := f.S3(ctx)
			if err != nil {
				t.Fatal(err)
			}
			o := sc.Options()
			if got := aws.ToString(o.BaseEndpoint); got != c.s3 {
				t.Errorf("S3 endpoint %q, want %q", got, c.s3)
			}
			if o.UsePathStyle != c.pathStyle {
				t.Errorf("S3 path-style %v, want %v", o.UsePathStyle, c.pathStyle)
			}
			if f.CustomS3Endpoint() != c.customS3 || (f.S3EndpointOverride() != "") != c.any {
				t.Errorf("custom S3 %v / override %q, want %v / %v", f.CustomS3Endpoint(), f.S3EndpointOverride(), c.customS3, c.any)
			}
		})
	}
}

// Bad endpoint flags are refused with one sentence before anything runs;
// an AWS endpoint in --endpoint-url (which sets both services) is refused
// with the per-service flag to use instead.
func TestEndpointFlagsValidation(t *testing.T) {
	clitest.IsolateAWS(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--endpoint-url", "https://sqs-fips.us-east-1.amazonaws.com"}, "--endpoint-url sets both the SQS and the S3 endpoint and is meant for local stacks; https://sqs-fips.us-east-1.amazonaws.com is an AWS endpoint: pass it as --sqs-endpoint-url or --s3-endpoint-url"},
		{[]string{"--endpoint-url", "https://vpce-0a1b-abcd.sqs.eu-west-1.vpce.amazonaws.com"}, "is meant for local stacks"},
		{[]string{"--sqs-endpoint-url", "sqs.us-east-1.amazonaws.com"}, `--sqs-endpoint-url "sqs.us-east-1.amazonaws.com" is not an http(s) URL`},
		{[]string{"--s3-endpoint-url", "ftp://127.0.0.1"}, `--s3-endpoint-url "ftp://127.0.0.1" is not an http(s) URL`},
	} {
		res := clitest.Run(t, testenv.Env{}, "", append(c.args, "sample", "orders-dlq")...)
		if res.Code != 2 || !strings.Contains(res.Stderr, c.want) || res.Stdout != "" {
			t.Errorf("%v: exit %d stderr %q, want exit 2 and %q", c.args, res.Code, res.Stderr, c.want)
		}
	}
}
