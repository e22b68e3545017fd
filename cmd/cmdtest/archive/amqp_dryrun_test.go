package archive

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestAMQPArchiveAndRestoreDryRun: archive --dry-run of a RabbitMQ DLQ
// plans the parts and returns every message it read; restore --dry-run
// to a RabbitMQ queue plans the sends and publishes nothing. Both print
// the same plan as for SQS.
func TestAMQPArchiveAndRestoreDryRun(t *testing.T) {
	senv := testenv.Require(t)
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, n := clitest.SeedRabbit(t, o)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "rd"), "_", "-"))
	if _, err := senv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	q := env.QueueRef(n.DLQ)
	dest := "s3://" + bucket + "/dlq"
	res := clitest.Run(t, senv, "", "archive", q, "--to", dest, "--delete", "--dry-run", "-o", "json")
	var pl cmd.ArchivePlanOutput
	if err := json.Unmarshal([]byte(res.Stdout), &pl); err != nil {
		t.Fatalf("archive --dry-run: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 0 || pl.Scanned != o.Total() || pl.Selected != o.Total() || pl.Parts != 1 || !pl.Delete || !pl.Complete {
		t.Fatalf("archive --dry-run: exit %d %s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = clitest.Run(t, senv, "", "archive", q, "--to", dest, "--dry-run", "--filter", `.system.amqp.last_death.reason == "rejected"`)
	if res.Code != 0 || !strings.Contains(res.Stdout, "would archive") || !strings.Contains(res.Stdout, "of 12 message(s) read") {
		t.Fatalf("archive --dry-run table: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	clitest.WaitNoUnacked(t, env, n.DLQ)
	if got := clitest.ReadyOf(t, env, n.DLQ); got != o.Total() {
		t.Fatalf("archive --dry-run changed the DLQ: %d ready, want %d", got, o.Total())
	}
	if out, err := senv.S3(t).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); err != nil || len(out.Contents) != 0 {
		t.Fatalf("archive --dry-run wrote to S3: %v %v", err, out)
	}

	res = clitest.Run(t, senv, "", "archive", q, "--to", dest, "--delete", "--yes", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("archive --delete: exit %d %s", res.Code, res.Stderr)
	}
	rec := n.DLQ + ".recovery"
	ch := clitest.OpenTestChannel(t, env)
	if _, err := ch.QueueDeclare(rec, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(rec, false, false, false) })
	res = clitest.Run(t, senv, "", "restore", dest+"/", "--to", env.QueueRef(rec), "--dry-run", "--rate", "4", "-o", "json")
	var rp cmd.RestorePlanOutput
	if err := json.Unmarshal([]byte(res.Stdout), &rp); err != nil {
		t.Fatalf("restore --dry-run: exit %d %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if res.Code != 0 || rp.WouldMove != o.Total() || rp.Scanned != o.Total() || rp.EstimatedSeconds <= 0 || !strings.Contains(rp.To, rec) {
		t.Fatalf("restore --dry-run: exit %d %s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	if strings.Contains(res.Stdout+res.Stderr, env.Password) {
		t.Fatal("password in output")
	}
	if got := clitest.ReadyOf(t, env, rec); got != 0 {
		t.Fatalf("restore --dry-run published %d messages", got)
	}
	// The dry run did not count as a restore: the real one runs.
	res = clitest.Run(t, senv, "", "restore", dest+"/", "--to", env.QueueRef(rec), "--yes", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("restore after the dry run: exit %d %s", res.Code, res.Stderr)
	}
	if got := clitest.ReadyOf(t, env, rec); got != o.Total() {
		t.Fatalf("restore sent %d, want %d", got, o.Total())
	}
}
