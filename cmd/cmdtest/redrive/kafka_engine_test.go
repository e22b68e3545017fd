package redrive

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// engineSummary is the run summary a redrive prints (-o json).
type engineSummary struct {
	cmd.RedriveSummary
}

// pendingAfter is what the run says its group still has pending after it
// (-1: it did not say).
func pendingAfter(s cmd.RedriveSummary) int64 {
	if s.PendingAfter == nil {
		return -1
	}
	return *s.PendingAfter
}

func runEngine(t *testing.T, args ...string) (clitest.Result, engineSummary) {
	t.Helper()
	r := clitest.Run(t, testenv.Env{}, "", args...)
	var s engineSummary
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil || s.Result == nil {
		t.Fatalf("redrive %v: exit %d, summary %v: %q\n%s", args, r.Code, err, r.Stdout, r.Stderr)
	}
	return r, s
}

// TestKafkaEngineRedriveIsAJournaledRun: through the engine a Kafka
// redrive moves every dead letter once, commits past them (nothing
// pending after), and leaves a run journal that `dlqctl runs` lists.
func TestKafkaEngineRedriveIsAJournaledRun(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 300, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	state := t.TempDir()
	r, s := runEngine(t, "redrive", "kafka://"+brokers+"/"+payDLT, "--yes", "-o", "json", "--state-dir", state)
	if r.Code != 0 || s.Status != "completed" || s.Moved != total || !s.Complete || s.PendingAfter == nil || *s.PendingAfter != 0 {
		t.Fatalf("exit %d, status %s, moved %d of %d, complete %v, pending after %v\n%s", r.Code, s.Status, s.Moved, total, s.Complete, s.PendingAfter, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "land after newer records with the same key") {
		t.Errorf("the run did not say that replayed records land after newer ones:\n%s", r.Stderr)
	}
	copies := clitest.CopiesIn(t, brokers, pay)
	if len(copies) != total {
		t.Fatalf("%d of %d dead letters replayed", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s replayed %d times", id, n)
		}
	}
	runs := clitest.Run(t, testenv.Env{}, "", "runs", "--state-dir", state)
	if runs.Code != 0 || !strings.Contains(runs.Stdout, s.RunID) || !strings.Contains(runs.Stdout, "completed") {
		t.Fatalf("dlqctl runs does not list run %s as completed: exit %d\n%s%s", s.RunID, runs.Code, runs.Stdout, runs.Stderr)
	}
	// Again: nothing is pending, nothing moves.
	r, s = runEngine(t, "redrive", "kafka://"+brokers+"/"+payDLT, "--yes", "-o", "json", "--state-dir", state)
	if r.Code != 0 || s.Moved != 0 || len(clitest.CopiesIn(t, brokers, pay)) != total {
		t.Fatalf("second run: exit %d, moved %d\n%s", r.Code, s.Moved, r.Stderr)
	}
}

// TestKafkaEngineExactlyOnceGoesThroughTheTransactionalPublisher:
// --exactly-once through the engine publishes each batch with its commit
// in one transaction: every dead letter is visible once to a
// read_committed consumer and nothing is pending.
func TestKafkaEngineExactlyOnceGoesThroughTheTransactionalPublisher(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 300, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	r, s := runEngine(t, "redrive", "kafka://"+brokers+"/"+payDLT, "--exactly-once", "--rate", "200", "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 0 || s.Moved != total || s.PendingAfter == nil || *s.PendingAfter != 0 {
		t.Fatalf("exit %d, moved %d of %d, pending after %v\n%s", r.Code, s.Moved, total, s.PendingAfter, r.Stderr)
	}
	copies := clitest.CopiesIn(t, brokers, pay) // read_committed
	if len(copies) != total {
		t.Fatalf("%d of %d dead letters visible to a read_committed consumer", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s visible %d times", id, n)
		}
	}
}

// TestKafkaEngineDestLagGuardStopsTheRun: --max-dest-lag is the engine's
// destination-lag guard over the broker's lag reader: a destination
// consumer group lagging more than allowed stops the run with exit 3,
// naming the group; what was not moved is still pending (nothing lost).
func TestKafkaEngineDestLagGuardStopsTheRun(t *testing.T) {
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 300, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	// The payments service's group, committed at the log start: it lags
	// every record of the topic.
	group := pay + "-service"
	starts, err := adm.ListStartOffsets(t.Context(), pay)
	if err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	starts.Each(func(o kadm.ListedOffset) {
		offs.Add(kadm.Offset{Topic: pay, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	if _, err := adm.CommitOffsets(t.Context(), group, offs); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, testenv.Env{}, "", "redrive", "kafka://"+brokers+"/"+payDLT, "--max-dest-lag", group+":0",
		"--guard-interval", "100ms", "--rate", "50", "--yes", "-o", "json", "--state-dir", t.TempDir())
	var s engineSummary
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil || s.Result == nil {
		t.Fatalf("exit %d: %v %q\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if r.Code != 3 || s.Guard == nil || !strings.Contains(s.Guard.Name, "max-dest-lag "+group) || !strings.Contains(s.Guard.Detail, "consumer group "+group+" lags") {
		t.Fatalf("exit %d, guard %+v; want exit 3 naming the lagging group\n%s", r.Code, s.Guard, r.Stderr)
	}
	plan, err := kafka.MakePlan(t.Context(), adm, payDLT, kafka.DefaultGroup(payDLT))
	if err != nil {
		t.Fatal(err)
	}
	copies := len(clitest.CopiesIn(t, brokers, pay))
	if copies != s.Moved || int64(copies)+plan.Pending() != int64(total) {
		t.Fatalf("after the guard: %d copies, %d moved, %d pending, %d dead letters: something was lost or doubled", copies, s.Moved, plan.Pending(), total)
	}
}

// TestKafkaEngineDestLagGuardRefusesAnUnknownGroup: a --max-dest-lag
// group the destination does not know would never trip: refused before
// anything moves (exit 2, naming the group).
func TestKafkaEngineDestLagGuardRefusesAnUnknownGroup(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 30, Partitions: 1})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	r := clitest.Run(t, testenv.Env{}, "", "redrive", "kafka://"+brokers+"/"+payDLT, "--max-dest-lag", "no-such-group:10", "--yes", "--state-dir", t.TempDir())
	if r.Code != 2 || !strings.Contains(r.Stderr, "--max-dest-lag no-such-group:10") || !strings.Contains(r.Stderr, "not known") {
		t.Fatalf("exit %d, want 2 naming the unknown group\n%s", r.Code, r.Stderr)
	}
	if n := len(clitest.CopiesIn(t, brokers, pay)); n != 0 || res.DeadLetters[payDLT] == 0 {
		t.Fatalf("a refused run produced %d copies", n)
	}
}
