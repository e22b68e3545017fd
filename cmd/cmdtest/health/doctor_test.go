package health

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/doctor"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// doctorQueues makes a DLQ with one source queue naming it.
func doctorQueues(t *testing.T, env testenv.Env) (dlq, src string) {
	t.Helper()
	c := env.SQS(t)
	dlq, src = testenv.UniqueName(t, "docdlq"), testenv.UniqueName(t, "docsrc")
	_, arn := clitest.CreateQueue(t, c, dlq, nil)
	clitest.CreateQueue(t, c, src, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":3}`})
	return dlq, src
}

func doctorReport(t *testing.T, r clitest.Result) doctor.Report {
	t.Helper()
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s\n%s", err, r.Stdout, r.Stderr)
	}
	return rep
}

func findCheck(rep doctor.Report, name, resourceSuffix string) (doctor.Check, bool) {
	for _, c := range rep.Checks {
		if c.Name == name && strings.HasSuffix(c.Resource, resourceSuffix) {
			return c, true
		}
	}
	return doctor.Check{}, false
}

// TestDoctorOnAGoodShell: the local stack with its own credentials, a DLQ
// and its source, a bucket: every harmless permission proven, the ones
// that would change something not checked, exit 0; the table names the
// fixes and piped output has the documented 5 columns.
func TestDoctorOnAGoodShell(t *testing.T) {
	env := testenv.Require(t)
	dlq, src := doctorQueues(t, env)
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "doc"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	r := clitest.Run(t, env, "", "doctor", dlq, "--archive", "s3://"+bucket+"/dlq/", "--state-dir", state, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	rep := doctorReport(t, r)
	if !rep.OK || rep.Region != env.Region || rep.RegionSource != "AWS_REGION" || rep.StateDir != state {
		t.Fatalf("report: ok=%v region=%s (%s) state=%s", rep.OK, rep.Region, rep.RegionSource, rep.StateDir)
	}
	for _, want := range []struct{ name, res string }{
		{"sqs:GetQueueUrl", ":" + dlq}, {"sqs:GetQueueAttributes", ":" + dlq}, {"sqs:ListDeadLetterSourceQueues", ":" + dlq},
		{"sqs:ListMessageMoveTasks", ":" + dlq}, {"sqs:GetQueueAttributes", ":" + src}, {"s3:ListBucket", ":::" + bucket},
		{"s3:GetObject", bucket + "/dlq/*"}, {"endpoints", ""}, {"region", ""}, {"credentials", ""}, {"state-dir", ""},
	} {
		c, ok := findCheck(rep, want.name, want.res)
		if !ok || c.Status != doctor.OK {
			t.Errorf("%s %s: %+v (found %v), want ok", want.name, want.res, c, ok)
		}
	}
	for _, want := range []struct{ name, res, says string }{
		{"sqs: moving messages", ":" + dlq, "ApproximateReceiveCount"},
		{"sqs:SendMessage", ":" + src, "would send"},
		{"s3:PutObject", bucket + "/dlq/*", "would write"},
	} {
		c, ok := findCheck(rep, want.name, want.res)
		if !ok || c.Status != doctor.NotChecked || !strings.Contains(c.Detail, want.says) || !strings.Contains(c.Fix, `"Effect": "Allow"`) {
			t.Errorf("%s %s: %+v (found %v), want not-checked with the statement to verify", want.name, want.res, c, ok)
		}
	}
	// Nothing was received: doctor changes nothing.
	if v, inflight := clitest.QueueDepth(t, env.SQS(t), queueURL(t, env, dlq)); v != 0 || inflight != 0 {
		t.Errorf("doctor left %d visible / %d in flight", v, inflight)
	}

	piped := clitest.Run(t, env, "", "doctor", dlq, "--role", "read-only", "--state-dir", state)
	if piped.Code != 0 {
		t.Fatalf("piped: exit %d: %s", piped.Code, piped.Stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(piped.Stdout), "\n") {
		if n := len(strings.Split(line, "\t")); n != 5 {
			t.Errorf("piped line has %d columns, want 5: %q", n, line)
		}
	}
	if strings.Contains(piped.Stdout, "sqs:SendMessage") || strings.Contains(piped.Stdout, "DeleteMessage") {
		t.Errorf("--role read-only checks the operator's actions:\n%s", piped.Stdout)
	}
	nd := clitest.Run(t, env, "", "doctor", "--state-dir", state, "-o", "ndjson")
	if nd.Code != 0 || !strings.Contains(nd.Stdout, `"name":"state-dir"`) {
		t.Errorf("ndjson: exit %d\n%s", nd.Code, nd.Stdout)
	}
}

func queueURL(t *testing.T, env testenv.Env, name string) string {
	t.Helper()
	out, err := env.SQS(t).GetQueueUrl(t.Context(), &sqsGetQueueURLInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// TestDoctorOnABadShell: the situations the first hour on AWS goes wrong
// in, each a failed check (exit 3) with the fix.
func TestDoctorOnABadShell(t *testing.T) {
	env := testenv.Require(t)
	dlq, _ := doctorQueues(t, env)

	t.Run("real-looking credentials against a local stack", func(t *testing.T) {
		clitest.SetStackEnv(t, env)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIAZ2X3C4V5B6N7M8Q9")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret-but-shaped-like-one")
		r := clitest.Run(t, testenv.Env{}, "", "doctor", dlq, "--state-dir", t.TempDir(), "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3: %s", r.Code, r.Stderr)
		}
		c, _ := findCheck(doctorReport(t, r), "endpoints", "")
		if c.Status != doctor.Fail || !strings.Contains(c.Fix, "unset AWS_ENDPOINT_URL_SQS") || strings.Contains(r.Stdout, "AKIAZ2X3C4V5B6N7M8Q9") || strings.Contains(r.Stdout, "not-a-real-secret") {
			t.Errorf("endpoints check: %+v\n%s", c, r.Stdout)
		}
	})
	t.Run("no region", func(t *testing.T) {
		clitest.SetStackEnv(t, env)
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_DEFAULT_REGION", "")
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "--state-dir", t.TempDir())
		if r.Code != 3 || !strings.Contains(r.Stdout, "region\tfail") || !strings.Contains(r.Stdout, "export AWS_REGION=") {
			t.Errorf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
	})
	t.Run("queue in another region", func(t *testing.T) {
		r := clitest.Run(t, env, "", "doctor", "arn:aws:sqs:eu-west-1:123456789012:"+dlq, "--state-dir", t.TempDir())
		if r.Code != 3 || !strings.Contains(r.Stdout, "--region eu-west-1") {
			t.Errorf("exit %d:\n%s", r.Code, r.Stdout)
		}
	})
	t.Run("no such queue", func(t *testing.T) {
		r := clitest.Run(t, env, "", "doctor", "no-such-queue-"+dlq, "--state-dir", t.TempDir())
		if r.Code != 3 || !strings.Contains(r.Stdout, "does not exist") {
			t.Errorf("exit %d:\n%s", r.Code, r.Stdout)
		}
	})
	t.Run("region from the profile", func(t *testing.T) {
		clitest.SetStackEnv(t, env)
		cfgFile := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(cfgFile, []byte("[profile oncall]\nregion = eu-west-1\naws_access_key_id = "+env.AccessKey+"\naws_secret_access_key = "+env.SecretKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_CONFIG_FILE", cfgFile)
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_DEFAULT_REGION", "")
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "--profile", "oncall", "--state-dir", t.TempDir(), "-o", "json")
		rep := doctorReport(t, r)
		if rep.Region != "eu-west-1" || !strings.HasPrefix(rep.RegionSource, "profile oncall") {
			t.Errorf("region %q from %q, want eu-west-1 from profile oncall", rep.Region, rep.RegionSource)
		}
		if c, _ := findCheck(rep, "credentials", ""); c.Status != doctor.OK || !strings.Contains(c.Detail, "profile oncall") {
			t.Errorf("credentials: %+v", c)
		}
	})
	t.Run("bad queue reference", func(t *testing.T) {
		r := clitest.Run(t, env, "", "doctor", "arn:aws:sqs:nonsense")
		if r.Code != 2 {
			t.Errorf("exit %d: %s", r.Code, r.Stderr)
		}
	})
	t.Run("bad role", func(t *testing.T) {
		r := clitest.Run(t, env, "", "doctor", "--role", "admin")
		if r.Code != 2 || !strings.Contains(r.Stderr, "read-only, operator, archivist") {
			t.Errorf("exit %d: %s", r.Code, r.Stderr)
		}
	})
}

// TestDoctorNamesDeniedPermissions: proxies in front of SQS and S3 answer
// AccessDenied for chosen actions, as IAM would; doctor fails those
// checks by IAM action and resource, with the statement to grant, and
// proves the others.
func TestDoctorNamesDeniedPermissions(t *testing.T) {
	env := testenv.Require(t)
	dlq, src := doctorQueues(t, env)
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "docd"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	sqsP, err := faultproxy.New(env.SQSEndpoint,
		faultproxy.Fault{Action: "ListDeadLetterSourceQueues", Kind: faultproxy.Deny},
		faultproxy.Fault{Action: "ListMessageMoveTasks", Kind: faultproxy.Deny})
	if err != nil {
		t.Fatal(err)
	}
	defer sqsP.Close()
	s3P, err := faultproxy.New(env.S3Endpoint, faultproxy.Fault{Action: "ListObjectsV2", Kind: faultproxy.Deny}, faultproxy.Fault{Action: "HeadObject", Kind: faultproxy.Deny})
	if err != nil {
		t.Fatal(err)
	}
	defer s3P.Close()
	via := env
	via.SQSEndpoint, via.S3Endpoint = sqsP.URL, s3P.URL

	r := clitest.Run(t, via, "", "doctor", dlq, "--to", src, "--archive", "s3://"+bucket+"/x/", "--state-dir", t.TempDir(), "-o", "json")
	if r.Code != 3 {
		t.Fatalf("exit %d, want 3: %s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	rep := doctorReport(t, r)
	for _, want := range []struct{ action, res string }{
		{"sqs:ListDeadLetterSourceQueues", ":" + dlq}, {"sqs:ListMessageMoveTasks", ":" + dlq}, {"s3:ListBucket", ":::" + bucket},
	} {
		c, ok := findCheck(rep, want.action, want.res)
		if !ok || c.Status != doctor.Fail || !strings.Contains(c.Detail, "DENIED") || !strings.Contains(c.Fix, `"Action": "`+want.action+`"`) {
			t.Errorf("%s: %+v (found %v), want a failure with the statement to grant", want.action, c, ok)
		}
	}
	if c, _ := findCheck(rep, "sqs:GetQueueAttributes", ":"+dlq); c.Status != doctor.OK {
		t.Errorf("GetQueueAttributes was allowed: %+v", c)
	}
	// Without s3:ListBucket S3 answers 403 for a missing key whether or
	// not s3:GetObject is allowed: that proves nothing.
	if c, _ := findCheck(rep, "s3:GetObject", bucket+"/x/*"); c.Status != doctor.NotChecked {
		t.Errorf("s3:GetObject without ListBucket: %+v", c)
	}

	// The same on a terminal: the table, then the fixes.
	tty := runDoctorTTY(t, via, dlq)
	if !strings.Contains(tty, "To fix (fail, warn)") || !strings.Contains(tty, "grant sqs:ListDeadLetterSourceQueues") {
		t.Errorf("terminal output lacks the fixes:\n%s", tty)
	}
}

// TestDoctorAsksSTSAndLogsOnMoto: moto serves STS and CloudWatch Logs: the
// identity names the account, --logs proves logs:FilterLogEvents on an
// existing group and fails on a missing one.
func TestDoctorAsksSTSAndLogsOnMoto(t *testing.T) {
	env := testenv.RequireMoto(t)
	t.Setenv("AWS_ENDPOINT_URL_STS", env.SQSEndpoint)
	t.Setenv(testenv.EnvLogsEndpoint, env.SQSEndpoint)
	dlq, _ := doctorQueues(t, env)
	group := "/ecs/" + dlq
	if _, err := env.Logs(t).CreateLogGroup(t.Context(), &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, env, "", "doctor", dlq, "--logs", group, "--logs", group+"-missing", "--state-dir", t.TempDir(), "-o", "json")
	rep := doctorReport(t, r)
	if r.Code != 3 {
		t.Fatalf("exit %d, want 3 (a missing log group): %s", r.Code, r.Stdout)
	}
	if rep.Account != "123456789012" {
		t.Errorf("identity: account %q", rep.Account)
	}
	if c, _ := findCheck(rep, "identity", ""); c.Status != doctor.OK {
		t.Errorf("identity: %+v", c)
	}
	if c, _ := findCheck(rep, "logs:FilterLogEvents", "log-group:"+group+":*"); c.Status != doctor.OK || !strings.Contains(c.Resource, "arn:aws:logs:us-east-1:123456789012:") {
		t.Errorf("logs: %+v", c)
	}
	if c, _ := findCheck(rep, "logs:FilterLogEvents", group+"-missing:*"); c.Status != doctor.Fail || !strings.Contains(c.Detail, "does not exist") {
		t.Errorf("missing log group: %+v", c)
	}
}

type sqsGetQueueURLInput = sqs.GetQueueUrlInput

// runDoctorTTY runs doctor on terminal streams and returns stdout.
func runDoctorTTY(t *testing.T, env testenv.Env, args ...string) string {
	t.Helper()
	clitest.SetStackEnv(t, env)
	var out, errOut bytes.Buffer
	code := cmd.Run(t.Context(), output.Test(strings.NewReader(""), &out, &errOut, true), append([]string{"doctor", "--state-dir", t.TempDir(), "--no-color"}, args...))
	if code != 3 && code != 0 {
		t.Fatalf("doctor on a terminal: exit %d: %s", code, errOut.String())
	}
	return out.String()
}
