package multiproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestKafkaArchiveSeveralProcessesOneKilledNeverCompleteWithPending: two
// archive --delete processes share a dead-letter topic's partitions through
// the group; one is killed with -9 mid-archive. The survivor gets the dead
// member's partitions when its session times out — partitions change hands
// while records sit in parts not yet verified. Whatever the survivor says,
// it is true: exit 0 ("complete") only when the group has nothing pending,
// otherwise exit 4 with a sentence naming what is left. A resumed run then
// finishes: nothing pending, every dead letter in the archive.
func TestKafkaArchiveSeveralProcessesOneKilledNeverCompleteWithPending(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 3000, Partitions: 3})
	_, _, _, _, _, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	ref := "kafka://" + brokers + "/" + payDLT
	dest := "s3://" + bucket + "/inc"
	args := []string{"archive", ref, "--to", dest, "--delete", "--part-records", "100", "--rate", "300", "--yes", "-o", "json"}
	pending := func() int64 { return dlqctlPending(t, adm, payDLT) }
	bin := testenv.BuildBinary(t)
	start := func() (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		c := exec.Command(bin, args...)
		c.Env = env.Environ()
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c, &out, &errOut
	}
	victim, _, _ := start()
	survivor, sOut, sErr := start()
	deadline := time.Now().Add(90 * time.Second)
	for pending() > int64(total*2/3) {
		if time.Now().After(deadline) {
			_ = victim.Process.Kill()
			_ = survivor.Process.Kill()
			t.Fatal("the archive made no progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = victim.Process.Signal(syscall.SIGKILL)
	_ = victim.Wait()

	werr := survivor.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	left := pending()
	switch code {
	case 0:
		if left != 0 {
			t.Fatalf("the surviving process exited 0 (complete) with %d record(s) pending\nstdout: %s\nstderr: %s", left, sOut, sErr)
		}
		var sum struct {
			Status string `json:"status"`
			Run    struct {
				Complete bool `json:"complete"`
			} `json:"run"`
		}
		if err := json.Unmarshal(sOut.Bytes(), &sum); err != nil || !sum.Run.Complete || sum.Status != "completed" {
			t.Fatalf("exit 0 without a complete summary: %s (%v)", sOut, err)
		}
	case 4:
		if !strings.Contains(sErr.String(), "run the same command again") {
			t.Fatalf("partial run (exit 4) without a sentence saying what is left: %s", sErr)
		}
		t.Logf("the survivor ended partial with %d pending: %s", left, strings.TrimSpace(sErr.String()))
	default:
		t.Fatalf("surviving process: exit %d\nstderr: %s", code, sErr)
	}

	r := clitest.Run(t, env, "", args...)
	if r.Code != 0 {
		t.Fatalf("resumed archive: exit %d: %s", r.Code, r.Stderr)
	}
	if p := pending(); p != 0 {
		t.Fatalf("%d pending after the resumed archive said complete: %s", p, r.Stdout)
	}
	got := clitest.ArchivedIDs(t, env, dest+"/queue="+payDLT+"/")
	if len(got) != total {
		t.Fatalf("%d distinct dead letters archived, want %d", len(got), total)
	}
	dups := 0
	for _, n := range got {
		dups += n - 1
	}
	t.Logf("%d archived by two processes (one killed) and a resume; %d archived twice; survivor exit %d", total, dups, code)
}
