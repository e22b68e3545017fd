package redrive

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestKafkaRedriveKilledTwiceInARowThenRerunReplaysEachOnce: a Kafka
// redrive killed with -9 twice in a row — the second run killed soon after
// it started, while the first run's dead member may still hold partitions
// — then run again with the same --state-dir: the re-run waits for the
// dead runs' group sessions to end (and says so on stderr), takes their
// partitions and finishes: exit 0, nothing pending, and every dead letter
// replayed exactly once for a read_committed consumer of the destination
// (counted by the marker's original id).
func TestKafkaRedriveKilledTwiceInARowThenRerunReplaysEachOnce(t *testing.T) {
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 3000, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	state := t.TempDir()
	args := []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--exactly-once", "--rate", "400", "--yes", "-o", "json", "--state-dir", state}
	bin := testenv.BuildBinary(t)
	var stderrs []string
	for round := 0; round < 2; round++ {
		before := len(clitest.CopiesIn(t, brokers, pay))
		cmd := exec.Command(bin, args...)
		cmd.Env = os.Environ()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Round 0 is killed once a quarter is replayed; round 1 as soon as
		// it replayed anything (not on a clock: wait for the copies).
		deadline := time.Now().Add(90 * time.Second)
		for {
			n := len(clitest.CopiesIn(t, brokers, pay))
			if (round == 0 && n > total/4) || (round == 1 && n > before) {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("round %d: no progress: %s", round, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		stderrs = append(stderrs, stderr.String())
	}
	// The killed runs left their member ids in the state dir's member
	// ledger; while the group still lists one, the re-run must say it
	// waits for it.
	files, _ := filepath.Glob(filepath.Join(state, "kafka-members", "*", "*.json"))
	if len(files) == 0 {
		t.Fatalf("the killed runs left no member ledger in %s", state)
	}
	members := map[string]bool{}
	for _, f := range files {
		var rec struct {
			MemberID string `json:"member_id"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &rec) == nil {
			members[rec.MemberID] = true
		}
	}
	listed := false
	if gs, err := adm.DescribeGroups(t.Context(), kafka.DefaultGroup(payDLT)); err == nil {
		for _, m := range gs[kafka.DefaultGroup(payDLT)].Members {
			listed = listed || members[m.MemberID]
		}
	}
	r := clitest.Run(t, testenv.Env{}, "", args...)
	if listed && !strings.Contains(r.Stderr, "killed earlier in this state dir") {
		t.Errorf("a killed run's member was still in the group, but the re-run did not say it waits for it:\n%s", r.Stderr)
	}
	if r.Code != 0 {
		t.Fatalf("re-run after two kill -9: exit %d\n%s\nkilled runs said:\n%s", r.Code, r.Stderr, strings.Join(stderrs, "\n---\n"))
	}
	var rep cmd.RedriveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	copies := clitest.CopiesIn(t, brokers, pay) // read_committed
	if len(copies) != total || pendingAfter(rep) != 0 {
		t.Fatalf("after two kill -9 and a re-run: %d of %d dead letters replayed, %d pending\n%s", len(copies), total, pendingAfter(rep), r.Stderr)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s replayed %d times after two kill -9 and a re-run", id, n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(state, "kafka-members", "*", "*.json")); len(left) != 0 {
		t.Errorf("the member ledger still lists %d member(s) after a clean run: %v", len(left), left)
	}
	t.Logf("member still listed at the re-run: %v; re-run said:\n%s", listed, r.Stderr)
}
