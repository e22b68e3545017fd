package runbooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// archiveKill kills the first `dlqctl archive … --delete --yes` of a
// runbook after it wrote a checkpoint manifest and while its final
// manifest is on its way (every S3 write takes a second), as kill_test.go
// does for the SQS runbooks. block is a string only the killed block holds.
func archiveKill(block string) *killSpec {
	return &killSpec{
		match: []string{"archive", "--delete", "--yes"},
		block: block,
		when: func(_, s3 []faultproxy.Call) bool {
			return count(s3, "PutObject", "_manifest-checkpoint-") >= 1 && count(s3, "PutObject", "/_manifest.json") >= 1
		},
		setup: func(r *recording) {
			r.s3.SetFaults(faultproxy.Fault{Action: "PutObject", Kind: faultproxy.Slow, Delay: time.Second})
		},
	}
}

// TestBrokerRunbooksSurviveAKilledProcess kills the archive of the
// RabbitMQ and Kafka runbooks (kill -9: a lost host) after it verified a
// part and acknowledged or committed its messages, before its final
// manifest, and runs the rest of the runbook as written: its re-run
// archives what is left, `archive verify` finds the killed run by its
// checkpoint, and (RabbitMQ) every run is restored; every message ends up
// where the runbook puts it.
func TestBrokerRunbooksSurviveAKilledProcess(t *testing.T) {
	testenv.BuildBinary(t)
	t.Run("rabbitmq-dlq", func(t *testing.T) {
		t.Parallel()
		env, inc, ch, names, prefix := rabbitIncident(t)
		k := archiveKill("--delete --dry-run   # messages, bytes, parts")
		runRunbookKilling(t, env, "rabbitmq-dlq.md", inc, k)
		if k.killedCommand() == "" {
			t.Fatalf("no process was killed: the test proved nothing (the kill condition was never met)")
		}
		checkRabbitMQRunbook(t, env, inc, ch, names.Orders, prefix)
		checkpointOnlyRun(t, env, inc.bucket, "rabbitmq/")
	})
	t.Run("kafka-dlt", func(t *testing.T) {
		t.Parallel()
		ki := kafkaIncident(t)
		k := archiveKill("--delete --dry-run   # records, bytes, parts")
		runRunbookKilling(t, ki.env, "kafka-dlt.md", ki.inc, k)
		if k.killedCommand() == "" {
			t.Fatalf("no process was killed: the test proved nothing (the kill condition was never met)")
		}
		ki.check(t)
		checkpointOnlyRun(t, ki.env, ki.inc.bucket, "kafka/")
	})
}

// checkpointOnlyRun fails the test unless one archive run under prefix has
// only checkpoint manifests: the killed process's run, which the kill must
// have interrupted for the test to prove the checkpoint path.
func checkpointOnlyRun(t *testing.T, env testenv.Env, bucket, prefix string) {
	t.Helper()
	out, err := env.S3(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]bool{}
	for _, o := range out.Contents {
		k := aws.ToString(o.Key)
		if i := strings.LastIndex(k, "/"); i > 0 && strings.Contains(k, "_manifest") {
			runs[k[:i]] = runs[k[:i]] || strings.HasSuffix(k, "/_manifest.json")
		}
	}
	checkpointOnly := 0
	for _, complete := range runs {
		if !complete {
			checkpointOnly++
		}
	}
	t.Logf("archive runs: %d, of them checkpoint-only (the killed process): %d", len(runs), checkpointOnly)
	if checkpointOnly == 0 {
		t.Errorf("every run has its final manifest: the kill landed after the killed process finished, so the checkpoint path was not tested")
	}
}
