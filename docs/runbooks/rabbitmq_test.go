package runbooks

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// TestRabbitMQRunbook runs rabbitmq-dlq.md against the stack's RabbitMQ
// node on a freshly dead-lettered incident (rejected, Spring recoverer,
// TTL, max-length, quorum delivery limit) and S3 on versitygw.
func TestRabbitMQRunbook(t *testing.T) {
	env, inc, ch, names, prefix := rabbitIncident(t)
	runRunbook(t, env, "rabbitmq-dlq.md", inc)
	checkRabbitMQRunbook(t, env, inc, ch, names.Orders, prefix)
}

// rabbitIncident seeds a RabbitMQ incident and the variables of the
// runbook's env block.
func rabbitIncident(t *testing.T) (testenv.Env, *incident, *amqp091.Channel, amqpseed.Names, string) {
	t.Helper()
	if _, err := os.Stat("rabbitmq-dlq.md"); err != nil {
		t.Fatal(err)
	}
	env := testenv.Require(t)
	rmq := testenv.RequireRabbitMQ(t)
	ctx := t.Context()
	ref, err := amqp.ParseVHostRef(rmq.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := amqp.Dial(ctx, ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	prefix := "rb" + time.Now().Format("150405.000000")
	o := amqpseed.Default(prefix)
	names, err := amqpseed.Seed(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// The recovery queue dead-letters into the DLQ (the restore canary
	// watches it).
	if _, err := ch.QueueDeclare(prefix+".recovery", true, false, false, false, amqp091.Table{"x-dead-letter-exchange": names.DLX}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			amqpseed.Delete(ch, prefix)
			_, _ = ch.QueueDelete(prefix+".recovery", false, false, false)
		}
	})
	bucket := testenv.BucketName(t, "rbq")
	if _, err := env.S3(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	// The runbook runs as a user with exactly the tag and permissions its
	// "Permissions" section gives (its rabbitmqctl lines, for this
	// incident's names), named in the references without a password, as
	// the runbook shows them: the password comes from DLQCTL_AMQP_PASSWORD.
	user, pass := documentedUser(t, rmq, prefix)
	userOnly := func(ref string) string {
		u, err := url.Parse(ref)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(user)
		return u.String()
	}
	inc := &incident{bucket: bucket, vars: map[string]string{
		"DLQ":                        userOnly(rmq.QueueRef(names.DLQ)),
		"VHOST":                      userOnly(rmq.URL),
		"PREFIX":                     prefix,
		"RECOVERY":                   userOnly(rmq.QueueRef(prefix + ".recovery")),
		"BUCKET":                     bucket,
		"DLQCTL_AMQP_MANAGEMENT_URL": rmq.ManagementURL,
		"DLQCTL_AMQP_PASSWORD":       pass,
		"VERIFY_FOR":                 "3s",
		"AWS_REGION":                 env.Region,
		"AWS_PROFILE":                "",
		"DLQCTL_STATE_DIR":           filepath.Join(t.TempDir(), "state"),
	}}
	if strings.Contains(inc.vars["DLQ"], pass) {
		t.Fatalf("the test's reference still carries the password")
	}
	return env, inc, ch, names, prefix
}

// checkRabbitMQRunbook: what the runbook left. Every message archived in
// step 4 (in any run, the killed one's checkpoint included) reached the
// recovery queue in step 5.
func checkRabbitMQRunbook(t *testing.T, env testenv.Env, inc *incident, ch *amqp091.Channel, orders, prefix string) {
	t.Helper()
	archived := map[string]bool{}
	for _, m := range manifests(t, env, inc.bucket, "rabbitmq/") {
		for _, id := range archivedIDs(t, env, "s3://"+inc.bucket+"/"+m) {
			archived[id] = true
		}
	}
	if len(archived) == 0 {
		t.Fatalf("nothing was archived under s3://%s/rabbitmq/", inc.bucket)
	}
	// After the runbook: the DLQ holds only what died again during the
	// replay (a TTL or length limit hit again), the recovery queue what
	// was archived.
	q, err := ch.QueueDeclarePassive(prefix+".recovery", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Messages < len(archived) {
		t.Errorf("%d messages in the recovery queue, want every one of the %d archived (a killed run's included)", q.Messages, len(archived))
	}
	src, err := ch.QueueDeclarePassive(orders, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the runbook: %d archived, %d restored to recovery, %d back on %s", len(archived), q.Messages, src.Messages, orders)
}

// documentedUser creates a RabbitMQ user with the tag and the configure /
// write / read patterns of the runbook's `rabbitmqctl set_user_tags` and
// `set_permissions` lines, the runbook's example names (orders…) replaced
// by this incident's prefix, and returns its name and password.
func documentedUser(t *testing.T, rmq testenv.RabbitMQ, prefix string) (string, string) {
	t.Helper()
	md, err := os.ReadFile("rabbitmq-dlq.md")
	if err != nil {
		t.Fatal(err)
	}
	var tags string
	var perms []string
	quoted := regexp.MustCompile(`'([^']*)'`)
	for _, line := range strings.Split(string(md), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "rabbitmqctl set_user_tags ops "); ok {
			tags = rest
		}
		if strings.HasPrefix(line, "rabbitmqctl set_permissions -p / ops ") {
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				perms = append(perms, strings.ReplaceAll(m[1], `orders\.`, regexp.QuoteMeta(prefix)+`\.`))
			}
		}
	}
	if tags == "" || len(perms) != 3 {
		t.Fatalf("rabbitmq-dlq.md has no `rabbitmqctl set_user_tags ops TAG` and `rabbitmqctl set_permissions -p / ops CONF WRITE READ` lines (found tags %q, patterns %q)", tags, perms)
	}
	user, pass := "rb-"+strings.ReplaceAll(prefix, ".", "-"), "pw-"+strings.ReplaceAll(prefix, ".", "")
	api := func(method, path string, body any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, err := http.NewRequest(method, strings.TrimSuffix(rmq.ManagementURL, "/")+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(rmq.Username, rmq.Password)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s", method, path, resp.Status)
		}
	}
	api(http.MethodPut, "/api/users/"+user, map[string]string{"password": pass, "tags": tags})
	t.Cleanup(func() { api(http.MethodDelete, "/api/users/"+user, nil) })
	api(http.MethodPut, "/api/permissions/%2F/"+user, map[string]string{"configure": perms[0], "write": perms[1], "read": perms[2]})
	t.Logf("runbook user %s: tags %s, configure %q write %q read %q", user, tags, perms[0], perms[1], perms[2])
	return user, pass
}
