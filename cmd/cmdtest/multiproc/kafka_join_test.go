package multiproc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestKafkaSecondRedriveJoiningMidRunMovesEachRecordOnce: a redrive of a
// three-partition dead-letter topic is under way when the same command is
// started a second time on the same host (same group, same state dir,
// each with its --rate-share I/2, as docs/kafka.md says to):
// the group rebalances mid-run and partitions change hands between the
// two live processes. Each dead letter reaches the destination exactly
// once: a batch whose commit runs behind the next poll (where the
// rebalance comes in) keeps its partition until it is committed, so the
// partition's new owner starts past it. Nothing is left pending, no batch
// fails because its commit raced the rebalance, nothing is reported sent
// and not committed, and each process either completes (exit 0) or ends
// partial (exit 4) saying to run again.
func TestKafkaSecondRedriveJoiningMidRunMovesEachRecordOnce(t *testing.T) {
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 1500, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	state := t.TempDir()
	args := func(i int) []string {
		return []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--rate", "400", "--rate-share", fmt.Sprintf("%d/2", i), "--yes", "-o", "json", "--state-dir", state}
	}
	pending := func() int64 { return dlqctlPending(t, adm, payDLT) }
	start := func(i int) *peerProc { return startProc(t, testenv.Env{}, i, args(i)...) }
	first := start(1)
	awaitProgress(t, first, pending, total)
	second := start(2)
	moved, partial := 0, 0
	for _, p := range []*peerProc{first, second} {
		code := p.wait()
		var s cmd.RedriveSummary
		if err := json.Unmarshal(p.stdout.Bytes(), &s); err != nil {
			t.Fatalf("process %d: exit %d, summary %v\nstdout: %s\nstderr: %s", p.i, code, err, p.stdout.String(), p.stderr.String())
		}
		if s.SentNotDeleted != 0 {
			t.Fatalf("process %d: %d record(s) sent and not committed: a partition moved before its batch's commit\nstderr: %s", p.i, s.SentNotDeleted, p.stderr.String())
		}
		switch {
		case code == 0 && s.Status == "completed":
		case code == 4 && (strings.Contains(p.stderr.String(), "run the same command again") || strings.Contains(p.stderr.String(), "re-run")):
			partial++
		default:
			t.Fatalf("process %d: exit %d, status %q, sent and not committed %d; want 0 (completed, nothing uncommitted) or 4 (partial, saying to run again)\nstderr: %s", p.i, code, s.Status, s.SentNotDeleted, p.stderr.String())
		}
		if s.Failed+s.Unknown != 0 {
			t.Fatalf("process %d: failed %d, unknown %d; a rebalance between live processes must fail nothing\nstderr: %s",
				p.i, s.Failed, s.Unknown, p.stderr.String())
		}
		t.Logf("process %d: exit %d, moved %d", p.i, code, s.Moved)
		moved += s.Moved
	}
	if partial > 0 {
		if r := clitest.Run(t, testenv.Env{}, "", args(1)...); r.Code != 0 {
			t.Fatalf("re-run after a partial end: exit %d: %s", r.Code, r.Stderr)
		} else {
			var s cmd.RedriveSummary
			_ = json.Unmarshal([]byte(r.Stdout), &s)
			moved += s.Moved
		}
	}
	if p := pending(); p != 0 {
		t.Fatalf("%d record(s) pending after both processes ended", p)
	}
	copies := clitest.CopiesIn(t, brokers, pay)
	dups := 0
	for orig, c := range copies {
		if c > 1 {
			t.Errorf("%s arrived %d times", orig, c)
		}
		dups += c - 1
	}
	if len(copies) != total || dups != 0 || moved != total {
		t.Fatalf("destination: copies of %d of %d dead letters, %d duplicate(s); the runs' summaries moved %d; want each once", len(copies), total, dups, moved)
	}
}

// dlqctlPending is what dlqctl's group (dlqctl-TOPIC) has pending on topic.
func dlqctlPending(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	p, err := kafka.MakePlan(t.Context(), adm, topic, "dlqctl-"+topic)
	if err != nil {
		t.Fatal(err)
	}
	return p.Pending()
}

// awaitProgress waits (up to 2 minutes) until process p has moved a sixth
// of total, as pending counts what is left; it kills p and fails t
// otherwise.
func awaitProgress(t *testing.T, p *peerProc, pending func() int64, total int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for pending() > int64(total*5/6) {
		if time.Now().After(deadline) {
			_ = p.cmd.Process.Kill()
			t.Fatalf("process %d made no progress: %s", p.i, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
