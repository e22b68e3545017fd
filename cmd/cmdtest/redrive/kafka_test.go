package redrive

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

func TestKafkaRedriveSelectionLeavesRecordsPendingAcrossRuns(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ref := "kafka://" + brokers + "/" + dlq
	total := res.DeadLetters[dlq]
	sel := `.attributes.dlq_reason.value == "VALIDATION"`

	// Dry run: nothing changes.
	r := clitest.Run(t, testenv.Env{}, "", "redrive", ref, "--filter", sel, "--dry-run", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("dry run: exit %d: %s", r.Code, r.Stderr)
	}
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Scanned != total || plan.WouldMove == 0 || plan.WouldMove >= total || plan.ByDestination[orders] == nil {
		t.Fatalf("plan %+v", plan)
	}
	if n := len(clitest.CopiesIn(t, brokers, orders)); n != 0 {
		t.Fatalf("the dry run produced %d copies", n)
	}
	// Without a selection every routable record would move, counted per
	// destination under the class the built-in rules give it (the plan
	// says so: classes_from), never "unclassified".
	r = clitest.Run(t, testenv.Env{}, "", "redrive", ref, "--dry-run", "-o", "json")
	var all cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(r.Stdout), &all); r.Code != 0 || err != nil {
		t.Fatalf("dry run without selection: exit %d: %v: %s", r.Code, err, r.Stderr)
	}
	byAll := 0
	for _, classes := range all.ByDestination {
		for class, n := range classes {
			if class == "unclassified" {
				t.Errorf("dry run without selection: %d record(s) of %v unclassified", n, classes)
			}
			byAll += n
		}
	}
	if all.Scanned != total || all.WouldMove <= plan.WouldMove || byAll != all.WouldMove || len(all.ByDestination[orders]) == 0 || all.ClassesFrom != redrive.ClassesFromBuiltin {
		t.Fatalf("dry run without selection %+v (filtered plan would move %d)", all, plan.WouldMove)
	}
	// Without --yes in a script: refused, nothing changed.
	if r := clitest.Run(t, testenv.Env{}, "", "redrive", ref); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("no --yes: exit %d: %s", r.Code, r.Stderr)
	}

	run := func(args ...string) cmd.RedriveSummary {
		t.Helper()
		r := clitest.Run(t, testenv.Env{}, "", append([]string{"redrive", ref, "--yes", "-o", "json"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("redrive %v: exit %d: %s", args, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "land after newer records with the same key") {
			t.Fatalf("redrive did not say that replayed records land after newer ones: %s", r.Stderr)
		}
		var rep cmd.RedriveSummary
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := run("--filter", sel)
	if first.Moved != plan.WouldMove || pendingAfter(first) != int64(total-plan.WouldMove) {
		t.Fatalf("first run %+v, want %d moved and the rest pending", first, plan.WouldMove)
	}
	again := run("--filter", sel)
	if again.Moved != 0 {
		t.Fatalf("the same selection again moved %d: records handled past a pending one were sent twice", again.Moved)
	}
	rest := run()
	if rest.Moved != total-plan.WouldMove || pendingAfter(rest) != 0 || !rest.Complete {
		t.Fatalf("last run %+v", rest)
	}
	copies := clitest.CopiesIn(t, brokers, orders)
	if len(copies) != total {
		t.Fatalf("%d dead letters replayed, want %d", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s replayed %d times", id, n)
		}
	}
}

func TestKafkaRedriveRefusals(t *testing.T) {
	brokers := testenv.RequireKafka(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--engine", "native", "--yes"}, "Kafka"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--max-dest-backlog", "5", "--yes"}, "--max-dest-lag"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--visibility", "1m", "--yes"}, "Kafka"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--max-dest-lag", "nogroup", "--yes"}, "GROUP:N"},
		{[]string{"redrive", "kafka://" + brokers + "/no-such-topic-dlq", "--yes"}, "does not exist"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--max-returns", "5%", "--yes"}, "--canary"},
		{[]string{"sample", "kafka://alice:s3cr3t-pw@" + brokers + "/x-dlq"}, "DLQCTL_KAFKA_PASSWORD"},
		{[]string{"sample", "kafka://" + brokers}, "topic"},
	} {
		r := clitest.Run(t, testenv.Env{}, "", tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Contains(r.Stderr+r.Stdout, "s3cr3t-pw") {
			t.Errorf("%v: exit %d, stderr %q (want exit 2 naming %q, no password)", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

func TestKafkaRedriveKilledMidRunLosesNothing(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 3000, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	args := []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--rate", "400", "--yes", "-o", "json"}
	env := os.Environ()
	for round := 0; round < 2; round++ {
		cmd := exec.Command(testenv.BuildBinary(t), args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once copies are flowing (not on a clock: wait for them).
		deadline := time.Now().Add(60 * time.Second)
		for {
			n := len(clitest.CopiesIn(t, brokers, pay))
			if n > (round+1)*total/4 {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("round %d: no progress: %s", round, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	r := clitest.Run(t, testenv.Env{}, "", args...)
	if r.Code != 0 {
		t.Fatalf("resume: exit %d: %s", r.Code, r.Stderr)
	}
	var rep cmd.RedriveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	copies := clitest.CopiesIn(t, brokers, pay)
	if len(copies) != total || pendingAfter(rep) != 0 {
		t.Fatalf("after two kill -9 and a resume: %d of %d dead letters replayed, %d pending", len(copies), total, pendingAfter(rep))
	}
	dups := 0
	for _, n := range copies {
		dups += n - 1
	}
	// Each kill can repeat at most the batch in flight (≤ 400 at --rate 400).
	if dups > 2*400 {
		t.Fatalf("%d duplicates after 2 kills, more than 2 batches", dups)
	}
	t.Logf("%d dead letters, %d duplicates after 2 kill -9", total, dups)
}

func TestKafkaRedriveExactlyOnceKilledLeavesNoDuplicateForReadCommitted(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 2000, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	args := []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--exactly-once", "--rate", "300", "--yes", "-o", "json"}
	cmd := exec.Command(testenv.BuildBinary(t), args...)
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(clitest.CopiesIn(t, brokers, pay)) < total/3 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	r := clitest.Run(t, testenv.Env{}, "", args...)
	if r.Code != 0 {
		t.Fatalf("resume: exit %d: %s", r.Code, r.Stderr)
	}
	copies := clitest.CopiesIn(t, brokers, pay) // read_committed, as the destination's consumers should read
	if len(copies) != total {
		t.Fatalf("%d of %d dead letters replayed", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s visible %d times to a read_committed consumer after kill -9 and resume", id, n)
		}
	}
}
