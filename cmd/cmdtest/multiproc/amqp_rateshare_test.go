package multiproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
)

// sharedRun is one process of a shared run (--rate-share I/N).
type sharedRun struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	code     int
}

// runShared starts n dlqctl processes at once, process i (from 1) with
// args(i), and waits for all of them.
func runShared(t *testing.T, environ []string, n int, args func(i int) []string) []*sharedRun {
	t.Helper()
	bin := testenv.BuildBinary(t)
	runs := make([]*sharedRun, n)
	for i := range runs {
		r := &sharedRun{}
		r.cmd = exec.Command(bin, args(i+1)...)
		r.cmd.Env = environ
		r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	for _, r := range runs {
		_ = r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode()
	}
	return runs
}

// TestAMQPRateShareTwoProcesses: two processes share one RabbitMQ DLQ's
// redrive (--rate-share 1/2 and 2/2) as competing consumers: each message
// reaches its source exactly once, both runs say completed, and the work
// was split between them.
func TestAMQPRateShareTwoProcesses(t *testing.T) {
	const n = 1200
	env, names, prefix := clitest.BulkRabbit(t, n)
	// A small prefetch: a process takes no more than it works on, so the
	// peers share the queue instead of one holding it all.
	runs := runShared(t, append(os.Environ(), testenv.EnvAMQPManagementURL+"="+env.ManagementURL), 2, func(i int) []string {
		return []string{"redrive", env.QueueRef(names.DLQ), "--to", "source", "--rate", "800",
			"--rate-share", fmt.Sprintf("%d/2", i), "--amqp-prefetch", "50", "--yes", "-o", "json",
			"--state-dir", t.TempDir()}
	})
	total := 0
	for i, r := range runs {
		var sum clitest.AMQPRunSummary
		if jerr := json.Unmarshal(r.out.Bytes(), &sum); jerr != nil || r.code != 0 {
			t.Fatalf("process %d/2: exit %d %v\n%s\n%s", i+1, r.code, jerr, r.out.String(), r.err.String())
		}
		if sum.Status != "completed" {
			t.Errorf("process %d/2 status %q: %s", i+1, sum.Status, r.out.String())
		}
		if sum.Moved == 0 {
			t.Errorf("process %d/2 moved nothing: the peers did not share the queue", i+1)
		}
		t.Logf("process %d/2 moved %d", i+1, sum.Moved)
		total += sum.Moved
	}
	if total != n {
		t.Errorf("the two processes moved %d, want %d", total, n)
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("%d messages left in the DLQ", left)
	}
	got := clitest.DrainIDs(t, env, names.Orders)
	for i := 0; i < n; i++ {
		if id := fmt.Sprintf("%s-bulk-%d", prefix, i); got[id] != 1 {
			t.Errorf("%s reached the source %d times", id, got[id])
		}
	}
}

// archiveSummaryJSON is what the shared-archive tests read of archive -o json.
type archiveSummaryJSON struct {
	Status string `json:"status"`
	Stats  struct {
		Archived int `json:"archived"`
		Deleted  int `json:"deleted"`
	} `json:"stats"`
	Share           string `json:"rate_share"`
	InFlightAtPeers int    `json:"in_flight_at_peers"`
	Error           string `json:"error"`
}

// TestAMQPArchiveRateShareTwoProcesses: two archive --delete processes
// share one RabbitMQ DLQ (--rate-share 1/2 and 2/2) as competing
// consumers. What one process's peer holds when it ends is the peer's to
// archive, not "held by other consumers": both say completed (exit 0),
// both archived some, and together they archived every message exactly
// once and left the DLQ empty.
func TestAMQPArchiveRateShareTwoProcesses(t *testing.T) {
	const n = 1200
	senv := testenv.Require(t)
	env, names, prefix := clitest.BulkRabbit(t, n)
	bucket := clitest.Bucket(t, senv, "rs")
	// Process 2 is slow (3 messages/s): when process 1 finds the queue
	// empty, process 2 still holds most of its prefetch — what a peer holds
	// at the end of the other's run.
	rates := []string{"800", "6"}
	runs := runShared(t, append(senv.Environ(), testenv.EnvAMQPManagementURL+"="+env.ManagementURL), 2, func(i int) []string {
		return []string{"archive", env.QueueRef(names.DLQ), "--to", "s3://" + bucket + "/dlq", "--delete",
			"--rate", rates[i-1], "--rate-share", fmt.Sprintf("%d/2", i), "--amqp-prefetch", "50", "--yes", "-o", "json"}
	})
	archived := 0
	for i, r := range runs {
		var sum archiveSummaryJSON
		if jerr := json.Unmarshal(r.out.Bytes(), &sum); jerr != nil || r.code != 0 || sum.Status != "completed" {
			t.Fatalf("process %d/2: exit %d, status %q (%v)\n%s\n%s", i+1, r.code, sum.Status, jerr, r.out.String(), r.err.String())
		}
		if sum.Stats.Archived == 0 || sum.Stats.Deleted != sum.Stats.Archived {
			t.Errorf("process %d/2 archived %d and deleted %d: the peers did not share the queue", i+1, sum.Stats.Archived, sum.Stats.Deleted)
		}
		if sum.Share != fmt.Sprintf("%d/2", i+1) {
			t.Errorf("process %d/2: the summary names share %q", i+1, sum.Share)
		}
		t.Logf("process %d/2 archived %d (%d in flight at its peer when it ended)", i+1, sum.Stats.Archived, sum.InFlightAtPeers)
		archived += sum.Stats.Archived
	}
	if archived != n {
		t.Errorf("the two processes archived %d, want %d", archived, n)
	}
	var first archiveSummaryJSON
	_ = json.Unmarshal(runs[0].out.Bytes(), &first)
	if first.InFlightAtPeers == 0 {
		t.Errorf("process 1/2 ended with nothing in flight at its slow peer: the test did not exercise a peer holding messages\n%s", runs[0].out.String())
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("%d messages left in the DLQ", left)
	}
	got := clitest.ArchivedIDs(t, senv, "s3://"+bucket+"/dlq/")
	for i := 0; i < n; i++ {
		if id := fmt.Sprintf("%s-bulk-%d", prefix, i); got[id] != 1 {
			t.Errorf("%s archived %d times", id, got[id])
		}
	}
	if len(got) != n {
		t.Errorf("%d distinct messages in the archive, want %d", len(got), n)
	}
}

// TestAMQPRateShareForeignConsumerIsPartial: a consumer that is not a
// process of the shared run (another application) holds some of the DLQ's
// messages unacknowledged while two archive --delete processes and then
// two redrive processes share the DLQ. The peers' holdings are theirs, but
// the foreign consumer's are nobody's in the run: every process ends
// partial (exit 4) and names how many the other consumer holds.
func TestAMQPRateShareForeignConsumerIsPartial(t *testing.T) {
	const n, held = 600, 7
	senv := testenv.Require(t)
	env, names, _ := clitest.BulkRabbit(t, n)
	ch := clitest.OpenTestChannel(t, env)
	if err := ch.Qos(held, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(names.DLQ, "other-application", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < held; i++ {
		select {
		case <-ds:
		case <-time.After(10 * time.Second):
			t.Fatal("the other consumer got no delivery")
		}
	}
	environ := append(senv.Environ(), testenv.EnvAMQPManagementURL+"="+env.ManagementURL)
	want := fmt.Sprintf("%d message(s) are held unacknowledged by other consumers", held)
	bucket := clitest.Bucket(t, senv, "rf")
	runs := runShared(t, environ, 2, func(i int) []string {
		return []string{"archive", env.QueueRef(names.DLQ), "--to", "s3://" + bucket + "/dlq", "--delete",
			"--rate", "800", "--rate-share", fmt.Sprintf("%d/2", i), "--amqp-prefetch", "50", "--yes", "-o", "json"}
	})
	archived := 0
	for i, r := range runs {
		var sum archiveSummaryJSON
		_ = json.Unmarshal(r.out.Bytes(), &sum)
		all := r.out.String() + r.err.String()
		if r.code != 4 || sum.Status != "partial" || !strings.Contains(all, want) {
			t.Errorf("archive process %d/2 with %d held by another application: exit %d, status %q\n%s", i+1, held, r.code, sum.Status, all)
		}
		archived += sum.Stats.Archived
	}
	if archived != n-held {
		t.Errorf("the two processes archived %d, want %d (all but the %d held elsewhere)", archived, n-held, held)
	}
	if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
		t.Fatalf("archive left %d ready", left)
	}

	// The same with redrive: the DLQ refilled, the other application still
	// holding its 7.
	ref, _ := amqp.ParseVHostRef(env.URL, nil)
	conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := amqpseed.Bulk(context.Background(), conn, strings.TrimSuffix(names.DLQ, ".dlq"), n); err != nil {
		t.Fatal(err)
	}
	runs = runShared(t, environ, 2, func(i int) []string {
		return []string{"redrive", env.QueueRef(names.DLQ), "--to", "source", "--rate", "800",
			"--rate-share", fmt.Sprintf("%d/2", i), "--amqp-prefetch", "50", "--yes", "-o", "json",
			"--state-dir", t.TempDir()}
	})
	moved := 0
	for i, r := range runs {
		var sum clitest.AMQPRunSummary
		_ = json.Unmarshal(r.out.Bytes(), &sum)
		all := r.out.String() + r.err.String()
		if r.code != 4 || sum.Status == "completed" || !strings.Contains(all, want) {
			t.Errorf("redrive process %d/2 with %d held by another application: exit %d, status %q\n%s", i+1, held, r.code, sum.Status, all)
		}
		moved += sum.Moved
	}
	if moved != n {
		t.Errorf("the two processes moved %d, want %d", moved, n)
	}
}
