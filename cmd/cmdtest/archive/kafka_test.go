package archive

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

func TestKafkaArchiveDeleteCommitsPastVerifiedRecordsAndSurvivesKill9(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 3000, Partitions: 3})
	_, _, _, _, _, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	ref := "kafka://" + brokers + "/" + payDLT
	dest := "s3://" + bucket + "/inc"
	args := []string{"archive", ref, "--to", dest, "--delete", "--part-records", "200", "--rate", "600", "--yes", "-o", "json"}
	pending := func() int64 {
		p, err := kafka.MakePlan(t.Context(), adm, payDLT, "dlqctl-"+payDLT)
		if err != nil {
			t.Fatal(err)
		}
		return p.Pending()
	}
	// kill -9 once some parts are verified and committed past.
	cmd := exec.Command(testenv.BuildBinary(t), args...)
	cmd.Env = env.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for pending() > int64(total*2/3) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the archive made no progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if p := pending(); p == 0 || p == int64(total) {
		t.Fatalf("killed run left %d pending of %d: not a mid-run kill", p, total)
	}
	r := clitest.Run(t, env, "", args...)
	if r.Code != 0 {
		t.Fatalf("resumed archive: exit %d: %s", r.Code, r.Stderr)
	}
	var sum struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Manifest == "" {
		t.Fatalf("summary %s: %v", r.Stdout, err)
	}
	if v := clitest.Run(t, env, "", "archive", "verify", sum.Manifest); v.Code != 0 {
		t.Fatalf("verify: exit %d: %s", v.Code, v.Stderr)
	}
	if p := pending(); p != 0 {
		pl, _ := kafka.MakePlan(t.Context(), adm, payDLT, "dlqctl-"+payDLT)
		t.Fatalf("%d pending after the resumed archive: %+v\nsummary: %s\nstderr: %s", p, pl.Partitions, r.Stdout, r.Stderr)
	}
	got := clitest.ArchivedIDs(t, env, dest+"/queue="+payDLT+"/")
	dups := 0
	for _, n := range got {
		dups += n - 1
	}
	if len(got) != total {
		t.Fatalf("%d distinct dead letters archived across both runs, want %d", len(got), total)
	}
	t.Logf("%d archived, %d archived twice (a killed run's unverified or uncommitted part)", total, dups)

	// --delete-records: the topic now starts at the committed offsets.
	if r := clitest.Run(t, env, "", "archive", ref, "--to", dest, "--delete-records", "--yes"); r.Code != 2 {
		t.Fatalf("--delete-records without --delete: exit %d", r.Code)
	}
	r = clitest.Run(t, env, "", "archive", ref, "--to", dest, "--delete", "--delete-records", "--yes")
	if r.Code != 0 {
		t.Fatalf("--delete-records: exit %d: %s", r.Code, r.Stderr)
	}
	starts, err := adm.ListStartOffsets(t.Context(), payDLT)
	if err != nil {
		t.Fatal(err)
	}
	ends, _ := adm.ListEndOffsets(t.Context(), payDLT)
	starts.Each(func(o kadm.ListedOffset) {
		e, _ := ends.Lookup(payDLT, o.Partition)
		if o.Offset != e.Offset {
			t.Errorf("partition %d starts at %d after --delete-records, want its end %d", o.Partition, o.Offset, e.Offset)
		}
	})
}

func TestKafkaArchiveThenRestoreToATopic(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, _, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	recovery := prefix + "-payments-recovery"
	if r, err := adm.CreateTopic(t.Context(), 3, 1, nil, recovery); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	r := clitest.Run(t, env, "", "archive", "kafka://"+brokers+"/"+payDLT, "--to", "s3://"+bucket+"/k", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("archive: exit %d: %s", r.Code, r.Stderr)
	}
	var sum struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Manifest == "" {
		t.Fatalf("archive summary %s: %v", r.Stdout, err)
	}
	// Without --delete nothing was committed.
	if p, _ := kafka.MakePlan(t.Context(), adm, payDLT, "dlqctl-"+payDLT); p.Pending() != int64(res.DeadLetters[payDLT]) {
		t.Fatalf("archive without --delete left %d pending, want all %d", p.Pending(), res.DeadLetters[payDLT])
	}
	state := t.TempDir()
	to := "kafka://" + brokers + "/" + recovery
	if r := clitest.Run(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", to, "--dry-run", "-o", "json"); r.Code != 0 {
		t.Fatalf("restore --dry-run: exit %d: %s", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", to, "--yes", "-o", "json"); r.Code != 0 {
		t.Fatalf("restore: exit %d: %s", r.Code, r.Stderr)
	}
	copies := clitest.CopiesIn(t, brokers, recovery)
	if len(copies) != res.DeadLetters[payDLT] {
		t.Fatalf("%d records restored to %s, want %d", len(copies), recovery, res.DeadLetters[payDLT])
	}
	for id, n := range copies {
		if n != 1 || !strings.HasPrefix(id, payDLT+"-") {
			t.Fatalf("%s restored %d times", id, n)
		}
	}
	// Keys and headers survive the archive round trip.
	msgs, _ := clitest.KafkaMessages(t, brokers, recovery)
	for _, m := range msgs {
		if len(m.Key) == 0 {
			t.Fatalf("%s lost its key", m.ID())
		}
		if _, ok := m.Header("kafka_dlt-original-topic"); ok {
			t.Fatalf("%s kept a dead-letter header", m.ID())
		}
	}
	if r := clitest.Run(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", to, "--yes"); r.Code != 2 || !strings.Contains(r.Stderr, "already restored") {
		t.Fatalf("second restore: exit %d: %s", r.Code, r.Stderr)
	}
}
