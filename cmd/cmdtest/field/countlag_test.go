package field

// SQS's approximate counts trail the truth by up to a minute. A run's end
// and its exit code must not trust them: these tests put a proxy serving
// the counts as they were D ago (internal/faultproxy SetCountLag) between
// dlqctl and local-aws-sqs, on a queue filled long before the run (the
// counts still show messages the run already took) and on one filled just
// before it (the counts still say empty).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// sendBodies sends n standard messages `{"n":i}` to url.
func sendBodies(t *testing.T, c *sqs.Client, url string, n int) {
	t.Helper()
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, j))})
		}
		out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v %v", err, out)
		}
	}
}

// countLagCase is one command run against a lagging proxy.
type countLagCase struct {
	name string
	fifo bool
	// run runs the command on the DLQ (through penv) and checks what a
	// user sees; it returns what it read or moved.
	// trailing is true when the counts at the end still show messages the
	// run took: the summary must carry the counts' advisory note.
	run func(t *testing.T, penv testenv.Env, dlq string, trailing bool) int
}

// TestCountsThatTrailDoNotDecideARun: with the counts trailing by 0, 30 or
// 60 s, on a DLQ filled long before the run and on one filled just before
// it, group --all, redrive, archive --delete, a canary and a FIFO archive
// --delete each read or move every message and exit 0 — none waits for
// the counts, none says "completed" (or "read all") for partial work.
func TestCountsThatTrailDoNotDecideARun(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 300
	cases := []countLagCase{
		{name: "group-all", run: func(t *testing.T, penv testenv.Env, dlq string, trailing bool) int {
			r := clitest.Run(t, penv, "", "group", dlq, "--by", "shape", "--all", "-o", "json")
			var rep struct {
				Read     int  `json:"read"`
				Complete bool `json:"complete"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rep); r.Code != 0 || err != nil || rep.Read != n || !rep.Complete {
				t.Fatalf("group --all: exit %d, read %d of %d, complete %v (%v)\n%s", r.Code, rep.Read, n, rep.Complete, err, r.Stderr)
			}
			if !strings.Contains(r.Stderr, fmt.Sprintf("read all %d messages", n)) {
				t.Errorf("stderr does not say all were read:\n%s", r.Stderr)
			}
			if v, f := clitest.SettledDepth(t, c, dlq); v != n || f != 0 {
				t.Fatalf("after group --all: %d visible, %d in flight; want %d, 0", v, f, n)
			}
			return rep.Read
		}},
		{name: "redrive", run: func(t *testing.T, penv testenv.Env, dlq string, trailing bool) int {
			dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lagd"), nil)
			r := clitest.Run(t, penv, "", "redrive", dlq, "--to", dest, "--yes", "-o", "json")
			var sum struct {
				Status string `json:"status"`
				Moved  int    `json:"moved"`
				Counts *struct {
					Visible int    `json:"visible"`
					Note    string `json:"note"`
				} `json:"approximate_counts"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Moved != n || sum.Status != "completed" {
				t.Fatalf("redrive: exit %d, status %q, moved %d of %d (%v)\n%s", r.Code, sum.Status, sum.Moved, n, err, r.Stderr)
			}
			if trailing && (sum.Counts == nil || sum.Counts.Visible == 0 || !strings.Contains(sum.Counts.Note, "can trail by up to a minute")) {
				t.Errorf("counts that still show the moved messages are not noted: %+v", sum.Counts)
			}
			if got := len(clitest.ReceiveAll(t, c, dest)); got != n {
				t.Fatalf("the destination received %d, want %d", got, n)
			}
			return sum.Moved
		}},
		{name: "archive-delete", run: func(t *testing.T, penv testenv.Env, dlq string, trailing bool) int {
			return archiveAll(t, penv, c, dlq, n, trailing)
		}},
		{name: "canary", run: func(t *testing.T, penv testenv.Env, dlq string, trailing bool) int {
			dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lagc"), nil)
			r := clitest.Run(t, penv, "", "redrive", dlq, "--to", dest, "--yes", "--canary", "20", "--verify-for", "1s", "--verify-poll", "200ms",
				"--state-dir", t.TempDir(), "-o", "json")
			var sum struct {
				Status string `json:"status"`
				Moved  int    `json:"moved"`
				Canary struct {
					Pass bool `json:"pass"`
				} `json:"canary"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Moved != 20 || !sum.Canary.Pass {
				t.Fatalf("canary: exit %d, status %q, moved %d of 20, pass %v (%v)\n%s", r.Code, sum.Status, sum.Moved, sum.Canary.Pass, err, r.Stderr)
			}
			if got := len(clitest.ReceiveAll(t, c, dest)); got != 20 {
				t.Fatalf("the destination received %d, want the canary's 20", got)
			}
			return sum.Moved
		}},
		{name: "fifo-archive-delete", fifo: true, run: func(t *testing.T, penv testenv.Env, dlq string, trailing bool) int {
			return archiveAll(t, penv, c, dlq, n, trailing)
		}},
	}
	for _, lag := range []time.Duration{0, 30 * time.Second, 60 * time.Second} {
		for _, fill := range []string{"filled-long-before", "filled-just-before"} {
			for _, tc := range cases {
				t.Run(fmt.Sprintf("lag=%s/%s/%s", lag, fill, tc.name), func(t *testing.T) {
					penv, p := clitest.Proxied(t, env)
					p.SetCountLag(lag)
					var dlq string
					if tc.fifo {
						dlq, _ = clitest.CreateQueue(t, c, testenv.UniqueName(t, "lagf")+".fifo", map[string]string{"FifoQueue": "true"})
					} else {
						dlq, _ = clitest.CreateQueue(t, c, testenv.UniqueName(t, "lag"), nil)
					}
					fillIt := func() {
						if tc.fifo {
							sendFIFO(t, c, dlq, 5, n/5)
						} else {
							sendBodies(t, c, dlq, n)
						}
					}
					if fill == "filled-long-before" {
						fillIt()
						waitDepth(t, c, dlq, n)
						p.Watch(dlq) // the counts' history begins full
					} else {
						p.Watch(dlq) // the counts' history begins empty
						fillIt()
					}
					began := time.Now()
					got := tc.run(t, penv, dlq, lag > 0 && fill == "filled-long-before")
					t.Logf("%s with counts trailing %s (%s): %d in %s; %d lagged count answers", tc.name, lag, fill, got, time.Since(began).Round(10*time.Millisecond), p.LaggedAnswers())
				})
			}
		}
	}
}

// archiveAll archives dlq with --delete through penv and checks that all
// n messages are in a complete archive (in group order on FIFO) and gone
// from the queue.
func archiveAll(t *testing.T, penv testenv.Env, c *sqs.Client, dlq string, n int, trailing bool) int {
	t.Helper()
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "lag"), "_", "-"))
	if _, err := penv.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, penv, "", "archive", dlq, "--to", "s3://"+bucket+"/p", "--delete", "--yes", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"status": "completed"`) {
		t.Fatalf("archive --delete: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if trailing && !strings.Contains(r.Stdout, `"counts_note": "the queue's approximate counts still show`) {
		t.Errorf("counts that still show the archived messages are not noted:\n%s", r.Stdout)
	}
	m := clitest.ArchiveManifest(t, penv, bucket)
	if !m.Complete || m.Totals.Records != n || m.Totals.Deleted != n {
		t.Fatalf("manifest: complete=%v records=%d deleted=%d; want %d archived and deleted", m.Complete, m.Totals.Records, m.Totals.Deleted, n)
	}
	if left := clitest.ReceiveAll(t, c, dlq); len(left) != 0 {
		t.Fatalf("%d message(s) left in the DLQ after a completed archive --delete", len(left))
	}
	if strings.HasSuffix(dlq, ".fifo") {
		var bodies []string
		for _, rec := range clitest.SampleArchive(t, penv, "s3://"+bucket+"/"+strings.TrimSuffix(m.Parts[0].Key, "part-00001.ndjson.gz")+"_manifest.json") {
			bodies = append(bodies, rec.Body)
		}
		clitest.CheckOrderPerGroup(t, bodies)
	}
	return m.Totals.Records
}

// sendFIFO sends groups × per messages `{"group":"gG","n":N}` in group
// order to a FIFO queue.
func sendFIFO(t *testing.T, c *sqs.Client, url string, groups, per int) {
	t.Helper()
	for g := 1; g <= groups; g++ {
		for i := 0; i < per; i += 10 {
			var entries []types.SendMessageBatchRequestEntry
			for j := i; j < min(i+10, per); j++ {
				entries = append(entries, types.SendMessageBatchRequestEntry{
					Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprintf(`{"group":"g%d","n":%d}`, g, j)),
					MessageGroupId: aws.String(fmt.Sprintf("g%d", g)), MessageDeduplicationId: aws.String(fmt.Sprintf("g%d-%d", g, j)),
				})
			}
			out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("send: %v %v", err, out)
			}
		}
	}
}

// waitDepth waits until the queue's own counts show n visible (the
// emulator's counts trail a send by a moment too).
func waitDepth(t *testing.T, c *sqs.Client, url string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, _ := clitest.QueueDepth(t, c, url); v == n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s shows %d visible, want %d", url, v, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedriveReportsPossibleDuplicates: a SendMessageBatch whose answer is
// lost after SQS enqueued it is sent again by the SDK, and the standard
// destination holds those messages twice. The redrive still completes (exit
// 0: nothing is lost, every message moved) and says how many may have been
// delivered twice — in -o json (maybe_twice, maybe_twice_ids), in the run's
// journal (`runs -o json`), and in the table — at least as many as the
// destination received twice.
func TestRedriveReportsPossibleDuplicates(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 100
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "twice"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "twiced"), nil)
	sendBodies(t, c, dlq, n)
	penv, p := clitest.Proxied(t, env, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.ResetAfter, Every: 3, Limit: 2})
	state := t.TempDir()
	r := clitest.Run(t, penv, "", "redrive", dlq, "--to", dest, "--yes", "--state-dir", state, "-o", "json")
	var sum struct {
		Status     string   `json:"status"`
		Moved      int      `json:"moved"`
		MaybeTwice int      `json:"maybe_twice"`
		IDs        []string `json:"maybe_twice_ids"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Moved != n || sum.Status != "completed" {
		t.Fatalf("redrive: exit %d, status %q, moved %d of %d (%v)\n%s", r.Code, sum.Status, sum.Moved, n, err, r.Stderr)
	}
	copies := map[string]int{}
	doubled := 0
	for _, b := range clitest.ReceiveAll(t, c, dest) {
		if copies[b]++; copies[b] == 2 {
			doubled++
		}
	}
	if len(copies) != n {
		t.Fatalf("the destination holds %d distinct messages, want %d", len(copies), n)
	}
	if p.Stats().Fired[faultproxy.ResetAfter] != 2 || doubled == 0 {
		t.Fatalf("the proxy lost %d send answers and the destination holds %d messages twice; the test proves nothing", p.Stats().Fired[faultproxy.ResetAfter], doubled)
	}
	if sum.MaybeTwice < doubled || len(sum.IDs) != sum.MaybeTwice {
		t.Fatalf("maybe_twice %d (%d ids); the destination received %d messages twice", sum.MaybeTwice, len(sum.IDs), doubled)
	}
	t.Logf("maybe twice: %d reported, %d doubled in the destination", sum.MaybeTwice, doubled)

	runs := clitest.Run(t, env, "", "runs", "--state-dir", state, "-o", "json")
	if runs.Code != 0 || !strings.Contains(runs.Stdout, fmt.Sprintf(`"maybe_twice": %d`, sum.MaybeTwice)) {
		t.Errorf("runs -o json does not carry the journal's maybe_twice %d:\n%s\n%s", sum.MaybeTwice, runs.Stdout, runs.Stderr)
	}

	// The table says it in words.
	dlq2, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "twice2"), nil)
	sendBodies(t, c, dlq2, 30)
	p.SetFaults(faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.ResetAfter, Limit: 1})
	r = clitest.Run(t, penv, "", "redrive", dlq2, "--to", dest, "--yes", "--state-dir", t.TempDir())
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "may have been delivered twice: the send's answer was lost") {
		t.Errorf("redrive table: exit %d, no word of possible duplicates:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
