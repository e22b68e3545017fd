// Package testenv locates the local SQS + S3 stack started by scripts/stack.sh
// and hands Go tests ready-made clients, environments and a built dlqctl
// binary.
//
// The stack runs two independent SQS + S3 servers:
//
//   - Require: local-aws-sqs 2.0.2 (SQS) + versitygw v1.8.0 (S3), Kind
//     KindLocal. Lookup order: the AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_S3
//     environment variables (what `eval "$(scripts/stack.sh env)"` exports),
//     then the stack's env file ($DLQCTL_STACK_DIR/env, else
//     <repo root>/.stack/env).
//   - RequireMoto: moto_server (moto 5.2.1), SQS and S3 on one endpoint,
//     Kind KindMoto. Like AWS, and unlike local-aws-sqs, it locks FIFO
//     message groups while a message is in flight; it sets no
//     DeadLetterQueueSourceArn. Lookup: DLQCTL_MOTO_ENDPOINT from the
//     environment, then from the env file.
//
// docs/emulators.md lists the differences between the two and AWS. When a
// server is not found, or does not answer, Require / RequireMoto skip the
// test, unless CI=true or DLQCTL_REQUIRE_STACK=1, where they fail instead.
package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Kind names the servers behind an Env.
type Kind string

const (
	// KindLocal is local-aws-sqs 2.0.2 (SQS) with versitygw v1.8.0 (S3).
	KindLocal Kind = "local"
	// KindMoto is moto_server 5.2.1: SQS and S3 on one endpoint.
	KindMoto Kind = "moto"
)

// Env describes a running local stack.
type Env struct {
	SQSEndpoint string // e.g. http://127.0.0.1:41234 (local-aws-sqs)
	S3Endpoint  string // e.g. http://127.0.0.1:41235 (versitygw, path-style)
	Region      string
	AccessKey   string
	SecretKey   string
	// Kind says which servers these are (KindLocal when empty), so a test
	// can branch on a documented emulator difference or name a subtest.
	Kind Kind
}

// IsMoto reports whether e is the moto_server endpoint.
func (e Env) IsMoto() bool { return e.Kind == KindMoto }

// Variables written by scripts/stack.sh and read back here.
const (
	envSQS       = "AWS_ENDPOINT_URL_SQS"
	envS3        = "AWS_ENDPOINT_URL_S3"
	envAccessKey = "AWS_ACCESS_KEY_ID"
	envSecretKey = "AWS_SECRET_ACCESS_KEY"
	envRegion    = "AWS_REGION"
	// EnvMotoEndpoint is the moto_server endpoint (SQS and S3), e.g.
	// http://127.0.0.1:41236.
	EnvMotoEndpoint = "DLQCTL_MOTO_ENDPOINT"
)

// Static settings for moto_server: it accepts any credentials and does not
// verify signatures; its default account is 123456789012.
const (
	MotoRegion    = "us-east-1"
	MotoAccessKey = "testing"
	MotoSecretKey = "testing"
)

var (
	lookupOnce sync.Once
	lookupEnv  Env
	lookupErr  error

	motoOnce sync.Once
	motoEnv  Env
	motoErr  error
)

// Require returns the running stack or stops the test: t.Skip normally,
// t.Fatal when CI=true or DLQCTL_REQUIRE_STACK=1. The lookup (including a TCP
// probe of both endpoints) runs once per test process.
func Require(t testing.TB) Env {
	t.Helper()
	lookupOnce.Do(func() {
		lookupEnv, lookupErr = Lookup()
		if lookupErr == nil {
			lookupErr = lookupEnv.probe(2 * time.Second)
		}
	})
	if lookupErr != nil {
		msg := fmt.Sprintf("local stack not available: %v (start it with `scripts/stack.sh start` and `eval \"$(scripts/stack.sh env)\"`)", lookupErr)
		if Strict() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return lookupEnv
}

// RequireMoto returns the stack's moto_server (SQSEndpoint and S3Endpoint
// both its one endpoint, region us-east-1, credentials testing/testing,
// Kind KindMoto) or stops the test exactly as Require does: t.Skip
// normally, t.Fatal when Strict(). The lookup and TCP probe run once per
// test process.
func RequireMoto(t testing.TB) Env {
	t.Helper()
	motoOnce.Do(func() {
		motoEnv, motoErr = LookupMoto()
		if motoErr == nil {
			motoErr = motoEnv.probe(2 * time.Second)
		}
	})
	if motoErr != nil {
		msg := fmt.Sprintf("moto_server not available: %v (scripts/stack.sh start starts it; `eval \"$(scripts/stack.sh env)\"` exports %s)", motoErr, EnvMotoEndpoint)
		if Strict() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return motoEnv
}

// ForEachServer runs fn as one subtest per SQS + S3 server of the stack,
// named after its Kind ("local", "moto"): for behaviour that must hold on
// both. Each subtest skips or fails on its own as Require/RequireMoto do.
func ForEachServer(t *testing.T, fn func(t *testing.T, e Env)) {
	t.Helper()
	t.Run(string(KindLocal), func(t *testing.T) { fn(t, Require(t)) })
	t.Run(string(KindMoto), func(t *testing.T) { fn(t, RequireMoto(t)) })
}

// LookupMoto finds the moto_server endpoint without probing it:
// DLQCTL_MOTO_ENDPOINT from the process environment, else from the stack
// env file.
func LookupMoto() (Env, error) {
	ep := os.Getenv(EnvMotoEndpoint)
	if ep == "" {
		path, err := EnvFile()
		if err != nil {
			return Env{}, err
		}
		vars, err := readEnvFile(path)
		if err != nil {
			return Env{}, err
		}
		if ep = vars[EnvMotoEndpoint]; ep == "" {
			return Env{}, fmt.Errorf("%s does not set %s (a stack started by an older scripts/stack.sh: run it again)", path, EnvMotoEndpoint)
		}
	}
	return MotoEnv(ep), nil
}

// MotoEnv describes a moto_server at endpoint (SQS and S3 on the same URL).
func MotoEnv(endpoint string) Env {
	return Env{
		SQSEndpoint: endpoint,
		S3Endpoint:  endpoint,
		Region:      MotoRegion,
		AccessKey:   MotoAccessKey,
		SecretKey:   MotoSecretKey,
		Kind:        KindMoto,
	}
}

// Strict reports whether a missing stack must fail tests instead of skipping
// them (CI=true or DLQCTL_REQUIRE_STACK=1).
func Strict() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	req, _ := strconv.ParseBool(os.Getenv("DLQCTL_REQUIRE_STACK"))
	return ci || req
}

// Lookup finds the stack description without probing it. Values from the
// process environment win; missing ones are filled from the stack env file.
func Lookup() (Env, error) {
	e := Env{
		SQSEndpoint: os.Getenv(envSQS),
		S3Endpoint:  os.Getenv(envS3),
		Region:      firstNonEmpty(os.Getenv(envRegion), os.Getenv("AWS_DEFAULT_REGION")),
		AccessKey:   os.Getenv(envAccessKey),
		SecretKey:   os.Getenv(envSecretKey),
		Kind:        KindLocal,
	}
	if e.SQSEndpoint == "" || e.S3Endpoint == "" {
		path, err := EnvFile()
		if err != nil {
			return Env{}, err
		}
		vars, err := readEnvFile(path)
		if err != nil {
			return Env{}, err
		}
		// The file describes one stack: take all of it, not a mix of two.
		e = Env{
			SQSEndpoint: vars[envSQS],
			S3Endpoint:  vars[envS3],
			Region:      vars[envRegion],
			AccessKey:   vars[envAccessKey],
			SecretKey:   vars[envSecretKey],
			Kind:        KindLocal,
		}
		if e.SQSEndpoint == "" || e.S3Endpoint == "" {
			return Env{}, fmt.Errorf("%s does not set %s and %s", path, envSQS, envS3)
		}
	}
	if e.Region == "" {
		e.Region = "us-east-1"
	}
	if e.AccessKey == "" || e.SecretKey == "" {
		return Env{}, fmt.Errorf("%s/%s not set for the local stack", envAccessKey, envSecretKey)
	}
	return e, nil
}

// EnvFile returns the path of the env file scripts/stack.sh writes:
// $DLQCTL_STACK_DIR/env, else <repo root>/.stack/env.
func EnvFile() (string, error) {
	if dir := os.Getenv("DLQCTL_STACK_DIR"); dir != "" {
		return filepath.Join(dir, "env"), nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".stack", "env"), nil
}

// RepoRoot walks up from the working directory (a package directory under
// `go test`) to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}

// readEnvFile parses `export KEY=VALUE` lines (optional export, optional
// single or double quotes, # comments).
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if n := len(v); n >= 2 && (v[0] == '"' && v[n-1] == '"' || v[0] == '\'' && v[n-1] == '\'') {
			v = v[1 : n-1]
		}
		vars[strings.TrimSpace(k)] = v
	}
	return vars, sc.Err()
}

// probe checks that both endpoints accept TCP connections, so a stale env
// file from a stopped stack skips (or fails) cleanly instead of timing out in
// every test.
func (e Env) probe(timeout time.Duration) error {
	for _, ep := range []string{e.SQSEndpoint, e.S3Endpoint} {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return fmt.Errorf("bad endpoint %q", ep)
		}
		host := u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			host = net.JoinHostPort(u.Hostname(), port)
		}
		c, err := net.DialTimeout("tcp", host, timeout)
		if err != nil {
			return fmt.Errorf("%s does not answer: %w", ep, err)
		}
		c.Close()
	}
	return nil
}

// endpointSource is an aws.Config config source that gives each service its
// own base endpoint, exactly as AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_S3 do
// through LoadDefaultConfig. The SDK's service clients look for the
// GetServiceBaseEndpoint method on every entry of aws.Config.ConfigSources.
type endpointSource map[string]string

func (s endpointSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v, ok := s[sdkID]
	return v, ok && v != "", nil
}

// AWSConfig returns a config with static credentials, the stack's region and
// per-service endpoints: sqs.NewFromConfig and s3.NewFromConfig both reach
// the local servers. It does not read ~/.aws or AWS_PROFILE. S3 clients still
// need UsePathStyle (see S3).
func (e Env) AWSConfig(_ context.Context) aws.Config {
	return aws.Config{
		Region:      e.Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(e.AccessKey, e.SecretKey, "")),
		ConfigSources: []any{endpointSource{
			"SQS": e.SQSEndpoint,
			"S3":  e.S3Endpoint,
		}},
	}
}

// SQS returns a client for the env's SQS server (local-aws-sqs or moto).
// Straight to a stack server, it heals receives that lost their answer
// (sqsheal.go: it waits for their messages and receives again, logging
// it); through a proxy (an Env whose SQSEndpoint a test pointed at a
// faultproxy) it does not.
func (e Env) SQS(t testing.TB) *sqs.Client {
	t.Helper()
	return e.sqsClient(t.Context(), isStackSQS(e.SQSEndpoint), t.Logf)
}

// sqsClient is SQS, healing lost receives when heal is set.
func (e Env) sqsClient(ctx context.Context, heal bool, logf func(string, ...any)) *sqs.Client {
	at := func(o *sqs.Options) { o.BaseEndpoint = aws.String(e.SQSEndpoint) }
	if !heal {
		return sqs.NewFromConfig(e.AWSConfig(ctx), at)
	}
	h := healer{plain: sqs.NewFromConfig(e.AWSConfig(ctx), at), logf: logf}
	return sqs.NewFromConfig(e.AWSConfig(ctx), at, func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, h.add)
	})
}

// isStackSQS reports whether endpoint is one of the stack's SQS servers
// (local-aws-sqs or moto_server) as this process found them.
func isStackSQS(endpoint string) bool {
	stackSQSOnce.Do(func() {
		if e, err := Lookup(); err == nil {
			stackSQS = append(stackSQS, e.SQSEndpoint)
		}
		if e, err := LookupMoto(); err == nil {
			stackSQS = append(stackSQS, e.SQSEndpoint)
		}
	})
	for _, ep := range stackSQS {
		if ep != "" && strings.TrimSuffix(ep, "/") == strings.TrimSuffix(endpoint, "/") {
			return true
		}
	}
	return false
}

var (
	stackSQSOnce sync.Once
	stackSQS     []string
)

// S3 returns a path-style client for the env's S3 server (versitygw or moto;
// no buckets at start: create your own with BucketName). On moto the SDK's
// SigV4 credential scope ("s3") is what routes the request to S3.
//
// Checksums, as observed with this SDK and versitygw v1.8.0: with the SDK
// defaults over plain HTTP, PutObject sends no x-amz-checksum-* header (the
// payload is covered by the signed X-Amz-Content-Sha256 instead) and
// versitygw computes and returns a full-object CRC64NVME itself, as real S3
// does. Code that verifies uploads should set ChecksumAlgorithm explicitly
// (SHA256 works for single and multipart uploads; multipart returns a
// COMPOSITE "<b64>-<parts>" value) and read it back with HeadObject
// ChecksumMode=ENABLED. Re-creating an existing bucket answers 409 on
// versitygw (moto: see docs/emulators.md).
func (e Env) S3(t testing.TB) *s3.Client {
	t.Helper()
	return s3.NewFromConfig(e.AWSConfig(t.Context()), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(e.S3Endpoint)
		o.UsePathStyle = true
	})
}

// Environ returns the current process environment with every AWS setting
// replaced so that a dlqctl subprocess talks to the local stack and nothing
// else: endpoints, static credentials, region, and shared config files
// pointed at nothing (so a developer's ~/.aws profile cannot leak in).
func (e Env) Environ() []string {
	drop := map[string]bool{
		"AWS_PROFILE": true, "AWS_DEFAULT_PROFILE": true, "AWS_SESSION_TOKEN": true,
		"AWS_ENDPOINT_URL": true, "AWS_CONFIG_FILE": true, "AWS_SHARED_CREDENTIALS_FILE": true,
		"AWS_ROLE_ARN": true, "AWS_WEB_IDENTITY_TOKEN_FILE": true,
		envSQS: true, envS3: true, envAccessKey: true, envSecretKey: true, envRegion: true,
		"AWS_DEFAULT_REGION": true, "AWS_EC2_METADATA_DISABLED": true,
		// No longer read by dlqctl (a run's end does not use counts); dropped
		// so a stale shell cannot set it.
		"DLQCTL_SQS_COUNTS_INCLUDE_INFLIGHT": true,
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out,
		envSQS+"="+e.SQSEndpoint,
		envS3+"="+e.S3Endpoint,
		envAccessKey+"="+e.AccessKey,
		envSecretKey+"="+e.SecretKey,
		envRegion+"="+e.Region,
		"AWS_DEFAULT_REGION="+e.Region,
		"AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// CountsIncludeInFlight reports whether the server counts in-flight
// messages in ApproximateNumberOfMessages (local-aws-sqs does; moto and AWS
// do not: docs/emulators.md row 7). A fact for tests that read counts
// themselves; dlqctl needs no switch for it.
func (e Env) CountsIncludeInFlight() bool { return !e.IsMoto() }

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// Logs returns a CloudWatch Logs client for moto_server, the stack's only
// CloudWatch Logs (e must be the moto Env: RequireMoto). dlqctl itself
// reaches it through AWS_ENDPOINT_URL_CLOUDWATCH_LOGS (LogsEnviron).
func (e Env) Logs(t testing.TB) *cloudwatchlogs.Client {
	t.Helper()
	if !e.IsMoto() {
		t.Fatalf("testenv: CloudWatch Logs is served by moto_server only; use RequireMoto")
	}
	return cloudwatchlogs.NewFromConfig(e.AWSConfig(t.Context()), func(o *cloudwatchlogs.Options) {
		o.BaseEndpoint = aws.String(e.SQSEndpoint)
	})
}

// EnvLogsEndpoint is the SDK's per-service endpoint variable for CloudWatch
// Logs; scripts/stack.sh points it at moto_server.
const EnvLogsEndpoint = "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"
