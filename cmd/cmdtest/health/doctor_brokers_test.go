package health

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/doctor"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// brokerDoctorReport decodes doctor -o json.
func brokerDoctorReport(t *testing.T, r clitest.Result) doctor.Report {
	t.Helper()
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s\n%s", err, r.Stdout, r.Stderr)
	}
	return rep
}

// checkNamed finds a check by name (and, when given, its resource).
func checkNamed(t *testing.T, rep doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in the report: %+v", name, rep.Checks)
	return doctor.Check{}
}

func noAWSChecks(t *testing.T, rep doctor.Report) {
	t.Helper()
	for _, c := range rep.Checks {
		switch c.Name {
		case "region", "credentials", "identity", "endpoints", "sqs:ListQueues":
			t.Errorf("a RabbitMQ/Kafka reference alone ran the AWS check %q: %+v", c.Name, c)
		}
	}
}

// rabbitRef is the reference of queue without credentials (they come from
// DLQCTL_AMQP_USERNAME / DLQCTL_AMQP_PASSWORD).
func rabbitRef(env testenv.RabbitMQ, queue string) string {
	return "amqp://" + env.HostPort + "/%2f/" + url.PathEscape(queue)
}

// TestDoctorRabbitMQ: doctor amqp://… on the stack's node — a seeded DLQ
// passes (its sources found, the user's permissions read), a missing
// queue, a wrong password, an unreachable port and an unreachable
// management API each fail with the fix (exit 3), and no password ever
// reaches the output.
func TestDoctorRabbitMQ(t *testing.T) {
	env, n := clitest.SeedRabbit(t, amqpseed.Default(clitest.RabbitPrefix(t)))
	t.Setenv("DLQCTL_AMQP_USERNAME", env.Username)
	t.Setenv("DLQCTL_AMQP_PASSWORD", env.Password)
	state := t.TempDir()
	noSecret := func(t *testing.T, r clitest.Result, secrets ...string) {
		t.Helper()
		for _, s := range append(secrets, env.Password) {
			if strings.Contains(r.Stdout+r.Stderr, s) {
				t.Errorf("output carries the secret %q:\n%s\n%s", s, r.Stdout, r.Stderr)
			}
		}
	}

	t.Run("ok", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r)
		rep := brokerDoctorReport(t, r)
		noAWSChecks(t, rep)
		for _, name := range []string{"rabbitmq connection", "rabbitmq authentication", "rabbitmq vhost", "rabbitmq tls", "rabbitmq management", "rabbitmq queue", "rabbitmq dead-letter sources", "rabbitmq permissions", "state-dir"} {
			if c := checkNamed(t, rep, name); c.Status != doctor.OK {
				t.Errorf("%s: %+v, want ok", name, c)
			}
		}
		if c := checkNamed(t, rep, "rabbitmq management"); !strings.Contains(c.Detail, "RabbitMQ 3.") && !strings.Contains(c.Detail, "RabbitMQ 4.") {
			t.Errorf("management check names no RabbitMQ version: %+v", c)
		}
		if c := checkNamed(t, rep, "rabbitmq dead-letter sources"); !strings.Contains(c.Detail, n.Orders) {
			t.Errorf("sources check does not name %s: %+v", n.Orders, c)
		}
		if c := checkNamed(t, rep, "rabbitmq queue settings"); !strings.Contains(c.Detail, "type classic") || !strings.Contains(c.Detail, "dead-letter-exchange") {
			t.Errorf("settings: %+v", c)
		}
		if c := checkNamed(t, rep, "rabbitmq queue"); c.Resource != "amqp://"+env.HostPort+"/%2F/"+n.DLQ {
			t.Errorf("resource %q, want the reference without credentials", c.Resource)
		}

		// Piped: 5 tab-separated columns; the resource is the reference.
		p := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--state-dir", state)
		if p.Code != 0 {
			t.Fatalf("piped: exit %d %s", p.Code, p.Stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(p.Stdout), "\n") {
			if f := strings.Split(line, "\t"); len(f) != 5 {
				t.Errorf("piped line has %d columns, want 5: %q", len(f), line)
			}
		}
		nd := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--state-dir", state, "-o", "ndjson")
		if nd.Code != 0 || !strings.Contains(nd.Stdout, `"name":"rabbitmq queue"`) {
			t.Errorf("ndjson: exit %d\n%s", nd.Code, nd.Stdout)
		}
	})

	t.Run("password in the reference is a warning", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", env.QueueRef(n.DLQ), "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r)
		c := checkNamed(t, brokerDoctorReport(t, r), "rabbitmq authentication")
		if c.Status != doctor.Warn || !strings.Contains(c.Detail, "shell history") || !strings.Contains(c.Fix, "DLQCTL_AMQP_PASSWORD") {
			t.Errorf("auth check: %+v", c)
		}
	})

	t.Run("quorum DLQ with a delivery limit", func(t *testing.T) {
		o := amqpseed.Default(clitest.RabbitPrefix(t) + "q")
		o.QuorumDLQ, o.DLQDeliveryLimit = true, 5
		_, qn := clitest.SeedRabbit(t, o)
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, qn.DLQ), "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "rabbitmq queue settings")
		if c.Status != doctor.Warn || !strings.Contains(c.Detail, "type quorum") || !strings.Contains(c.Detail, "delivery-limit 5") || !strings.Contains(c.Fix, "delivery-limit") {
			t.Errorf("settings of a quorum DLQ with a delivery limit: %+v", c)
		}
	})

	t.Run("missing queue", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ+".nope"), "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "rabbitmq queue")
		if c.Status != doctor.Fail || !strings.Contains(c.Detail, "does not exist") || !strings.Contains(c.Fix, "dlqctl queues amqp://") {
			t.Errorf("queue check: %+v", c)
		}
	})

	t.Run("a vhost, no queue", func(t *testing.T) {
		vhost := "amqp://" + env.HostPort + "/%2F/"
		for _, ref := range []string{"amqp://" + env.HostPort + "/%2f/", "amqp://" + env.HostPort + "/", "amqp://" + env.HostPort} {
			r := clitest.Run(t, testenv.Env{}, "", "doctor", ref, "--state-dir", state, "-o", "json")
			if r.Code != 0 {
				t.Fatalf("doctor %s: exit %d, want 0:\n%s\n%s", ref, r.Code, r.Stdout, r.Stderr)
			}
			rep := brokerDoctorReport(t, r)
			noAWSChecks(t, rep)
			for _, name := range []string{"rabbitmq tls", "rabbitmq connection", "rabbitmq authentication", "rabbitmq vhost", "rabbitmq management"} {
				if c := checkNamed(t, rep, name); c.Status != doctor.OK {
					t.Errorf("%s: %+v, want ok", name, c)
				}
			}
			c := checkNamed(t, rep, "rabbitmq queue")
			if c.Status != doctor.NotChecked || !strings.Contains(c.Fix, "dlqctl doctor "+vhost+"QUEUE") || !strings.Contains(c.Fix, "dlqctl queues "+vhost) {
				t.Errorf("queue check of a vhost reference: %+v", c)
			}
			for _, c := range rep.Checks {
				if strings.HasPrefix(c.Resource, "amqp://") && c.Resource != vhost {
					t.Errorf("check %q names resource %q, want the vhost %s", c.Name, c.Resource, vhost)
				}
			}
			noSecret(t, r)
		}
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "amqp://"+env.HostPort+"/no-such-vhost-"+clitest.RabbitPrefix(t)+"/", "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("doctor of a missing vhost: exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if c := checkNamed(t, brokerDoctorReport(t, r), "rabbitmq vhost"); c.Status != doctor.Fail {
			t.Errorf("vhost check of a missing vhost: %+v", c)
		}
	})

	t.Run("on a terminal", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := cmd.Run(t.Context(), output.Test(strings.NewReader(""), &out, &errOut, true), []string{"doctor", rabbitRef(env, n.DLQ+".nope"), "--state-dir", state, "--no-color"})
		if code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", code, out.String(), errOut.String())
		}
		for _, want := range []string{"CHECK", "STATUS", "DETAIL", "rabbitmq queue " + n.DLQ + ".nope", "To fix (fail, warn) or verify (not-checked):", "fail rabbitmq queue " + n.DLQ + ".nope: check the queue name"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the table lacks %q:\n%s", want, out.String())
			}
		}
		if strings.Contains(out.String()+errOut.String(), env.Password) {
			t.Error("password in the table")
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		const wrong = "not-the-rabbit-password-42"
		t.Setenv("DLQCTL_AMQP_PASSWORD", wrong)
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r, wrong)
		rep := brokerDoctorReport(t, r)
		if c := checkNamed(t, rep, "rabbitmq connection"); c.Status != doctor.OK {
			t.Errorf("the node answered, yet: %+v", c)
		}
		c := checkNamed(t, rep, "rabbitmq authentication")
		if c.Status != doctor.Fail || !strings.Contains(c.Detail, "refused the login") || !strings.Contains(c.Fix, "DLQCTL_AMQP_PASSWORD") {
			t.Errorf("auth check: %+v", c)
		}
		// A wrong password in the reference itself is not printed either.
		r = clitest.Run(t, testenv.Env{}, "", "doctor", "amqp://"+env.Username+":"+wrong+"@"+env.HostPort+"/%2f/"+n.DLQ, "--state-dir", state)
		if r.Code != 3 || !strings.Contains(r.Stdout, "rabbitmq authentication\tfail") {
			t.Errorf("password in the reference: exit %d\n%s", r.Code, r.Stdout)
		}
		noSecret(t, r, wrong)
	})

	t.Run("missing vhost", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "amqp://"+env.HostPort+"/no-such-vhost-"+clitest.RabbitPrefix(t)+"/"+n.DLQ, "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "rabbitmq vhost")
		if c.Status != doctor.Fail || !strings.Contains(c.Fix, "rabbitmqctl list_vhosts") {
			t.Errorf("vhost check: %+v", c)
		}
	})

	t.Run("permissions", func(t *testing.T) {
		// An administrator whose read pattern misses the DLQ: proven
		// denied; a monitoring user: the API does not show permissions.
		admin, monitor := "dlqdoc-admin-"+clitest.RabbitPrefix(t), "dlqdoc-mon-"+clitest.RabbitPrefix(t)
		const pw = "dlqdoc-user-secret-9"
		rabbitUser(t, env, admin, pw, "administrator", "^nothing-dlqctl-reads$")
		rabbitUser(t, env, monitor, pw, "monitoring", ".*")
		t.Setenv("DLQCTL_AMQP_PASSWORD", pw)

		t.Setenv("DLQCTL_AMQP_USERNAME", admin)
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r, pw)
		c := checkNamed(t, brokerDoctorReport(t, r), "rabbitmq permissions")
		if c.Status != doctor.Fail || !strings.Contains(c.Detail, "does not cover queue") || !strings.Contains(c.Fix, "rabbitmqctl set_permissions") {
			t.Errorf("permissions of a user who may not read the DLQ: %+v", c)
		}

		t.Setenv("DLQCTL_AMQP_USERNAME", monitor)
		r = clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d, want 0:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r, pw)
		c = checkNamed(t, brokerDoctorReport(t, r), "rabbitmq permissions")
		if c.Status != doctor.NotChecked || !strings.Contains(c.Fix, "rabbitmqctl list_user_permissions") {
			t.Errorf("permissions of a monitoring user: %+v", c)
		}
	})

	t.Run("unreachable port", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "amqp://127.0.0.1:1/%2f/"+n.DLQ, "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		rep := brokerDoctorReport(t, r)
		c := checkNamed(t, rep, "rabbitmq connection")
		if c.Status != doctor.Fail || !strings.Contains(c.Fix, "5672") {
			t.Errorf("connection check: %+v", c)
		}
		if c := checkNamed(t, rep, "rabbitmq queue"); c.Status != doctor.NotChecked {
			t.Errorf("queue check after no connection: %+v", c)
		}
		if c := checkNamed(t, rep, "state-dir"); c.Status != doctor.OK {
			t.Errorf("state-dir is checked whatever the broker says: %+v", c)
		}
	})

	t.Run("management API unreachable", func(t *testing.T) {
		const secret = "mgmt-query-secret-77"
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--amqp-management-url", "http://127.0.0.1:1/?password="+secret, "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r, secret)
		rep := brokerDoctorReport(t, r)
		c := checkNamed(t, rep, "rabbitmq management")
		if c.Status != doctor.Fail || !strings.Contains(c.Fix, "rabbitmq_management") || !strings.Contains(c.Fix, "--amqp-management-url") {
			t.Errorf("management check: %+v", c)
		}
		if c := checkNamed(t, rep, "rabbitmq queue"); c.Status != doctor.OK {
			t.Errorf("AMQP still finds the queue: %+v", c)
		}
		if c := checkNamed(t, rep, "rabbitmq queue settings"); c.Status != doctor.NotChecked {
			t.Errorf("settings without the management API: %+v", c)
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		const secret = "mgmt-flag-secret-55"
		r := clitest.Run(t, testenv.Env{}, "", "doctor", rabbitRef(env, n.DLQ), "--amqp-management-url", "ftp://127.0.0.1/?password="+secret, "--state-dir", state)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--amqp-management-url") || r.Stdout != "" {
			t.Errorf("a management URL that is not http(s): exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		noSecret(t, r, secret)
		r = clitest.Run(t, testenv.Env{}, "", "doctor", "orders-dlq", "--to", rabbitRef(env, n.DLQ), "--state-dir", state)
		if r.Code != 2 || !strings.Contains(r.Stderr, "dlqctl doctor amqp://") {
			t.Errorf("--to a RabbitMQ queue: exit %d\n%s", r.Code, r.Stderr)
		}
	})

	t.Run("with an archive bucket", func(t *testing.T) {
		awsEnv := testenv.Require(t)
		bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "docmq"), "_", "-"))
		if _, err := awsEnv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		r := clitest.Run(t, awsEnv, "", "doctor", rabbitRef(env, n.DLQ), "--archive", "s3://"+bucket+"/rabbitmq/", "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		rep := brokerDoctorReport(t, r)
		if c := checkNamed(t, rep, "s3:ListBucket"); c.Status != doctor.OK || c.Resource != "arn:aws:s3:::"+bucket {
			t.Errorf("s3:ListBucket: %+v", c)
		}
		if c := checkNamed(t, rep, "s3:GetObject"); c.Status != doctor.OK || c.Resource != "arn:aws:s3:::"+bucket+"/rabbitmq/*" {
			t.Errorf("s3:GetObject: %+v", c)
		}
		if c := checkNamed(t, rep, "rabbitmq queue"); c.Status != doctor.OK {
			t.Errorf("queue: %+v", c)
		}
		for _, c := range rep.Checks {
			if strings.HasPrefix(c.Name, "sqs:") || strings.HasPrefix(c.Name, "queue ") {
				t.Errorf("an SQS check ran for a RabbitMQ queue: %+v", c)
			}
		}
	})
}

// rabbitUser creates a RabbitMQ user with tags and read pattern on the
// default vhost (write ".*", configure none) through the management API,
// deleted when the test ends.
func rabbitUser(t *testing.T, env testenv.RabbitMQ, name, password, tags, read string) {
	t.Helper()
	call := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, strings.TrimSuffix(env.ManagementURL, "/")+"/api/"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(env.Username, env.Password)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 && method != http.MethodDelete {
			t.Fatalf("%s %s: %s", method, path, resp.Status)
		}
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	call(http.MethodPut, "users/"+url.PathEscape(name), js(map[string]string{"password": password, "tags": tags}))
	t.Cleanup(func() { call(http.MethodDelete, "users/"+url.PathEscape(name), "") })
	call(http.MethodPut, "permissions/%2F/"+url.PathEscape(name), js(map[string]string{"configure": "", "write": ".*", "read": read}))
}

// kafkaTopic creates a topic on brokers.
func kafkaTopic(t *testing.T, brokers, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(t.Context(), partitions, 1, configs, name); err != nil || r.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, r.Err)
	}
}

// TestDoctorKafka: doctor kafka://… on kfake — a topic passes (bootstrap,
// metadata, group, commit permission from the authorized operations), a
// short retention warns, a missing topic, an unreachable port and MSK IAM
// without TLS or without AWS credentials fail with the fix (exit 3).
func TestDoctorKafka(t *testing.T) {
	brokers := testenv.RequireKafka(t)
	prefix := strings.ToLower(testenv.UniqueName(t, "kdoc"))
	dlt, short := prefix+"-orders-dlt", prefix+"-short-dlt"
	kafkaTopic(t, brokers, dlt, 3, nil)
	hour := "3600000"
	kafkaTopic(t, brokers, short, 1, map[string]*string{"retention.ms": &hour})
	state := t.TempDir()

	t.Run("ok", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "kafka://"+brokers+"/"+dlt, "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		rep := brokerDoctorReport(t, r)
		noAWSChecks(t, rep)
		for _, name := range []string{"kafka tls", "kafka bootstrap", "kafka sasl", "kafka topic", "kafka group", "kafka group permissions"} {
			if c := checkNamed(t, rep, name); c.Status != doctor.OK {
				t.Errorf("%s: %+v, want ok", name, c)
			}
		}
		if c := checkNamed(t, rep, "kafka bootstrap"); !strings.Contains(c.Detail, "answered: "+strings.Split(brokers, ",")[0]) {
			t.Errorf("bootstrap does not say which brokers answered: %+v", c)
		}
		if c := checkNamed(t, rep, "kafka topic"); !strings.Contains(c.Detail, "3 partition(s)") || !strings.Contains(c.Detail, "replication factor 1") {
			t.Errorf("topic: %+v", c)
		}
		c := checkNamed(t, rep, "kafka topic config")
		if !strings.Contains(c.Detail, "cleanup.policy delete") || !strings.Contains(c.Detail, "retention.ms") || strings.Contains(c.Detail, "short for a DLT") {
			t.Errorf("topic config: %+v", c)
		}
		if c := checkNamed(t, rep, "kafka group"); !strings.Contains(c.Detail, kafka.DefaultGroup(dlt)) {
			t.Errorf("group check names no group %s: %+v", kafka.DefaultGroup(dlt), c)
		}
		if c := checkNamed(t, rep, "kafka group permissions"); !strings.Contains(c.Detail, "Read on group") {
			t.Errorf("group permissions: %+v", c)
		}
	})

	t.Run("a cluster, no topic", func(t *testing.T) {
		// The first thing to run in a new shell: can it reach the
		// cluster at all? kafka://HOST:PORT with or without the slash.
		for _, ref := range []string{"kafka://" + brokers, "kafka://" + brokers + "/"} {
			r := clitest.Run(t, testenv.Env{}, "", "doctor", ref, "--state-dir", state, "-o", "json")
			if r.Code != 0 {
				t.Fatalf("doctor %s: exit %d, want 0:\n%s\n%s", ref, r.Code, r.Stdout, r.Stderr)
			}
			rep := brokerDoctorReport(t, r)
			noAWSChecks(t, rep)
			for _, name := range []string{"kafka tls", "kafka bootstrap", "kafka sasl"} {
				if c := checkNamed(t, rep, name); c.Status != doctor.OK {
					t.Errorf("%s: %+v, want ok", name, c)
				}
			}
			c := checkNamed(t, rep, "kafka topic")
			if c.Status != doctor.NotChecked || !strings.Contains(c.Detail, "no topic") || !strings.Contains(c.Fix, "dlqctl doctor kafka://"+brokers+"/TOPIC") {
				t.Errorf("topic check of a cluster reference: %+v", c)
			}
			for _, name := range []string{"kafka topic config", "kafka group", "kafka group permissions"} {
				if c := checkNamed(t, rep, name); c.Status != doctor.NotChecked {
					t.Errorf("%s: %+v, want not-checked", name, c)
				}
			}
			for _, c := range rep.Checks {
				if strings.HasPrefix(c.Resource, "kafka://") && c.Resource != "kafka://"+brokers {
					t.Errorf("check %q names resource %q, want the cluster kafka://%s", c.Name, c.Resource, brokers)
				}
			}
		}
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "kafka://127.0.0.1:1", "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("doctor of an unreachable cluster: exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if c := checkNamed(t, brokerDoctorReport(t, r), "kafka bootstrap"); c.Status != doctor.Fail {
			t.Errorf("bootstrap of an unreachable cluster: %+v", c)
		}
	})

	t.Run("short retention", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "kafka://"+brokers+"/"+short, "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d (a warning does not fail):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "kafka topic config")
		if c.Status != doctor.Warn || !strings.Contains(c.Detail, "short for a DLT") || !strings.Contains(c.Fix, "retention.ms=") {
			t.Errorf("topic config: %+v", c)
		}
	})

	t.Run("missing topic", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "kafka://"+brokers+"/"+prefix+"-nope", "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "kafka topic")
		if c.Status != doctor.Fail || !strings.Contains(c.Detail, "does not exist") || !strings.Contains(c.Fix, "dlqctl queues kafka://") {
			t.Errorf("topic check: %+v", c)
		}
	})

	t.Run("unreachable port", func(t *testing.T) {
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "kafka://127.0.0.1:1/"+dlt, "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		rep := brokerDoctorReport(t, r)
		c := checkNamed(t, rep, "kafka bootstrap")
		if c.Status != doctor.Fail || !strings.Contains(c.Detail, "127.0.0.1:1") || !strings.Contains(c.Fix, "HOST:PORT") {
			t.Errorf("bootstrap check: %+v", c)
		}
		if c := checkNamed(t, rep, "kafka topic"); c.Status != doctor.NotChecked {
			t.Errorf("topic check with no broker: %+v", c)
		}
	})

	t.Run("with an archive bucket", func(t *testing.T) {
		awsEnv := testenv.Require(t)
		bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "dockf"), "_", "-"))
		if _, err := awsEnv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		r := clitest.Run(t, awsEnv, "", "doctor", "kafka://"+brokers+"/"+dlt, "--archive", "s3://"+bucket+"/kafka/", "--state-dir", state, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		rep := brokerDoctorReport(t, r)
		if c := checkNamed(t, rep, "s3:ListBucket"); c.Status != doctor.OK || c.Resource != "arn:aws:s3:::"+bucket {
			t.Errorf("s3:ListBucket: %+v", c)
		}
		if c := checkNamed(t, rep, "kafka topic"); c.Status != doctor.OK {
			t.Errorf("topic: %+v", c)
		}
		if rep.Region != awsEnv.Region {
			t.Errorf("report region %q, want %q (AWS was checked for the bucket)", rep.Region, awsEnv.Region)
		}
	})

	t.Run("MSK IAM without TLS", func(t *testing.T) {
		awsEnv := testenv.Require(t)
		r := clitest.Run(t, awsEnv, "", "doctor", "kafka://"+brokers+"/"+dlt, "--kafka-sasl", "AWS_MSK_IAM", "--kafka-tls=false", "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "kafka tls")
		if c.Status != doctor.Fail || c.Fix != "drop --kafka-tls=false: AWS_MSK_IAM uses TLS by itself" {
			t.Errorf("tls check: %+v", c)
		}
	})

	t.Run("MSK IAM without AWS credentials", func(t *testing.T) {
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
			"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials", "AWS_EC2_METADATA_DISABLED": "true",
			"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_REGION": "us-east-1"} {
			t.Setenv(k, v)
		}
		r := clitest.Run(t, testenv.Env{}, "", "doctor", "kafka://"+brokers+"/"+dlt, "--kafka-sasl", "AWS_MSK_IAM", "--kafka-tls", "--state-dir", state, "-o", "json")
		if r.Code != 3 {
			t.Fatalf("exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		c := checkNamed(t, brokerDoctorReport(t, r), "kafka sasl")
		if c.Status != doctor.Fail || !strings.Contains(c.Detail, "needs AWS credentials") || !strings.Contains(c.Fix, "AWS_PROFILE") {
			t.Errorf("sasl check: %+v", c)
		}
	})
}

// TestDoctorKafkaSASL: a private kfake with SCRAM: the right password
// passes, a wrong one is a failed login with the fix, never printed.
func TestDoctorKafkaSASL(t *testing.T) {
	testenv.RequireKafka(t)
	const right, wrong = "kafka-right-secret-1", "kafka-wrong-secret-2"
	brokers := testenv.StartKfake(t, "--sasl", "SCRAM-SHA-256:dlqadmin:"+right)
	topic := strings.ToLower(testenv.UniqueName(t, "ksasl"))
	state := t.TempDir()
	args := []string{"doctor", "kafka://dlqadmin@" + brokers + "/" + topic, "--kafka-sasl", "SCRAM-SHA-256", "--state-dir", state, "-o", "json"}

	t.Setenv(kafka.EnvPassword, wrong)
	r := clitest.Run(t, testenv.Env{}, "", args...)
	if r.Code != 3 {
		t.Fatalf("wrong password: exit %d, want 3:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, wrong) {
		t.Errorf("the password is in the output:\n%s\n%s", r.Stdout, r.Stderr)
	}
	c := checkNamed(t, brokerDoctorReport(t, r), "kafka sasl")
	if c.Status != doctor.Fail || !strings.Contains(c.Detail, "refused the SCRAM-SHA-256 login") || !strings.Contains(c.Fix, kafka.EnvPassword) {
		t.Errorf("sasl check: %+v", c)
	}

	t.Setenv(kafka.EnvPassword, right)
	r = clitest.Run(t, testenv.Env{}, "", args...)
	if strings.Contains(r.Stdout+r.Stderr, right) {
		t.Errorf("the password is in the output:\n%s\n%s", r.Stdout, r.Stderr)
	}
	rep := brokerDoctorReport(t, r)
	if c := checkNamed(t, rep, "kafka sasl"); c.Status != doctor.OK || !strings.Contains(c.Detail, "SCRAM-SHA-256") {
		t.Errorf("sasl check with the right password: %+v", c)
	}
	// The topic does not exist on the private cluster: that is what fails.
	if c := checkNamed(t, rep, "kafka topic"); c.Status != doctor.Fail || r.Code != 3 {
		t.Errorf("exit %d, topic check %+v", r.Code, c)
	}
}
