package multiproc

// Issue 32: every duplicate a crash can cause is reported. A real dlqctl
// child process is killed with SIGKILL in the middle of a redrive, the
// run is resumed, and the destination's copies are counted by their
// redrive marker's original id: every message arrives, every message that
// arrived twice is among the ids the resume reports (maybe_twice_messages,
// cause "resent"), and the report is no blanket: at most the batches the
// killed process had in flight (--concurrency × its batch).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// crashTrials is how many kill -9 trials each broker's test runs
// (DLQCTL_CRASH_TRIALS, default 2; the 8: DLQCTL_CRASH_TRIALS=8).
func crashTrials() int {
	if n, err := strconv.Atoi(os.Getenv("DLQCTL_CRASH_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// crashReport is what a resumed run says about possible duplicates.
type crashReport struct {
	Status             string                 `json:"status"`
	Moved              int                    `json:"moved"`
	Resumed            int                    `json:"resumed"`
	MaybeTwice         int                    `json:"maybe_twice"`
	MaybeTwiceResent   int                    `json:"maybe_twice_resent"`
	MaybeTwiceMessages []redrive.TwiceMessage `json:"maybe_twice_messages"`
	UnconfirmedGone    int                    `json:"unconfirmed_gone"`
}

// checkCrashReport checks a resumed run's report against the copies the
// destination holds (by marker orig): n distinct originals (nothing lost),
// each one held twice among the reported ids, the report within bound and
// equal to what the killed run's journal left unconfirmed (none of them
// vanished from the DLQ). It returns the duplicates.
func checkCrashReport(t *testing.T, rep crashReport, stderr string, byOrig map[string]int, n, unconfirmed, bound int) int {
	t.Helper()
	reported := map[string]bool{}
	for _, m := range rep.MaybeTwiceMessages {
		if m.Cause != redrive.CauseResent {
			t.Errorf("a possible duplicate with cause %q on a loopback without faults: %+v", m.Cause, m)
		}
		reported[m.Orig] = true
	}
	if len(reported) != rep.MaybeTwiceResent || rep.MaybeTwice != rep.MaybeTwiceResent {
		t.Errorf("maybe_twice %d, maybe_twice_resent %d, %d distinct ids listed: they should agree", rep.MaybeTwice, rep.MaybeTwiceResent, len(reported))
	}
	if rep.MaybeTwiceResent+rep.UnconfirmedGone != unconfirmed || rep.UnconfirmedGone != 0 {
		t.Errorf("the killed run left %d send(s) unconfirmed; the resume reported %d resent and %d gone (nothing else took messages from the DLQ)", unconfirmed, rep.MaybeTwiceResent, rep.UnconfirmedGone)
	}
	if rep.MaybeTwiceResent > bound {
		t.Errorf("%d reported as possibly delivered twice: more than the %d the killed process could have had in flight", rep.MaybeTwiceResent, bound)
	}
	if len(byOrig) != n {
		t.Errorf("the destination holds copies of %d distinct messages, want %d (none lost)", len(byOrig), n)
	}
	dups := 0
	for orig, c := range byOrig {
		if c > 1 {
			dups += c - 1
			if !reported[orig] {
				t.Errorf("%s arrived %d times and the resume did not report it", orig, c)
			}
		}
		if c > 2 {
			t.Errorf("%s arrived %d times: one kill can double a copy at most once", orig, c)
		}
	}
	const line = "may have been delivered twice: the process died after sending them and before recording it"
	if said := strings.Contains(stderr, line); said != (rep.MaybeTwiceResent > 0) {
		t.Errorf("resume stderr says %q: %v, with %d resent:\n%s", line, said, rep.MaybeTwiceResent, stderr)
	}
	return dups
}

// killedRunUnconfirmed reads `runs -o json` after the kill: one run, left
// running, and the sends its journal has no outcome for.
func killedRunUnconfirmed(t *testing.T, env testenv.Env, state string) (id string, unconfirmed int) {
	t.Helper()
	rr := clitest.Run(t, env, "", "runs", "-o", "json", "--state-dir", state)
	var runs []redrive.RunInfo
	if err := json.Unmarshal([]byte(rr.Stdout), &runs); err != nil || len(runs) != 1 || runs[0].Status != redrive.StatusRunning {
		t.Fatalf("after kill -9 `runs` shows %s (%v); want one run left running", rr.Stdout, err)
	}
	return runs[0].ID, runs[0].Unconfirmed
}

// resumedRunCounts checks `runs -o json` after the resume: nothing left
// unconfirmed, the resends counted as maybe_twice.
func resumedRunCounts(t *testing.T, env testenv.Env, state string, resent int) {
	t.Helper()
	rr := clitest.Run(t, env, "", "runs", "-o", "json", "--state-dir", state)
	var runs []redrive.RunInfo
	if err := json.Unmarshal([]byte(rr.Stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs after the resume: %s (%v)", rr.Stdout, err)
	}
	if r := runs[0]; r.Status != redrive.StatusCompleted || r.Unconfirmed != 0 || r.MaybeTwice != resent {
		t.Errorf("runs after the resume: status %s, unconfirmed %d, maybe_twice %d; want completed, 0, %d", r.Status, r.Unconfirmed, r.MaybeTwice, resent)
	}
}

// drainMarkers consumes an SQS queue and counts its copies by the
// original id their redrive marker carries.
func drainMarkers(t *testing.T, c *sqs.Client, url string) map[string]int {
	t.Helper()
	got := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for range 4 {
		wg.Go(func() {
			empty := 0
			for empty < 3 {
				out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
				if err == nil && len(out.Messages) > 0 {
					var del []types.DeleteMessageBatchRequestEntry
					mu.Lock()
					for k, m := range out.Messages {
						var mk record.Marker
						if a, ok := m.MessageAttributes[record.MarkerAttribute]; !ok || json.Unmarshal([]byte(aws.ToString(a.StringValue)), &mk) != nil || mk.OriginalID == "" {
							firstErr = fmt.Errorf("a copy without a readable %s marker: %s", record.MarkerAttribute, aws.ToString(m.Body))
						}
						got[mk.OriginalID]++
						del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), ReceiptHandle: m.ReceiptHandle})
					}
					mu.Unlock()
					_, err = c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				if len(out.Messages) == 0 {
					empty++
				} else {
					empty = 0
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return got
}

// TestSQSKill9DuplicatesAreAllReported: a standard-queue redrive, its
// SendMessageBatch calls slowed by 300 ms of latency (half before SQS
// acts, half after: a batch spends 150 ms accepted by SQS and not yet
// journaled, so a kill at a random moment lands in that window for most
// workers — as on a real link), is killed at a random point with a random
// --concurrency, then resumed (by id, or by running the same command
// again on alternate trials).
func TestSQSKill9DuplicatesAreAllReported(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	penv, _ := clitest.Proxied(t, env, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.Latency, Delay: 300 * time.Millisecond})
	const n = 600
	totalDups, totalReported := 0, 0
	for trial := range crashTrials() {
		conc := []int{2, 4, 8}[rand.IntN(3)]
		dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "crash"), nil)
		dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "crashd"), nil)
		if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
			t.Fatal(err)
		}
		state := t.TempDir()
		args := []string{"redrive", dlq, "--to", dest, "--concurrency", strconv.Itoa(conc), "--visibility", "5s", "--yes", "--state-dir", state}
		victim := &peerProc{state: state}
		victim.cmd = clitest.BinCmd(t, penv, append(args, "-o", "json")...)
		victim.cmd.Stdout, victim.cmd.Stderr = &victim.stdout, &victim.stderr
		if err := victim.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		at := n/10 + rand.IntN(n/2)
		killWhen(t, victim, "the redrive moved nothing within 3 minutes", func() bool {
			v, _ := clitest.QueueDepth(t, c, dest)
			return v >= at && journaledSends(state)
		})
		id, unconfirmed := killedRunUnconfirmed(t, env, state)
		bound := conc * 10
		if unconfirmed > bound {
			t.Errorf("the killed run's journal has %d unconfirmed sends; a worker has one batch (≤ 10) in flight: bound %d", unconfirmed, bound)
		}
		var r clitest.Result
		if trial%2 == 0 {
			r = clitest.Run(t, env, "", "redrive", "resume", id, "--yes", "-o", "json", "--state-dir", state)
		} else {
			r = clitest.Run(t, env, "", append(args, "-o", "json")...)
		}
		if r.Code != 0 {
			t.Fatalf("resume: exit %d\n%s", r.Code, r.Stderr)
		}
		var rep crashReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Status != redrive.StatusCompleted {
			t.Fatalf("resume summary %q (%v)", r.Stdout, err)
		}
		if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
			t.Fatalf("the DLQ still holds %d visible, %d in flight", v, f)
		}
		dups := checkCrashReport(t, rep, r.Stderr, drainMarkers(t, c, dest), n, unconfirmed, bound)
		resumedRunCounts(t, env, state, rep.MaybeTwiceResent)
		t.Logf("trial %d: --concurrency %d, killed after %d arrived: %d unconfirmed in the journal, %d duplicate(s) at the destination, %d reported (bound %d)", trial, conc, at, unconfirmed, dups, rep.MaybeTwiceResent, bound)
		totalDups += dups
		totalReported += rep.MaybeTwiceResent
	}
	t.Logf("%d trials × %d messages: %d duplicates, all reported; %d reported in all", crashTrials(), n, totalDups, totalReported)
}

// drainAMQPMarkers consumes a RabbitMQ queue and counts its copies by the
// original id their redrive marker header carries.
func drainAMQPMarkers(t *testing.T, env testenv.RabbitMQ, queue string) map[string]int {
	t.Helper()
	return clitest.DrainBy(t, env, queue, func(d amqp091.Delivery) string {
		mk, ok := amqp.ReadMarker(d.Headers)
		if !ok || mk.OriginalID == "" {
			t.Errorf("a copy without a readable %s header: %s", record.MarkerAttribute, d.MessageId)
		}
		return mk.OriginalID
	})
}

// TestAMQPKill9DuplicatesAreAllReported: a RabbitMQ redrive (publisher
// confirms; paced, so a worker's batch is 10) killed at a random point
// with a random --concurrency, then run again: whatever the kill left
// with confirms outstanding or confirmed and not journaled is reported.
func TestAMQPKill9DuplicatesAreAllReported(t *testing.T) {
	const n = 1500
	totalDups, totalReported := 0, 0
	for trial := range crashTrials() {
		o := amqpseed.Options{Prefix: clitest.RabbitPrefix(t)}
		env, names := clitest.SeedRabbit(t, o)
		{
			ref, _ := amqp.ParseVHostRef(env.URL, nil)
			conn, err := amqp.Dial(context.Background(), ref, amqp.ConnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := amqpseed.Bulk(context.Background(), conn, o.Prefix, n); err != nil {
				t.Fatal(err)
			}
			conn.Close()
		}
		before := clitest.ReadyOf(t, env, names.DLQ)
		if before != n {
			t.Fatalf("the DLQ holds %d messages, want the %d seeded", before, n)
		}
		conc := []int{1, 2, 4}[rand.IntN(3)]
		state := t.TempDir()
		args := []string{"redrive", env.QueueRef(names.DLQ), "--to", "source", "--rate", "600", "--concurrency", strconv.Itoa(conc), "--yes", "--state-dir", state, "-o", "json"}
		victim := exec.Command(testenv.BuildBinary(t), args...)
		victim.Env = append(os.Environ(), testenv.EnvAMQPManagementURL+"="+env.ManagementURL)
		var verr bytes.Buffer
		victim.Stderr = &verr
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		at := before/10 + rand.IntN(before/2)
		deadline := time.Now().Add(2 * time.Minute)
		for before-clitest.ReadyOf(t, env, names.DLQ) < at {
			if time.Now().After(deadline) {
				t.Fatalf("the redrive made no progress: %s", verr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = victim.Wait()
		clitest.WaitNoUnacked(t, env, names.DLQ)
		_, unconfirmed := killedRunUnconfirmed(t, testenv.Env{}, state)
		bound := conc * 10
		if unconfirmed > bound {
			t.Errorf("the killed run's journal has %d unconfirmed sends; bound %d", unconfirmed, bound)
		}
		r := clitest.Run(t, testenv.Env{}, "", args...)
		if r.Code != 0 {
			t.Fatalf("resumed run: exit %d\n%s", r.Code, r.Stderr)
		}
		var rep crashReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Status != redrive.StatusCompleted {
			t.Fatalf("resumed run summary %q (%v)", r.Stdout, err)
		}
		if left := clitest.ReadyOf(t, env, names.DLQ); left != 0 {
			t.Fatalf("%d messages left in the DLQ", left)
		}
		// The copies went back to the orders queue (their first death's
		// route).
		byOrig := drainAMQPMarkers(t, env, names.Orders)
		dups := checkCrashReport(t, rep, r.Stderr, byOrig, before, unconfirmed, bound)
		resumedRunCounts(t, testenv.Env{}, state, rep.MaybeTwiceResent)
		t.Logf("trial %d: --concurrency %d, killed after %d of %d left the DLQ: %d unconfirmed in the journal, %d duplicate(s), %d reported (bound %d)", trial, conc, at, before, unconfirmed, dups, rep.MaybeTwiceResent, bound)
		totalDups += dups
		totalReported += rep.MaybeTwiceResent
	}
	t.Logf("%d trials: %d duplicates, all reported; %d reported in all", crashTrials(), totalDups, totalReported)
}

// TestRestoreKill9DuplicatesAreAllReported: a restore from an S3 archive to
// a standard queue runs the same mover and journal as a redrive: killed
// mid-send (the same 300 ms send latency) and run again, every copy that
// arrived twice is among the ids the re-run reports; the archive is read
// again whole, so nothing is "gone". Every other trial restores --to
// source (the DLQ's one source queue, found through the archived DLQ).
func TestRestoreKill9DuplicatesAreAllReported(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	penv, _ := clitest.Proxied(t, env, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.Latency, Delay: 300 * time.Millisecond})
	const n = 600
	dlq, dlqARN := clitest.CreateQueue(t, c, testenv.UniqueName(t, "rcrash"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, peerBody); err != nil {
		t.Fatal(err)
	}
	bucket := clitest.Bucket(t, env, "rcrash")
	ar := clitest.Run(t, env, "", "archive", dlq, "--to", "s3://"+bucket+"/x", "--yes", "-o", "json")
	var asum cmd.ArchiveSummary
	if err := json.Unmarshal([]byte(ar.Stdout), &asum); ar.Code != 0 || err != nil || asum.Manifest == "" {
		t.Fatalf("archive: exit %d (%v): %s", ar.Code, err, ar.Stderr)
	}
	src, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "rcrashs"), map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"100"}`, dlqARN)})
	totalDups, totalReported := 0, 0
	for trial := range crashTrials() {
		conc := []int{2, 4, 8}[rand.IntN(3)]
		dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "rcrashd"), nil)
		to := dest
		if trial%2 == 1 {
			dest, to = src, "source"
		}
		state := t.TempDir()
		args := []string{"restore", asum.Manifest, "--to", to, "--concurrency", strconv.Itoa(conc), "--yes", "--state-dir", state, "-o", "json"}
		victim := &peerProc{state: state}
		victim.cmd = clitest.BinCmd(t, penv, args...)
		victim.cmd.Stdout, victim.cmd.Stderr = &victim.stdout, &victim.stderr
		if err := victim.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		at := n/10 + rand.IntN(n/2)
		killWhen(t, victim, "the restore sent nothing within 3 minutes", func() bool {
			v, _ := clitest.QueueDepth(t, c, dest)
			return v >= at && journaledSends(state)
		})
		_, unconfirmed := killedRunUnconfirmed(t, env, state)
		bound := conc * 10
		if unconfirmed > bound {
			t.Errorf("the killed restore's journal has %d unconfirmed sends; bound %d", unconfirmed, bound)
		}
		r := clitest.Run(t, env, "", args...)
		if r.Code != 0 {
			t.Fatalf("restore again: exit %d\n%s", r.Code, r.Stderr)
		}
		var rep crashReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Status != redrive.StatusCompleted {
			t.Fatalf("restore summary %q (%v)", r.Stdout, err)
		}
		dups := checkCrashReport(t, rep, r.Stderr, drainMarkers(t, c, dest), n, unconfirmed, bound)
		resumedRunCounts(t, env, state, rep.MaybeTwiceResent)
		t.Logf("trial %d: --to %s --concurrency %d, killed after %d arrived: %d unconfirmed, %d duplicate(s), %d reported (bound %d)", trial, to, conc, at, unconfirmed, dups, rep.MaybeTwiceResent, bound)
		totalDups += dups
		totalReported += rep.MaybeTwiceResent
	}
	t.Logf("%d restore trials × %d messages: %d duplicates, all reported; %d reported in all", crashTrials(), n, totalDups, totalReported)
}
