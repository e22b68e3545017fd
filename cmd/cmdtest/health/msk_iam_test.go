package health

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/doctor"
)

// noAWSCredentials leaves this process with no AWS credentials anywhere
// (environment, shared files, IMDS), and a region.
func noAWSCredentials(t *testing.T) {
	t.Helper()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_REGION": "us-east-1"} {
		t.Setenv(k, v)
	}
}

// TestMSKIAMCredentialsBeforeDialling: with --kafka-sasl AWS_MSK_IAM and
// no AWS credentials, every command says so in SQS's sentence, exit 2,
// before it opens a connection to any broker.
func TestMSKIAMCredentialsBeforeDialling(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialled atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	noAWSCredentials(t)
	ref := "kafka://" + ln.Addr().String() + "/orders-dlt"
	for _, args := range [][]string{
		{"sample", ref, "--kafka-sasl", "AWS_MSK_IAM"},
		{"redrive", ref, "--kafka-sasl", "AWS_MSK_IAM", "--dry-run"},
	} {
		r := clitest.Run(t, testenv.Env{}, "", args...)
		if r.Code != 2 {
			t.Errorf("%v: exit %d, want 2:\n%s\n%s", args, r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "no AWS credentials found; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or pass --profile") {
			t.Errorf("%v: stderr does not say what SQS says without credentials:\n%s", args, r.Stderr)
		}
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("a broker was dialled %d times before the credentials were found missing", n)
	}
}

// TestMSKIAMFlagTurnsTLSOn: the flags as a user types them. Without
// --kafka-tls, AWS_MSK_IAM connects with TLS (the doctor's tls check says
// TLS); --kafka-tls=false is the failed check.
func TestMSKIAMFlagTurnsTLSOn(t *testing.T) {
	awsEnv := testenv.Require(t)
	brokers := testenv.RequireKafka(t)
	ref := "kafka://" + brokers + "/" + strings.ToLower(testenv.UniqueName(t, "mskflag"))
	state := t.TempDir()

	r := clitest.Run(t, awsEnv, "", "doctor", ref, "--kafka-sasl", "AWS_MSK_IAM", "--state-dir", state, "-o", "json")
	if r.Code != 3 { // the stack's kfake speaks plaintext: the bootstrap fails
		t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if c := checkNamed(t, brokerDoctorReport(t, r), "kafka tls"); c.Status != doctor.OK || !strings.HasPrefix(c.Detail, "TLS") {
		t.Errorf("AWS_MSK_IAM without --kafka-tls: %+v, want TLS in use", c)
	}

	r = clitest.Run(t, awsEnv, "", "doctor", ref, "--kafka-sasl", "AWS_MSK_IAM", "--kafka-tls=false", "--state-dir", state, "-o", "json")
	if c := checkNamed(t, brokerDoctorReport(t, r), "kafka tls"); c.Status != doctor.Fail || !strings.Contains(c.Fix, "drop --kafka-tls=false") {
		t.Errorf("AWS_MSK_IAM --kafka-tls=false: %+v", c)
	}

	r = clitest.Run(t, awsEnv, "", "doctor", ref, "--kafka-tls", "--state-dir", state, "-o", "json")
	if c := checkNamed(t, brokerDoctorReport(t, r), "kafka tls"); c.Status != doctor.OK || !strings.HasPrefix(c.Detail, "TLS") {
		t.Errorf("--kafka-tls alone (a boolean flag without a value): %+v", c)
	}
}
