package multiproc

// Several dlqctl processes on one DLQ (issue 13, docs/scale.md): the built
// binary, started N times as separate OS processes, each with its own
// --state-dir and --rate-share i/N. SQS hands each message to one of them;
// between them they must move every message exactly once, each process's
// summary and journal accounting only for its own messages — also when one
// of them is killed with kill -9 and resumed.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// peerMessages is the size of the shared-DLQ tests: DLQCTL_PEER_N, default
// 4,000 so the default suite stays short on a 2-core CI machine (about 45 s
// for the three tests). The 20,000:
//
//	DLQCTL_PEER_N=20000 go test -run 'ShareOneDLQ|Kill9OfOneProcess' -v ./cmd/
//
// and internal/procbench's BenchmarkProcessSharedRedrive measures 1, 2 and
// 4 processes on 20,000 with the same checks (make bench BENCH=Process).
func peerMessages() int {
	if n, err := strconv.Atoi(strings.ReplaceAll(os.Getenv("DLQCTL_PEER_N"), "_", "")); err == nil && n > 0 {
		return n
	}
	return 4000
}

const peers = 4

// peerProc is one dlqctl process of a shared run.
type peerProc struct {
	i              int
	state          string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	err            error
}

// startPeer starts `dlqctl ARGS… --rate-share i/N --state-dir DIR -o json`.
func startPeer(t *testing.T, env testenv.Env, i int, state string, args ...string) *peerProc {
	t.Helper()
	p := startProc(t, env, i, append(args, "--rate-share", fmt.Sprintf("%d/%d", i, peers), "--state-dir", state, "--yes", "-o", "json")...)
	p.state = state
	return p
}

// startProc starts process i of a test: `dlqctl ARGS…` as they are.
func startProc(t *testing.T, env testenv.Env, i int, args ...string) *peerProc {
	t.Helper()
	p := &peerProc{i: i}
	p.cmd = clitest.BinCmd(t, env, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *peerProc) wait() int {
	p.err = p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}

// journal is what a run's journal.ndjson records: ids sent and deleted.
type journalIDs struct {
	runs          int
	sent, deleted map[string]bool
	status        string
}

// readJournals reads every run journal under state.
func readJournals(t *testing.T, state string) journalIDs {
	t.Helper()
	j := journalIDs{sent: map[string]bool{}, deleted: map[string]bool{}}
	runs, err := redrive.ListRuns(state)
	if err != nil {
		t.Fatal(err)
	}
	j.runs = len(runs)
	for _, r := range runs {
		j.status = r.Status
		f, err := os.Open(filepath.Join(redrive.RunsDir(state), r.ID, "journal.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var l struct {
				T    string   `json:"t"`
				Orig string   `json:"orig"`
				IDs  []string `json:"ids"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: journal line %q: %v", r.ID, sc.Text(), err)
			}
			switch l.T {
			case "sent":
				j.sent[l.Orig] = true
			case "del":
				for _, id := range l.IDs {
					j.deleted[id] = true
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// journaledSends reports whether a run under state has journaled a send.
func journaledSends(state string) bool {
	runs, _ := filepath.Glob(filepath.Join(redrive.RunsDir(state), "*", "journal.ndjson"))
	for _, j := range runs {
		if st, err := os.Stat(j); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}

// peerBody is message i's body (the test's identity of a message).
func peerBody(i int) string { return fmt.Sprintf(`{"order":"o-%06d","tenant":"t-%02d"}`, i, i%17) }

// checkExactlyOnce checks the destination's bodies against the n seeded:
// none missing, at most maxDup extra copies. It returns the duplicates.
func checkExactlyOnce(t *testing.T, got map[string]int, n, maxDup int) int {
	t.Helper()
	dups, missing := 0, 0
	for i := range n {
		switch c := got[peerBody(i)]; {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	if len(got) != n-missing {
		t.Errorf("the destination holds %d bodies that were never in the DLQ", len(got)-(n-missing))
	}
	if missing > 0 || dups > maxDup {
		t.Fatalf("destination: %d of %d messages missing, %d duplicated (bound %d)", missing, n, dups, maxDup)
	}
	return dups
}

// TestFourRedriveProcessesShareOneDLQ: four `dlqctl redrive` processes,
// each with its own --state-dir and --rate-share i/4, on one DLQ. Every
// message arrives at the destination exactly once; each process exits 0
// and moved only its own messages (the four summaries add up to n, the
// four journals are disjoint, every id journaled as sent also as deleted);
// nothing is left in the DLQ.
func TestFourRedriveProcessesShareOneDLQ(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	n := peerMessages()
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "peers"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "peersd"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	var ps []*peerProc
	for i := 1; i <= peers; i++ {
		ps = append(ps, startPeer(t, env, i, t.TempDir(), "redrive", dlq, "--to", dest, "--concurrency", "4"))
	}
	total, leaseLost := 0, 0
	journals := make([]journalIDs, peers)
	for k, p := range ps {
		if code := p.wait(); code != 0 {
			t.Fatalf("process %d/%d: exit %d\n%s", p.i, peers, code, p.stderr.String())
		}
		var s cmd.RedriveSummary
		if err := json.Unmarshal(p.stdout.Bytes(), &s); err != nil {
			t.Fatalf("process %d: summary: %v\n%s", p.i, err, p.stdout.String())
		}
		if s.Status != redrive.StatusCompleted || s.Share != fmt.Sprintf("%d/%d", p.i, peers) || s.InFlightElsewhere != 0 || s.Failed+s.Unknown+s.SentNotDeleted != 0 {
			t.Fatalf("process %d: status %q, share %q, in flight elsewhere %d, failed %d, unknown %d, not deleted %d",
				p.i, s.Status, s.Share, s.InFlightElsewhere, s.Failed, s.Unknown, s.SentNotDeleted)
		}
		t.Logf("process %d/%d: moved %d in %.1fs (%.0f/s), %d in flight at peers when it ended", p.i, peers, s.Moved, s.ElapsedSeconds, s.Rate, s.InFlightAtPeers)
		total += s.Moved
		leaseLost += s.LeaseLost
		j := readJournals(t, p.state)
		if j.runs != 1 || j.status != redrive.StatusCompleted || len(j.sent) != s.Moved || len(j.deleted) != s.Moved {
			t.Fatalf("process %d: %d run(s), status %q, journal sent %d / deleted %d; summary moved %d", p.i, j.runs, j.status, len(j.sent), len(j.deleted), s.Moved)
		}
		for id := range j.sent {
			if !j.deleted[id] {
				t.Fatalf("process %d journaled %s as sent, never as deleted", p.i, id)
			}
			for _, other := range journals[:k] {
				if other.sent[id] {
					t.Fatalf("message %s is in the journals of two processes", id)
				}
			}
		}
		journals[k] = j
	}
	if total != n {
		t.Fatalf("the four summaries moved %d in all, want %d", total, n)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
		t.Fatalf("the DLQ still holds %d visible, %d in flight", v, f)
	}
	// No crash, no lost lease: SQS (here, the emulator) gave each message
	// to one process, so not a single duplicate.
	checkExactlyOnce(t, clitest.DrainBodies(t, c, dest), n, leaseLost)
}

// TestSharedRedriveSurvivesKill9OfOneProcess: the same four processes, one
// of them killed with kill -9 mid-run and started again with the same
// command and --state-dir (it resumes its run). Every message reaches the
// destination; duplicates stay within the documented bound (what the
// killed process had sent and not yet deleted: at most --concurrency × 10);
// the DLQ is empty; the three others exit 0 on their own.
func TestSharedRedriveSurvivesKill9OfOneProcess(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	n := peerMessages()
	const conc = 4
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "peerk"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "peerkd"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	args := []string{"redrive", dlq, "--to", dest, "--concurrency", strconv.Itoa(conc), "--visibility", "5s"}
	var ps []*peerProc
	for i := 1; i <= peers; i++ {
		ps = append(ps, startPeer(t, env, i, t.TempDir(), args...))
	}
	// Kill process 2 once it has journaled sends of its own and a tenth of
	// the messages has arrived (on a loaded machine a process can start
	// late: the kill must land in the middle of its run).
	victim := ps[1]
	killWhen(t, victim, "nothing arrived at the destination within 3 minutes", func() bool {
		v, _ := clitest.QueueDepth(t, c, dest)
		return v >= n/10 && journaledSends(victim.state)
	})
	waitOthers(t, ps, victim)
	// The killed process, started again with the same command and state
	// dir, resumes its own run: it waits for what it held to be visible
	// again, deletes what its journal says was sent, moves the rest.
	again := startPeer(t, env, victim.i, victim.state, args...)
	if code := again.wait(); code != 0 {
		t.Fatalf("the resumed process: exit %d\n%s", code, again.stderr.String())
	}
	if !strings.Contains(again.stderr.String(), "resuming unfinished run") {
		t.Fatalf("the re-run did not resume the killed run:\n%s", again.stderr.String())
	}
	j := readJournals(t, victim.state)
	if j.runs != 1 || j.status != redrive.StatusCompleted {
		t.Fatalf("the killed process's state dir holds %d run(s), status %q; want its one run completed", j.runs, j.status)
	}
	// Journaled as sent and never deleted by this process: a peer received
	// it after the kill (its visibility ended) and moved it again. A worker
	// deletes a batch before it sends the next, so the kill left at most
	// one such batch per worker.
	notDeleted := 0
	for id := range j.sent {
		if !j.deleted[id] {
			notDeleted++
		}
	}
	if notDeleted > conc*10 {
		t.Fatalf("the killed process had %d message(s) sent and not deleted; a worker deletes a batch before it sends the next (bound %d)", notDeleted, conc*10)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
		t.Fatalf("the DLQ still holds %d visible, %d in flight", v, f)
	}
	dups := checkExactlyOnce(t, clitest.DrainBodies(t, c, dest), n, conc*10)
	t.Logf("kill -9 of process %d: %d duplicate(s) (bound %d)", victim.i, dups, conc*10)
}

// TestFourArchiveProcessesShareOneDLQ: four `dlqctl archive --delete`
// processes with --rate-share i/4 archive one DLQ into one prefix, each as
// its own run. Between them the runs hold every message exactly once, each
// manifest counts only its own records, and the DLQ is empty.
func TestFourArchiveProcessesShareOneDLQ(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	n := peerMessages() / 2
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "peera"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "peera"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	var ps []*peerProc
	for i := 1; i <= peers; i++ {
		ps = append(ps, startPeer(t, env, i, t.TempDir(), "archive", dlq, "--to", "s3://"+bucket+"/dlq", "--delete", "--part-records", "500"))
	}
	total := 0
	for _, p := range ps {
		if code := p.wait(); code != 0 {
			t.Fatalf("process %d/%d: exit %d\n%s", p.i, peers, code, p.stderr.String())
		}
		var s struct {
			Status string `json:"status"`
			Stats  struct {
				Archived int `json:"archived"`
				Deleted  int `json:"deleted"`
			} `json:"stats"`
		}
		if err := json.Unmarshal(p.stdout.Bytes(), &s); err != nil {
			t.Fatalf("process %d: summary: %v\n%s", p.i, err, p.stdout.String())
		}
		if s.Stats.Deleted != s.Stats.Archived {
			t.Fatalf("process %d: archived %d, deleted %d (%s)", p.i, s.Stats.Archived, s.Stats.Deleted, s.Status)
		}
		t.Logf("process %d/%d: archived %d (%s)", p.i, peers, s.Stats.Archived, s.Status)
		total += s.Stats.Archived
	}
	if total != n {
		t.Fatalf("the four summaries archived %d in all, want %d", total, n)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
		t.Fatalf("the DLQ still holds %d visible, %d in flight", v, f)
	}
	// Read every run under the prefix back, as a user would.
	r := clitest.Run(t, env, "", "sample", "--from", "s3://"+bucket+"/dlq/", "-n", strconv.Itoa(2*n), "--no-redact", "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("sample --from the archive: exit %d\n%s", r.Code, r.Stderr)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var rec struct {
			Body string `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		got[rec.Body]++
	}
	checkExactlyOnce(t, got, n, 0)
}

// TestSharedRunWaitsForItsOwnLostReceives: a process of a shared run does
// not wait for messages in flight at its peers — but when one of its own
// receives reached SQS and lost its answer (the SDK retried it), the
// messages in flight with nobody holding them may be its own: it waits for
// them like a run alone and moves them. Alone on the DLQ here, it must move
// everything and exit 0, not call the lost messages a peer's.
func TestSharedRunWaitsForItsOwnLostReceives(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 1010
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "plost"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "plostd"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	penv, p := clitest.Proxied(t, env, faultproxy.LostReceives(9, 3))
	r := clitest.Run(t, penv, "", "redrive", dlq, "--to", dest, "--yes", "--visibility", "5s", "--rate-share", "1/2", "-o", "json", "--state-dir", t.TempDir())
	lost := p.Stats().LostReceivedMessages
	if lost == 0 {
		t.Fatal("the proxy lost no received message; the test proves nothing")
	}
	s := clitest.SummaryOf(t, r)
	if r.Code != 0 || s.Moved != n || s.InFlightAtPeers != 0 {
		t.Fatalf("exit %d, moved %d of %d, in flight at peers %d (%d lost in receives); want all moved\n%s", r.Code, s.Moved, n, s.InFlightAtPeers, lost, r.Stderr)
	}
	checkExactlyOnce(t, clitest.DrainBodies(t, c, dest), n, 0)
}

// archivedBodies reads every part (part-*.ndjson.gz) under s3://bucket/prefix
// — also those of a run killed before it wrote its manifest — and counts
// each record's body; orphans are the run folders with parts and no
// manifest.
func archivedBodies(t *testing.T, env testenv.Env, bucket, prefix string) (got map[string]int, parts, orphans int) {
	t.Helper()
	api := env.S3(t)
	got = map[string]int{}
	runs := map[string]bool{} // run folder → has a manifest
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if archive.IsManifestName(key) {
				runs[path.Dir(key)] = true
			}
			if !strings.HasSuffix(key, ".ndjson.gz") || !strings.HasPrefix(path.Base(key), "part-") {
				continue
			}
			if _, ok := runs[path.Dir(key)]; !ok {
				runs[path.Dir(key)] = false
			}
			parts++
			obj, err := api.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(obj.Body)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			sc := bufio.NewScanner(zr)
			sc.Buffer(make([]byte, 1<<20), 4<<20)
			for sc.Scan() {
				var rec struct {
					Body string `json:"body"`
				}
				if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				got[rec.Body]++
			}
			if err := sc.Err(); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			obj.Body.Close()
		}
	}
	for _, m := range runs {
		if !m {
			orphans++
		}
	}
	return got, parts, orphans
}

// TestSharedArchiveSurvivesKill9OfOneProcess: four `archive --delete`
// processes, one killed with kill -9 mid-run and started again with the
// same command. Nothing is lost — every message is in a verified part
// under the prefix (the killed run's parts have no manifest: it died before
// writing it) — the DLQ is empty, and a message is in two parts only if
// the killed process had verified its part and not yet deleted it.
func TestSharedArchiveSurvivesKill9OfOneProcess(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	n := peerMessages() / 2
	const conc, partRecords = 4, 100
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "peerak"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "peerak"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	args := []string{"archive", dlq, "--to", "s3://" + bucket + "/dlq", "--delete", "--part-records", strconv.Itoa(partRecords),
		"--concurrency", strconv.Itoa(conc), "--visibility", "5s", "--rate", "400"}
	var ps []*peerProc
	for i := 1; i <= peers; i++ {
		ps = append(ps, startPeer(t, env, i, t.TempDir(), args...))
	}
	victim := ps[1]
	killWhen(t, victim, "the DLQ did not shrink within 3 minutes", func() bool {
		v, f := clitest.QueueDepth(t, c, dlq)
		return v-f <= n/2 // local-aws-sqs counts in-flight as visible
	})
	waitOthers(t, ps, victim)
	// The killed process's command, again: it archives what is left (the
	// messages it held are visible again after their 5 s visibility).
	time.Sleep(6 * time.Second)
	again := startPeer(t, env, victim.i, victim.state, args...)
	if code := again.wait(); code != 0 {
		t.Fatalf("the re-run: exit %d\n%s", code, again.stderr.String())
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
		t.Fatalf("the DLQ still holds %d visible, %d in flight", v, f)
	}
	got, parts, orphans := archivedBodies(t, env, bucket, "dlq/")
	dups := checkExactlyOnce(t, got, n, conc*partRecords)
	t.Logf("kill -9 of process %d: %d part(s) in all, %d run(s) without a final manifest, %d message(s) in two parts", victim.i, parts, orphans, dups)

	// What a user reads: --from the prefix finds the killed run through its
	// newest checkpoint manifest (written after each verified part, before
	// any of its messages was deleted), so every message that left the DLQ
	// is read back — none only in parts that no manifest names.
	in, err := archive.ResolveInput(t.Context(), "s3://"+bucket+"/dlq/", env.S3(t))
	if err != nil {
		t.Fatal(err)
	}
	viaFrom := map[string]bool{}
	if err := archive.ForEachInputRecord(t.Context(), in, func(rec *record.Record, _ any) error {
		viaFrom[rec.Body] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for b := range got {
		if !viaFrom[b] {
			t.Fatalf("a message archived and deleted from the DLQ is not read by --from s3://%s/dlq/ (%d of %d read; the killed run's parts are not named by any manifest): %.80q", bucket, len(viaFrom), len(got), b)
		}
	}
	r := clitest.Run(t, env, "", "group", "--from", "s3://"+bucket+"/dlq/", "--by", "class", "-o", "json")
	var rep struct {
		Read int `json:"read"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); r.Code != 0 || err != nil || rep.Read < n {
		t.Fatalf("group --from the prefix after a kill -9: exit %d, read %d of at least %d: %v\n%s", r.Code, rep.Read, n, err, r.Stderr)
	}
}

// TestTwoRedriveProcessesShareAGroupLockingFIFODLQ: on a server that locks
// FIFO message groups as AWS does (moto), two processes share a FIFO DLQ.
// While one holds a group the other gets nothing of it; a process that has
// nothing left it can read ends with the rest reported as its peer's
// (in flight at peers, locked by peers), exit 0 — not "blocked", exit 4 —
// and between them every message reaches the FIFO destination exactly once.
func TestTwoRedriveProcessesShareAGroupLockingFIFODLQ(t *testing.T) {
	env := testenv.RequireMoto(t)
	c := env.SQS(t)
	const groups, per = 6, 10
	dlq, _ := clitest.FIFODLQ(t, c, testenv.UniqueName(t, "pf"), groups, per)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "pfd")+".fifo", map[string]string{"FifoQueue": "true"})
	var ps []*peerProc
	for i := 1; i <= 2; i++ {
		p := &peerProc{i: i, state: t.TempDir()}
		// One worker each: moto can split a group between concurrent
		// receives (docs/emulators.md row 22), which AWS never does.
		p.cmd = clitest.BinCmd(t, env, "redrive", dlq, "--to", dest, "--concurrency", "1", "--rate-share", fmt.Sprintf("%d/2", i),
			"--state-dir", p.state, "--yes", "-o", "json")
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	total := 0
	for _, p := range ps {
		if code := p.wait(); code != 0 {
			t.Fatalf("process %d/2: exit %d\n%s\n%s", p.i, code, p.stdout.String(), p.stderr.String())
		}
		var s cmd.RedriveSummary
		if err := json.Unmarshal(p.stdout.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Status != redrive.StatusCompleted || s.Blocked != 0 {
			t.Fatalf("process %d/2: status %q, blocked %d; want completed", p.i, s.Status, s.Blocked)
		}
		t.Logf("process %d/2: moved %d, %d in flight at peers, %d locked by peers", p.i, s.Moved, s.InFlightAtPeers, s.LockedByPeers)
		total += s.Moved
	}
	if total != groups*per {
		t.Fatalf("the two processes moved %d, want %d", total, groups*per)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
		t.Fatalf("the FIFO DLQ still holds %d visible, %d in flight", v, f)
	}
	got := map[string]int{}
	for _, b := range clitest.ReceiveAll(t, c, dest) {
		got[b]++
	}
	if len(got) != groups*per {
		t.Fatalf("the destination holds %d distinct messages, want %d", len(got), groups*per)
	}
	for b, n := range got {
		if n != 1 {
			t.Fatalf("%s arrived %d times", b, n)
		}
	}
}

// TestSharedRunGuardsStopEveryProcess: --max-dest-backlog reads the
// destination's depth, the same queue metric in every process, so when the
// destination backs up every process of a shared run trips (exit 3), gives
// back what it held, and nothing is lost: the DLQ and the destination
// together hold every message, none in flight, and the destination exactly
// what the processes say they moved.
func TestSharedRunGuardsStopEveryProcess(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 600
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "pg"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "pgd"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	var ps []*peerProc
	for i := 1; i <= 2; i++ {
		p := &peerProc{i: i, state: t.TempDir()}
		p.cmd = clitest.BinCmd(t, env, "redrive", dlq, "--to", dest, "--rate", "100", "--rate-share", fmt.Sprintf("%d/2", i),
			"--max-dest-backlog", "60", "--guard-interval", "200ms", "--state-dir", p.state, "--yes", "-o", "json")
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	moved := 0
	for _, p := range ps {
		code := p.wait()
		var s cmd.RedriveSummary
		if err := json.Unmarshal(p.stdout.Bytes(), &s); err != nil {
			t.Fatalf("process %d/2: exit %d, summary: %v\n%s", p.i, code, err, p.stderr.String())
		}
		if code != 3 || s.Guard == nil || s.Guard.Name != "max-dest-backlog" {
			t.Fatalf("process %d/2: exit %d, guard %+v; want exit 3 from max-dest-backlog\n%s", p.i, code, s.Guard, p.stderr.String())
		}
		moved += s.Moved
	}
	dv, df := clitest.SettledDepth(t, c, dlq)
	rv, rf := clitest.QueueDepth(t, c, dest)
	if df != 0 || dv+rv+rf != n || rv != moved || moved >= n {
		t.Fatalf("after both tripped: DLQ %d (+%d in flight), destination %d (+%d); moved %d; want %d in all, nothing held, the destination = moved < %d", dv, df, rv, rf, moved, n, n)
	}
}

// killWhen kills victim with SIGKILL once ready reports true (checked every
// 20 ms for up to 3 minutes; failing with stuck otherwise) and reaps it.
func killWhen(t *testing.T, victim *peerProc, stuck string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatal(stuck)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.wait()
}

// waitOthers waits for every process but victim; each must exit 0.
func waitOthers(t *testing.T, ps []*peerProc, victim *peerProc) {
	t.Helper()
	for _, p := range ps {
		if p == victim {
			continue
		}
		if code := p.wait(); code != 0 {
			t.Fatalf("process %d/%d: exit %d\n%s", p.i, len(ps), code, p.stderr.String())
		}
	}
}
