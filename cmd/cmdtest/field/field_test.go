package field

// The field, not the lab: AWS is tens of milliseconds away and sometimes
// loses the answer to a call it carried out. These tests put
// internal/faultproxy between dlqctl and local-aws-sqs.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestTenThousandMessagesOverAFortyMillisecondLink: group --all, archive
// and redrive of 10,000 messages with 40 ms added to every SQS call. (It
// held 20,000 until the suite ran on loaded 2-core machines: local-aws-sqs
// changes a message's visibility with a scan of the whole queue, so
// heartbeats over 20,000 held messages cost it seconds of CPU a pass and
// fell behind the visibility timeout — an emulator cost AWS does not have.
// internal/procbench measures 20,000 and more.)
func TestTenThousandMessagesOverAFortyMillisecondLink(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 10,000 messages over a slow link")
	}
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 10_000
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lat"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "latd"), nil)
	if err := seed.FillDLQ(t.Context(), c, dlq, n, func(i int) string { return fmt.Sprintf(`{"order":"o-%05d"}`, i) }); err != nil {
		t.Fatal(err)
	}
	slow, _ := clitest.Proxied(t, env, faultproxy.Fault{Kind: faultproxy.Latency, Delay: 40 * time.Millisecond})

	// A full read holds all 10,000 messages: heartbeats and the release at
	// the end run in concurrent batches, so nothing falls behind the
	// visibility timeout and nothing stays invisible.
	start := time.Now()
	phase := func(name string) {
		t.Logf("%s: %s", name, time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	phase("seed")
	r := clitest.Run(t, slow, "", "group", dlq, "--by", "shape", "--all", "-o", "json")
	phase("group --all")
	if r.Code != 0 {
		t.Fatalf("group --all over 40 ms: exit %d\n%s", r.Code, r.Stderr)
	}
	var rep struct {
		Read     int  `json:"read"`
		Complete bool `json:"complete"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Read != n || !rep.Complete {
		t.Fatalf("group --all read %d (complete %v), want all %d: %v\n%s", rep.Read, rep.Complete, n, err, r.Stderr)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v != n || f != 0 {
		t.Fatalf("after group: %d visible, %d in flight; want %d, 0", v, f, n)
	}

	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "lat"), "_", "-"))
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r = clitest.Run(t, slow, "", "archive", dlq, "--to", "s3://"+bucket+"/p", "--yes", "--visibility", "2m", "-o", "json")
	phase("archive")
	if r.Code != 0 {
		t.Fatalf("archive over 40 ms: exit %d\n%s", r.Code, r.Stderr)
	}
	if m := clitest.ArchiveManifest(t, env, bucket); !m.Complete || m.Totals.Records != n {
		t.Fatalf("archive manifest: complete=%v records=%d, want %d", m.Complete, m.Totals.Records, n)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v != n || f != 0 {
		t.Fatalf("after archive (no --delete): %d visible, %d in flight; want %d, 0", v, f, n)
	}

	start = time.Now()
	r = clitest.Run(t, slow, "", "redrive", dlq, "--to", dest, "--yes", "-o", "json")
	phase("redrive")
	if r.Code != 0 {
		t.Fatalf("redrive over 40 ms: exit %d\n%s", r.Code, r.Stderr)
	}
	if v, f := clitest.SettledDepth(t, c, dlq); v+f != 0 {
		t.Fatalf("after redrive the DLQ holds %d visible, %d in flight", v, f)
	}
	if v, _ := clitest.QueueDepth(t, c, dest); v != n {
		t.Fatalf("destination holds %d, want %d", v, n)
	}
}

// TestLostReceivesAreWaitedForOrReported: a ReceiveMessage that reached SQS
// but whose answer was lost leaves its messages in flight with nobody
// holding them. A redrive waits for them to come back (--wait-inflight,
// the default) and moves them; with --wait-inflight=false it reports them
// and exits 4. Never "completed" with messages left behind.
func TestLostReceivesAreWaitedForOrReported(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	const n = 2020
	for _, wait := range []bool{true, false} {
		t.Run(fmt.Sprintf("wait-inflight=%v", wait), func(t *testing.T) {
			dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lost"), nil)
			dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "lostd"), nil)
			if err := seed.FillDLQ(t.Context(), c, dlq, n, func(i int) string { return fmt.Sprintf(`{"n":%d}`, i) }); err != nil {
				t.Fatal(err)
			}
			penv, p := clitest.Proxied(t, env, faultproxy.LostReceives(9, 6))
			// Lost messages come back after the run's visibility: 5 s when
			// the run waits for them; 12 s when it does not, so that they
			// are still away when it ends even on a slow, loaded machine.
			vis := 5 * time.Second
			if !wait {
				vis = 12 * time.Second
			}
			began := time.Now()
			r := clitest.Run(t, penv, "", "redrive", dlq, "--to", dest, "--yes", "--visibility", vis.String(),
				fmt.Sprintf("--wait-inflight=%v", wait), "-o", "json")
			took := time.Since(began)
			lost := p.Stats().LostReceivedMessages
			if lost == 0 {
				t.Fatal("the proxy lost no received message; the test proves nothing")
			}
			var sum struct {
				Status            string `json:"status"`
				Moved             int    `json:"moved"`
				InFlightElsewhere int    `json:"in_flight_elsewhere"`
			}
			_ = json.Unmarshal([]byte(r.Stdout), &sum)
			if wait {
				if r.Code != 0 || sum.Moved != n {
					t.Fatalf("with --wait-inflight: exit %d, moved %d of %d (%d lost in receives)\n%s\n%s", r.Code, sum.Moved, n, lost, r.Stdout, r.Stderr)
				}
			} else {
				if took >= vis && r.Code == 0 && sum.Moved == n {
					// The run outlasted the visibility: the lost messages
					// came back during it and were moved — right, but not
					// what this case is about.
					t.Skipf("the run took %s, longer than the %s visibility: the lost messages came back and were moved", took.Round(time.Second), vis)
				}
				if r.Code != 4 || sum.Status == "completed" || sum.InFlightElsewhere == 0 {
					t.Fatalf("with --wait-inflight=false: exit %d, status %q, in flight elsewhere %d; want 4, partial, >0 (%d lost in receives)\n%s", r.Code, sum.Status, sum.InFlightElsewhere, lost, r.Stderr)
				}
				if !strings.Contains(r.Stderr, "in flight elsewhere") {
					t.Errorf("stderr does not name the messages in flight elsewhere:\n%s", r.Stderr)
				}
				// Nothing lost: once their visibility ends, what was not
				// moved is back in the DLQ.
				deadline := time.Now().Add(vis + 10*time.Second)
				for {
					if _, f := clitest.QueueDepth(t, c, dlq); f == 0 || time.Now().After(deadline) {
						break
					}
					time.Sleep(250 * time.Millisecond)
				}
			}
			dv, df := clitest.SettledDepth(t, c, dlq)
			mv, _ := clitest.QueueDepth(t, c, dest)
			if dv+df+mv != n || mv != sum.Moved {
				t.Fatalf("DLQ %d visible + %d in flight, destination %d, moved %d: want %d in all and the destination = moved", dv, df, mv, sum.Moved, n)
			}
		})
	}
}
