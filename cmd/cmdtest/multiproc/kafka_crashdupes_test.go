package multiproc

// Issue 32 on Kafka: a real dlqctl child process redriving a dead-letter
// topic is killed with SIGKILL at a random moment, then the same command
// runs again (same group, same --state-dir). The destination's copies are
// counted by their marker's original id: nothing is lost, every record
// that arrived twice is among the ids the re-run reports
// (maybe_twice_messages, cause "resent"), and the report is no blanket:
// at most the batches the killed process had in flight (the batch being
// produced and the one whose commit was under way). With --exactly-once
// (odd trials) read_committed consumers see each record once and the
// re-run says the killed run's transaction was aborted instead.

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// topicEnd sums topic's high watermarks (records produced, committed to
// a transaction or not).
func topicEnd(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// batchesIntended counts the batch lines of the intent files in state.
func batchesIntended(state string) int {
	logs, _ := filepath.Glob(filepath.Join(state, "kafka-intents", "*", "*", "*.log"))
	n := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		n += bytes.Count(b, []byte("\nb "))
	}
	return n
}

func TestKafkaKill9DuplicatesAreAllReported(t *testing.T) {
	const rate, batch = 1000, 500 // --rate 1000: batches of 500 (one worker, a batch of up to 500 or a second of the rate)
	bound := 2 * batch            // the batch being produced + the one whose commit was under way
	totalDups, totalReported, totalAborted := 0, 0, 0
	for trial := range crashTrials() {
		eos := trial%2 == 1
		brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 4000, Partitions: 3})
		_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
		total := res.DeadLetters[payDLT]
		state := t.TempDir()
		args := []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--rate", "1000", "--yes", "-o", "json", "--state-dir", state}
		if eos {
			args = append(args, "--exactly-once")
		}
		base := topicEnd(t, adm, pay)
		victim := &peerProc{state: state}
		victim.cmd = clitest.BinCmd(t, testenv.Env{}, args...)
		victim.cmd.Stdout, victim.cmd.Stderr = &victim.stdout, &victim.stderr
		if err := victim.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A random moment around a random batch's produce (where a kill
		// can duplicate: a uniformly random instant mostly lands in the
		// pacer's wait, after the previous commit): once the killed run's
		// intent file records its k-th batch (written just before that
		// batch is produced), wait 0–10 ms more.
		k := 2 + rand.IntN(max(1, total/batch-3))
		delay := time.Duration(rand.IntN(10_000)) * time.Microsecond
		deadline := time.Now().Add(3 * time.Minute)
		for batchesIntended(state) < k {
			if time.Now().After(deadline) {
				_ = victim.cmd.Process.Kill()
				_ = victim.wait()
				t.Fatalf("the redrive recorded no intent of batch %d within 3 minutes: %s", k, victim.stderr.String())
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(delay)
		killWhen(t, victim, "", func() bool { return true })
		produced := topicEnd(t, adm, pay) - base
		logs, _ := filepath.Glob(filepath.Join(state, "kafka-intents", "*", "*", "*.log"))
		if len(logs) != 1 {
			t.Fatalf("the killed run left %d intent file(s) in %s, want 1", len(logs), state)
		}

		r := clitest.Run(t, testenv.Env{}, "", args...)
		if r.Code != 0 {
			t.Fatalf("re-run after kill -9: exit %d\n%s\nkilled run said:\n%s", r.Code, r.Stderr, victim.stderr.String())
		}
		var rep cmd.RedriveSummary
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Status != "completed" {
			t.Fatalf("re-run summary %q (%v)", r.Stdout, err)
		}
		if rep.PendingAfter == nil || *rep.PendingAfter != 0 {
			t.Fatalf("pending after the re-run: %v, want 0", rep.PendingAfter)
		}
		copies := clitest.CopiesIn(t, brokers, pay) // read_committed
		if len(copies) != total {
			t.Fatalf("the destination holds copies of %d distinct dead letters, want %d (none lost)", len(copies), total)
		}
		reported := map[string]bool{}
		for _, m := range rep.MaybeTwiceMessages {
			if m.Cause != redrive.CauseResent || m.ID != m.Orig || m.Destination != pay {
				t.Errorf("reported %+v; want cause resent, orig = id, destination %s", m, pay)
			}
			reported[m.Orig] = true
		}
		if len(reported) != rep.MaybeTwiceResent || rep.MaybeTwice != rep.MaybeTwiceResent {
			t.Errorf("maybe_twice %d, maybe_twice_resent %d, %d distinct ids listed: they should agree", rep.MaybeTwice, rep.MaybeTwiceResent, len(reported))
		}
		if n := rep.MaybeTwiceResent + rep.AbortedResent; n > bound {
			t.Errorf("%d reported as produced by the killed run and again: more than the %d it could have had in flight", n, bound)
		}
		dups := 0
		for orig, c := range copies {
			if c > 1 {
				dups += c - 1
				if !reported[orig] {
					t.Errorf("%s arrived %d times and the re-run did not report it", orig, c)
				}
			}
			if c > 2 {
				t.Errorf("%s arrived %d times: one kill can double a copy at most once", orig, c)
			}
		}
		const twice = "may have been delivered twice: the process died after sending them and before recording it"
		const aborted = "the killed run's transaction was aborted, so read_committed consumers of the destination never saw the"
		if eos {
			if dups != 0 || rep.MaybeTwiceResent != 0 {
				t.Errorf("--exactly-once: %d duplicate(s) for a read_committed consumer, %d reported as maybe twice; want none", dups, rep.MaybeTwiceResent)
			}
			if said := strings.Contains(r.Stderr, aborted); said != (rep.AbortedResent > 0) {
				t.Errorf("re-run stderr says %q: %v, with %d replayed after the abort:\n%s", aborted, said, rep.AbortedResent, r.Stderr)
			}
		} else if said := strings.Contains(r.Stderr, twice); said != (rep.MaybeTwiceResent > 0) {
			t.Errorf("re-run stderr says %q: %v, with %d resent:\n%s", twice, said, rep.MaybeTwiceResent, r.Stderr)
		}
		if n := rep.MaybeTwiceResent + rep.AbortedResent; n > 0 && (len(rep.KilledRuns) != 1 || !strings.Contains(r.Stderr, "resumed run "+rep.KilledRuns[0]+": ")) {
			t.Errorf("killed_runs %v; the stderr line should name the killed run:\n%s", rep.KilledRuns, r.Stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(state, "kafka-intents", "*", "*", "*.log")); len(left) != 0 {
			t.Errorf("intent file(s) left after a clean re-run: %v", left)
		}
		if b, err := os.ReadFile(logs[0]); err == nil {
			t.Errorf("the killed run's intent file is still there after the re-run claimed it:\n%.300s", b)
		}
		t.Logf("trial %d (exactly-once %v): %d dead letters, killed %s after batch %d's intent, %d produced: %d duplicate(s) at the destination, %d reported maybe twice, %d replayed after an aborted transaction (bound %d)",
			trial, eos, total, delay.Round(time.Millisecond), k, produced, dups, rep.MaybeTwiceResent, rep.AbortedResent, bound)
		totalDups += dups
		totalReported += rep.MaybeTwiceResent
		totalAborted += rep.AbortedResent
	}
	t.Logf("%d trials: %d duplicate(s), all reported; %d reported maybe twice, %d replayed after an aborted transaction", crashTrials(), totalDups, totalReported, totalAborted)
}
