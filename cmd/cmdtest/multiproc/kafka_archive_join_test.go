package multiproc

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
)

// TestKafkaArchiveSecondProcessJoiningArchivesEachRecordOnce: an archive
// --delete of a three-partition dead-letter topic is under way when a
// second one joins the group; partitions move between the two live
// processes while records sit in parts not yet verified. A partition goes
// only once what the losing process holds of it is archived, verified
// and committed (its open part is uploaded at the hand-over), so its new
// owner starts past it: every dead letter is in the archive exactly once,
// nothing is pending, and each process completes or ends partial saying
// to run again.
func TestKafkaArchiveSecondProcessJoiningArchivesEachRecordOnce(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 1500, Partitions: 3})
	_, _, _, _, _, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	dest := "s3://" + bucket + "/join"
	args := []string{"archive", "kafka://" + brokers + "/" + payDLT, "--to", dest, "--delete", "--part-records", "100", "--rate", "400", "--yes", "-o", "json", "--state-dir", t.TempDir()}
	pending := func() int64 { return dlqctlPending(t, adm, payDLT) }
	first := startProc(t, env, 1, args...)
	awaitProgress(t, first, pending, total)
	second := startProc(t, env, 2, args...)
	partial := false
	for _, p := range []*peerProc{first, second} {
		code := p.wait()
		switch {
		case code == 0:
		case code == 4 && strings.Contains(p.stderr.String(), "run the same command again"):
			partial = true
		default:
			t.Fatalf("process %d: exit %d; want 0 or 4 saying to run again\nstdout: %s\nstderr: %s", p.i, code, p.stdout.String(), p.stderr.String())
		}
		t.Logf("process %d: exit %d", p.i, code)
	}
	if partial {
		if r := clitest.Run(t, env, "", args...); r.Code != 0 {
			t.Fatalf("re-run after a partial end: exit %d: %s", r.Code, r.Stderr)
		}
	}
	if p := pending(); p != 0 {
		t.Fatalf("%d record(s) pending after the archives ended", p)
	}
	got := clitest.ArchivedIDs(t, env, dest+"/queue="+payDLT+"/")
	dups := 0
	for id, n := range got {
		if n > 1 {
			dups += n - 1
			t.Errorf("%s archived %d times", id, n)
		}
	}
	if len(got) != total || dups != 0 {
		t.Fatalf("%d distinct dead letters archived of %d, %d duplicate(s); want each once", len(got), total, dups)
	}
}
