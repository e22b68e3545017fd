package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// TestAMQPArchiveDeleteKill9AndResume archives a RabbitMQ DLQ to S3 with
// --delete, kills the process mid-run, runs it again, and checks every
// message is in a verified part once the DLQ is empty (a killed run's
// parts written before the kill are kept; what it held returned to the
// queue and was archived by the second run).
func TestAMQPArchiveDeleteKill9AndResume(t *testing.T) {
	const n = 2000
	senv := testenv.Require(t)
	o := amqpseed.Options{Prefix: clitest.RabbitPrefix(t)}
	env, names := clitest.SeedRabbit(t, o)
	{
		ref, _ := amqp.ParseVHostRef(env.URL, nil)
		conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := amqpseed.Bulk(context.Background(), conn, o.Prefix, n); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "ra"), "_", "-"))
	if _, err := senv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	args := []string{"archive", env.QueueRef(names.DLQ), "--to", "s3://" + bucket + "/dlq", "--delete", "--part-records", "100", "--rate", "800", "--yes", "-o", "json"}
	run := func() *exec.Cmd {
		cmd := exec.Command(testenv.BuildBinary(t), args...)
		cmd.Env = append(senv.Environ(), testenv.EnvAMQPManagementURL+"="+env.ManagementURL)
		return cmd
	}
	victim := run()
	var verr bytes.Buffer
	victim.Stderr = &verr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for clitest.ReadyOf(t, env, names.DLQ) > n*2/3 {
		if time.Now().After(deadline) {
			t.Fatalf("the archive made no progress: %s", verr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	// The broker returns what the killed process held as it notices the
	// connection is gone: wait until nothing is unacknowledged.
	clitest.WaitNoUnacked(t, env, names.DLQ)
	second := run()
	var sout, serr bytes.Buffer
	second.Stdout, second.Stderr = &sout, &serr
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("second run: %v\n%s\n%s", err, sout.String(), serr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = second.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("second run did not finish:\n%s\n%s", sout.String(), serr.String())
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("%d messages left in the DLQ", left)
	}
	// Every message is in the archive: read it all back.
	res := clitest.Run(t, senv, "", "sample", "--from", "s3://"+bucket+"/dlq/", "-n", "100000", "-o", "ndjson")
	if res.Code != 0 {
		t.Fatalf("reading the archive: %d %s", res.Code, res.Stderr)
	}
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var rec struct {
			ID string `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		got[rec.ID]++
	}
	dups := 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-bulk-%d", o.Prefix, i)
		switch c := got[id]; {
		case c == 0:
			t.Errorf("%s not archived", id)
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("kill -9 mid-archive of %d: %d records read back, %d archived twice (in a part verified by the killed run but not yet acknowledged)", n, len(got), dups)
	if dups > 2*1000 {
		t.Errorf("%d duplicates", dups)
	}
	// Restore the archive to the orders queue, run by run as the archive
	// lists them (the killed run left a checkpoint manifest when it had
	// verified a part before the kill): each message once, with the
	// redrive marker; a second restore is refused.
	res = clitest.Run(t, senv, "", "archive", "verify", "s3://"+bucket+"/dlq/", "-o", "json")
	if res.Code != 0 {
		t.Fatalf("archive verify: exit %d %s", res.Code, res.Stderr)
	}
	var verified struct {
		Manifest string `json:"manifest"`
		Runs     []struct {
			Manifest string `json:"manifest"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &verified); err != nil {
		t.Fatalf("archive verify -o json: %v\n%s", err, res.Stdout)
	}
	manifests := []string{verified.Manifest}
	if len(verified.Runs) > 0 {
		manifests = manifests[:0]
		for _, r := range verified.Runs {
			manifests = append(manifests, r.Manifest)
		}
	}
	for _, m := range manifests {
		res = clitest.Run(t, senv, "", "restore", m, "--to", env.QueueRef(names.Orders), "--yes", "-o", "json")
		if res.Code != 0 {
			t.Fatalf("restore %s: exit %d %s", m, res.Code, res.Stderr)
		}
	}
	back := clitest.DrainIDs(t, env, names.Orders)
	if len(back) != n {
		t.Fatalf("restored %d distinct messages, want %d", len(back), n)
	}
	for id, c := range back {
		if c != 1+got[id]-1 && c != 1 {
			t.Errorf("%s restored %d times", id, c)
		}
	}
	res = clitest.Run(t, senv, "", "restore", manifests[0], "--to", env.QueueRef(names.Orders), "--yes")
	if res.Code != 2 || !strings.Contains(res.Stderr, "already restored") {
		t.Fatalf("second restore: exit %d %s", res.Code, res.Stderr)
	}
}
