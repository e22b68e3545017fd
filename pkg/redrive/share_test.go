package redrive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/sqsfake"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestShareRateAndRamp: the I-th of N paces itself at 1/N of the budget.
func TestShareRateAndRamp(t *testing.T) {
	sh := redrive.Share{I: 3, N: 4}
	if sh.Rate(100) != 25 || sh.Rate(0) != 0 || fmt.Sprint(sh.Ramp([]float64{4, 40, 400})) != "[1 10 100]" || sh.String() != "3/4" {
		t.Fatalf("share %s: rate %g, ramp %v", sh, sh.Rate(100), sh.Ramp([]float64{4, 40, 400}))
	}
	alone := redrive.Share{}
	if alone.Rate(100) != 100 || alone.Shared() || alone.String() != "" || (redrive.Share{I: 1, N: 1}).Shared() {
		t.Fatal("a run alone must keep the whole budget")
	}
}

// TestShareSplitsAnArchive: every record falls into exactly one of the N
// shares, each share gets a fair part, and a FIFO group stays whole (one
// process sends it, in archive order).
func TestShareSplitsAnArchive(t *testing.T) {
	const n, N = 4000, 4
	per := make([]int, N)
	for k := range n {
		r := &record.Record{MessageID: fmt.Sprintf("0c5c1f2e-%08d", k)}
		owners := 0
		for i := 1; i <= N; i++ {
			if (redrive.Share{I: i, N: N}).Mine(r) {
				owners++
				per[i-1]++
			}
		}
		if owners != 1 {
			t.Fatalf("%s falls into %d shares", r.MessageID, owners)
		}
	}
	for i, c := range per {
		if c < n/N*8/10 || c > n/N*12/10 {
			t.Fatalf("share %d/%d holds %d of %d records: %v", i+1, N, c, n, per)
		}
	}
	for g := range 50 {
		var owner int
		for k := range 20 {
			r := &record.Record{MessageID: fmt.Sprintf("m-%d-%d", g, k), System: record.System{MessageGroupID: fmt.Sprintf("tenant-%d", g)}}
			for i := 1; i <= N; i++ {
				if (redrive.Share{I: i, N: N}).Mine(r) {
					if k > 0 && owner != i {
						t.Fatalf("group tenant-%d is split between shares %d and %d", g, owner, i)
					}
					owner = i
				}
			}
		}
	}
}

// TestSharedRunCountsPeersReturns: a DLQ holds 20 messages, 5 of them
// moved a moment ago by a peer of the run (another run id) and back, one
// moved an hour ago by an earlier run. A process of a shared run keeps the
// peers' 5 as returned during this redrive (it does not move them again,
// and its returns guard counts them: each peer sees about 1/N of the
// returns); the old one and the rest it moves. The same run alone moves
// all 20: only its own run's markers are its returns.
func TestSharedRunCountsPeersReturns(t *testing.T) {
	for _, share := range []redrive.Share{{I: 1, N: 2}, {}} {
		t.Run("share="+share.String(), func(t *testing.T) {
			f := sqsfake.New(sqsfake.Options{})
			c := sqs.New(f, "us-east-1")
			dlqURL := f.AddQueue("orders-dlq", false, nil)
			destURL := f.AddQueue("orders", false, nil)
			marker := func(run string, at time.Time) map[string]types.MessageAttributeValue {
				b, _ := json.Marshal(record.Marker{RunID: run, OriginalID: "orig", Count: 1, At: at.UTC().Truncate(time.Second)})
				return map[string]types.MessageAttributeValue{record.MarkerAttribute: {DataType: aws.String("String"), StringValue: aws.String(string(b))}}
			}
			var msgs []sqsfake.Message
			for i := range 20 {
				m := sqsfake.Message{ID: fmt.Sprintf("id-%02d", i), Body: fmt.Sprintf(`{"n":%d}`, i)}
				switch {
				case i < 5:
					m.Attributes = marker("20261201T050000-peer01", time.Now())
				case i == 5:
					m.Attributes = marker("20261201T030000-old001", time.Now().Add(-time.Hour))
				}
				msgs = append(msgs, m)
			}
			f.Send(dlqURL, msgs...)
			ctx := context.Background()
			dlq, dest, j := fakeRedrive(t, c, dlqURL, destURL)
			src := newUnselectedQueueSource(c, dlq, 30*time.Second, time.Second)
			res, err := redrive.Run(ctx, src, redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(dest), Share: share, Concurrency: 2})
			_ = src.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if share.Shared() {
				if res.Moved != 15 || res.Returned != 5 || res.Skipped[redrive.SkipReturned] != 5 || res.Share != "1/2" {
					t.Fatalf("shared run: moved %d, returned %d, skipped %v; want 15 moved and the peer's 5 kept as returns", res.Moved, res.Returned, res.Skipped)
				}
			} else if res.Moved != 20 || res.Returned != 0 {
				t.Fatalf("single run: moved %d, returned %d; want all 20 moved", res.Moved, res.Returned)
			}
			if got := f.Counts(destURL).Visible; got != res.Moved {
				t.Fatalf("destination holds %d, moved %d", got, res.Moved)
			}
		})
	}
}

// TestARunIsUsedByOneProcessAtATime: while a process has a run's journal
// open, another cannot open it (the same command started twice on one
// --state-dir would otherwise resume a live run: two writers, each missing
// what the other sent) — a clear bad-input error; once the first closes it
// (or dies: the kernel drops the lock), it can.
func TestARunIsUsedByOneProcessAtATime(t *testing.T) {
	dir := t.TempDir()
	j, err := redrive.CreateJournal(dir, redrive.RunMeta{ID: "20261201T050000-aaaaaa", Kind: "redrive", Fingerprint: "fp", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = redrive.OpenJournal(dir, "20261201T050000-aaaaaa")
	if err == nil || errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "in use by another dlqctl process") {
		t.Fatalf("opening a run in use: %v; want exit 2 saying it is in use", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := redrive.OpenJournal(dir, "20261201T050000-aaaaaa")
	if err != nil {
		t.Fatalf("after the first closed it: %v", err)
	}
	j2.Close()
}

// TestSharedRunsGiveAMessageOneFIFODedupID: after a kill -9, a peer may
// receive a message that the dead process had already sent and send it
// again. The processes of a shared run share the deduplication key (the
// command's fingerprint, set by Execute), so a FIFO destination drops the
// second copy within its 5-minute window; runs with their own keys (the run
// ids) would both be delivered.
func TestSharedRunsGiveAMessageOneFIFODedupID(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			f := sqsfake.New(sqsfake.Options{})
			c := sqs.New(f, "us-east-1")
			destURL := f.AddQueue("orders.fifo", true, nil)
			ctx := context.Background()
			dest, _ := c.Resolve(ctx, destURL)
			for attempt := range 2 { // the same DLQ message (id m-1), moved by two processes
				// (the fake cannot put a deleted id back: each attempt reads
				// its own copy of the DLQ)
				dlqURL := f.AddQueue(fmt.Sprintf("orders-dlq-%d.fifo", attempt), true, nil)
				dlq, _ := c.Resolve(ctx, dlqURL)
				f.Send(dlqURL, sqsfake.Message{ID: "m-1", Body: `{"n":1}`, GroupID: "g1"})
				j, err := redrive.CreateJournal(t.TempDir(), redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Created: time.Now()})
				if err != nil {
					t.Fatal(err)
				}
				src := newUnselectedQueueSource(c, dlq, 30*time.Second, time.Second)
				opt := redrive.Options{Publisher: sqs.NewPublisher(c), SourceCaps: capsOf(src), Journal: j, Router: sqs.ToQueue(dest), Concurrency: 1}
				if shared {
					opt.Share, opt.DedupKey = redrive.Share{I: attempt + 1, N: 2}, "shared\x00fingerprint"
				}
				res, err := redrive.Run(ctx, src, opt)
				_ = src.Close(ctx)
				j.Close()
				if err != nil || res.Moved != 1 {
					t.Fatalf("process %d: moved %d, %v", attempt+1, res.Moved, err)
				}
			}
			want := 2
			if shared {
				want = 1
			}
			if got := f.Counts(destURL).Visible; got != want {
				t.Fatalf("the FIFO destination holds %d copies, want %d", got, want)
			}
		})
	}
}
