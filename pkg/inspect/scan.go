package inspect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/queue"
)

// In-flight limits of SQS. The scan stops short of them (and says so) so it
// never makes the queue refuse receives for its real consumers.
const (
	inFlightLimitStandard = 120_000
	inFlightLimitFIFO     = 20_000
	inFlightHeadroom      = 10_000
)

// ScanOptions control a non-destructive read of a queue.
type ScanOptions struct {
	// Max is the number of distinct messages to read; 0 reads the whole queue.
	Max int
	// Visibility is how long each received message stays hidden between
	// heartbeats (default 30s).
	Visibility time.Duration
	// Workers is the number of concurrent receivers (default 4).
	Workers int
	// EmptyReceives is how many consecutive empty receives per worker end
	// the scan (default 2).
	EmptyReceives int
	// Wait is the long-poll wait of each receive (default 1s).
	Wait time.Duration
	// MaxHeld caps how many messages are held at once (default: below the
	// queue's in-flight limit).
	MaxHeld int
	// OnProgress is called after each receive with the distinct messages seen.
	OnProgress func(seen int)
}

// ScanResult summarises a scan.
type ScanResult struct {
	Seen       int          // distinct messages read
	Duplicates int          // messages received more than once (ignored)
	Depth      queue.Counts // depths when the scan began
	Complete   bool         // the whole queue was read
	Note       string       // why the scan stopped early, when it did
}

// Scan reads messages from q without consuming them: every message read is
// held invisible (with a lease heartbeat) until the scan ends, so each is
// seen once; duplicates are dropped by message id; at the end — also on
// errors and cancellation — everything is released (visibility 0). fn is
// called once per distinct message, from one goroutine at a time, with the
// parsed body (nil when not JSON) after Decode. Returning an error from fn
// stops the scan.
func Scan(ctx context.Context, c *queue.Client, q *queue.Queue, opt ScanOptions, fn func(m *queue.Message, parsed any) error) (res *ScanResult, err error) {
	if opt.Visibility <= 0 {
		opt.Visibility = 30 * time.Second
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	if opt.EmptyReceives <= 0 {
		opt.EmptyReceives = 2
	}
	if opt.Wait <= 0 {
		opt.Wait = time.Second
	}
	if opt.MaxHeld <= 0 {
		opt.MaxHeld = inFlightLimitStandard - inFlightHeadroom
		if q.FIFO {
			opt.MaxHeld = inFlightLimitFIFO - 2_000
		}
	}
	if opt.Max > 0 && opt.Max < opt.Workers*queue.MaxBatchEntries {
		opt.Workers = max(1, (opt.Max+queue.MaxBatchEntries-1)/queue.MaxBatchEntries)
	}
	res = &ScanResult{Depth: q.Counts()}
	lease := queue.NewLease(c, q, opt.Visibility)
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	go lease.Run(hbCtx)
	defer func() {
		stopHB()
		if rerr := lease.ReleaseAll(ctx); rerr != nil && err == nil {
			err = rerr
		}
	}()

	var (
		mu      sync.Mutex
		seen    = map[string]bool{}
		stop    bool
		fnErr   error
		limited bool
	)
	// targetReached reports whether the scan has read enough; callers hold mu.
	targetReached := func() bool {
		if opt.Max > 0 && res.Seen >= opt.Max {
			return true
		}
		if lease.Len() >= opt.MaxHeld {
			limited = true
			return true
		}
		return false
	}
	// Receives run on a context that the caller's cancellation does not
	// reach: a receive abandoned mid-flight would leave the messages it
	// returned invisible with nobody holding them. Workers check ctx and the
	// stop flag between receives instead, so everything received is held by
	// the lease and released at the end.
	rctx, cancelRecv := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRecv()
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stop || ctx.Err() != nil
	}
	var wg sync.WaitGroup
	var recvErr error
	var errOnce sync.Once
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			empty := 0
			for !stopped() {
				mu.Lock()
				done := stop || targetReached()
				want := queue.MaxBatchEntries
				if opt.Max > 0 {
					want = min(want, opt.Max-res.Seen)
				}
				mu.Unlock()
				if done || want <= 0 {
					return
				}
				msgs, err := c.Receive(rctx, q, want, opt.Visibility, opt.Wait)
				if err != nil && isOverLimit(err) {
					// The queue's in-flight limit: keep what was read as a
					// bounded sample (the emulator also answers this when
					// ~120k messages are merely visible).
					mu.Lock()
					limited, stop = true, true
					mu.Unlock()
					return
				}
				if err != nil {
					errOnce.Do(func() { recvErr = err })
					mu.Lock()
					stop = true
					mu.Unlock()
					return
				}
				// The lease keeps only what it needs to extend and release,
				// so a full scan holds receipt handles, not bodies.
				for _, m := range msgs {
					lease.Add(&queue.Message{Record: queue.Record{MessageID: m.MessageID}, ReceiptHandle: m.ReceiptHandle, ReceivedAt: m.ReceivedAt})
				}
				if len(msgs) == 0 {
					empty++
					if empty >= opt.EmptyReceives {
						return
					}
					continue
				}
				empty = 0
				mu.Lock()
				for _, m := range msgs {
					if stop {
						break
					}
					if seen[m.MessageID] {
						res.Duplicates++
						continue
					}
					if opt.Max > 0 && res.Seen >= opt.Max {
						break
					}
					seen[m.MessageID] = true
					res.Seen++
					parsed := Decode(&m.Record)
					if err := fn(m, parsed); err != nil {
						fnErr = err
						stop = true
						break
					}
				}
				if opt.OnProgress != nil {
					opt.OnProgress(res.Seen)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	switch {
	case fnErr != nil:
		return res, fnErr
	case ctx.Err() != nil:
		return res, ctx.Err()
	case recvErr != nil:
		return res, recvErr
	}
	if lost := lease.Lost(); lost > 0 {
		return res, errors.New("some messages' visibility could not be extended during the scan; they may have been counted twice")
	}
	switch {
	case limited && res.Seen == 0:
		return res, fmt.Errorf("%s refuses receives: its in-flight limit is reached (OverLimit), so no message could be read; wait until its consumers release messages or work from an archive with --from", q.Name)
	case limited:
		res.Note = "stopped at the in-flight limit: this is a bounded sample of a very large queue"
	case opt.Max > 0 && res.Seen >= opt.Max:
		res.Note = "sample"
	default:
		res.Complete = true
	}
	return res, nil
}

// isOverLimit reports whether err is SQS's OverLimit error (too many
// messages in flight).
func isOverLimit(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "OverLimit"
}
