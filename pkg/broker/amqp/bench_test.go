package amqp_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	redrivepkg "github.com/dlqctl/dlqctl/pkg/redrive"
)

// Redrive — the real engine (redrive.Run: pipeline workers, router,
// exact copies, journal with fsync, acknowledgement after the confirm) —
// against a bare loop (consume -> publish with a confirm window -> ack
// after the confirm), moving N dead letters back to their source queue.
// Both sides: the same prefetch (1000), the same confirm window (256:
// redrive's unpaced RabbitMQ batch is one window), the same concurrency
// (redrive workers, bare goroutines each with its own confirm channel over
// one consumer), a fresh seeded queue each, timed from the start to the
// N-th acknowledgement (redrive's end-of-run check, which waits for the
// management API's statistics, is measured apart: end-s). The sides run
// interleaved in pairs, the order alternating (A/B, B/A, …), after one
// uncounted warm-up pair, so both see
// the same load on a shared machine; the ratio reported is the median of
// the pairs' redrive/bare rates. Sizes from DLQCTL_AMQP_BENCH_N (default
// 10000), pairs from DLQCTL_AMQP_BENCH_PAIRS (default 5).
//
//	go test -run '^$' -bench RedriveVsBare -benchtime 1x -v ./pkg/broker/amqp/

const benchPrefetch, benchWindow = 1000, 256

func benchN() int { return envInt("DLQCTL_AMQP_BENCH_N", 10000) }

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchSeed(b *testing.B, r *rig, n int) amqpseed.Names {
	b.Helper()
	p := fmt.Sprintf("b%d", time.Now().UnixNano()%1e9)
	names, err := amqpseed.Seed(context.Background(), r.conn, amqpseed.Options{Prefix: p})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if ch, err := r.conn.Channel(); err == nil {
			amqpseed.Delete(ch, p)
			ch.Close()
		}
	})
	if err := amqpseed.Bulk(context.Background(), r.conn, p, n); err != nil {
		b.Fatal(err)
	}
	return names
}

// side is one timed move of n messages.
type side struct {
	moved   int64
	elapsed time.Duration // to the n-th acknowledgement
	cpu     time.Duration // user+sys of this process over the same span
	stall   time.Duration // the longest gap between two acknowledgements
	end     time.Duration // redrive: from the n-th acknowledgement to Run's return
	peak    uint64        // redrive: peak heap in use
	allocs  uint64        // heap allocations of this process over the run
}

func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ackClock records acknowledgements: the time of the n-th and the longest
// gap between two.
type ackClock struct {
	mu    sync.Mutex
	n     int64
	want  int64
	last  time.Time
	stall time.Duration
	done  chan struct{}
	at    time.Time
	cpu   time.Duration
}

func newAckClock(want int64) *ackClock {
	return &ackClock{want: want, last: time.Now(), done: make(chan struct{})}
}

func (c *ackClock) add(k int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.stall = max(c.stall, now.Sub(c.last))
	c.last = now
	before := c.n
	c.n += int64(k)
	if before < c.want && c.n >= c.want {
		c.at, c.cpu = now, cpuTime()
		close(c.done)
	}
}

func (c *ackClock) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// countingSource counts the engine's acknowledgements.
type countingSource struct {
	*amqp.Source
	clock *ackClock
}

func (s countingSource) Ack(ctx context.Context, msgs []broker.Message) []error {
	errs := s.Source.Ack(ctx, msgs)
	ok := 0
	for _, e := range errs {
		if e == nil {
			ok++
		}
	}
	s.clock.add(ok)
	return errs
}

// engineRedrive moves everything from the DLQ back to its source with
// redrive.Run, as 'dlqctl redrive DLQ --to source --concurrency workers'
// does when unpaced.
func engineRedrive(b *testing.B, ep *amqp.Endpoint, n, workers int) side {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, err := ep.OpenReader(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: time.Second, Decode: inspect.DecodeMarker, Lean: true})
	if err != nil {
		b.Fatal(err)
	}
	router, _ := ep.RouterToSource(ctx)
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close(context.Background())
	j, err := redrivepkg.CreateJournal(b.TempDir(), redrivepkg.RunMeta{ID: redrivepkg.NewRunID(time.Now()), Kind: "redrive", Source: ep.ID(), Destination: router.Describe(), Created: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	clock := newAckClock(int64(n))
	var peak atomic.Uint64
	stopPeak := make(chan struct{})
	go func() { // peak heap, sampled
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopPeak:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	defer close(stopPeak)
	m0, cpu0, start := mallocs(), cpuTime(), time.Now()
	res, err := redrivepkg.Run(ctx, countingSource{src, clock}, redrivepkg.Options{
		Publisher: pub, Journal: j, Router: router, Concurrency: workers,
		BatchEntries: benchWindow, BatchBytes: amqp.MaxBatchBytes,
		SourceCaps: ep.Capabilities(), Total: n,
	})
	ended, m1 := time.Now(), mallocs()
	if err := src.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-clock.done:
	default:
		b.Fatalf("redrive moved %d of %d: %s", res.Moved, n, res.Note)
	}
	return side{moved: int64(res.Moved), elapsed: clock.at.Sub(start), cpu: clock.cpu - cpu0, stall: clock.stall,
		end: ended.Sub(clock.at), peak: peak.Load(), allocs: m1 - m0}
}

// bareRedrive is the loop a user would write: consume with manual ack at
// the prefetch; `workers` goroutines take deliveries, each publishing on
// its own confirm channel to the first death's exchange and key, a window
// at a time, and acknowledging each delivery after its confirm.
func bareRedrive(b *testing.B, r *rig, dlq string, n, workers int) side {
	ctx := context.Background()
	conn, err := amqp.Dial(ctx, r.ref, amqp.ConnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	pconn, err := amqp.Dial(ctx, r.ref, amqp.ConnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer pconn.Close()
	cch, _ := conn.Channel()
	_ = cch.Qos(benchPrefetch, 0, false)
	clock := newAckClock(int64(n))
	m0, cpu0, start := mallocs(), cpuTime(), time.Now()
	ds, err := cch.Consume(dlq, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	errc := make(chan error, workers)
	for range workers {
		go func() {
			pch, err := pconn.Channel()
			if err == nil {
				err = pch.Confirm(false)
			}
			if err != nil {
				errc <- err
				return
			}
			defer pch.Close()
			type inflight struct {
				dc  *amqp091.DeferredConfirmation
				tag uint64
			}
			var win []inflight
			flush := func() {
				for _, f := range win {
					if f.dc.Wait() {
						_ = cch.Ack(f.tag, false)
						clock.add(1)
					}
				}
				win = win[:0]
			}
			for {
				// Take what has arrived; with publishes awaiting confirms and
				// nothing more at once, wait for the confirms (a window that
				// never fills would wait forever when workers × window
				// exceeds the prefetch).
				var d amqp091.Delivery
				select {
				case d = <-ds:
				default:
					if len(win) > 0 {
						select {
						case d = <-ds:
						case <-time.After(2 * time.Millisecond):
							flush()
							continue
						}
					} else {
						select {
						case d = <-ds:
						case <-clock.done:
							errc <- nil
							return
						case <-time.After(5 * time.Second):
							errc <- fmt.Errorf("bare: stalled at %d", clock.count())
							return
						}
					}
				}
				deaths := amqp.ParseDeaths(d.Headers)
				f, _ := deaths.First()
				h := amqp091.Table{}
				for k, v := range d.Headers {
					if !amqp.IsDeathHeader(k) {
						h[k] = v
					}
				}
				dc, err := pch.PublishWithDeferredConfirm(f.Exchange, f.RoutingKeys[0], true, false, amqp.CopyPublishing(d, h))
				if err != nil {
					errc <- err
					return
				}
				win = append(win, inflight{dc, d.DeliveryTag})
				if len(win) == benchWindow {
					flush()
				}
			}
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-clock.done:
	default:
		b.Fatalf("bare moved %d of %d", clock.n, n)
	}
	return side{moved: clock.n, elapsed: clock.at.Sub(start), cpu: clock.cpu - cpu0, stall: clock.stall, allocs: mallocs() - m0}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func BenchmarkRedriveVsBare(b *testing.B) {
	r := newRig(b)
	n, pairs := benchN(), envInt("DLQCTL_AMQP_BENCH_PAIRS", 5)
	{
		// Warm-up, not counted: the first run in a process pays for
		// connections, page faults and goroutine stacks on its own.
		a, bq := benchSeed(b, r, 1000), benchSeed(b, r, 1000)
		engineRedrive(b, r.endpointB(b, a.DLQ), 1000, 4)
		bareRedrive(b, r, bq.DLQ, 1000, 4)
	}
	// 8 is redrive's default --concurrency.
	for _, workers := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
			var ratios, engRates, bareRates, engCPU, bareCPU, engAllocs, bareAllocs, ends []float64
			var peak uint64
			var engStall, bareStall time.Duration
			for i := 0; i < b.N; i++ {
				for p := 0; p < pairs; p++ {
					// Fresh queues for both sides, seeded before either runs.
					a, bq := benchSeed(b, r, n), benchSeed(b, r, n)
					ep := r.endpointB(b, a.DLQ)
					var eng, bare side
					// Profile labels tell the sides apart in -cpuprofile:
					// go tool pprof -tagfocus side=redrive.
					runEng := func() {
						runtime.GC()
						pprof.Do(context.Background(), pprof.Labels("side", "redrive"), func(context.Context) { eng = engineRedrive(b, ep, n, workers) })
					}
					runBare := func() {
						runtime.GC()
						pprof.Do(context.Background(), pprof.Labels("side", "bare"), func(context.Context) { bare = bareRedrive(b, r, bq.DLQ, n, workers) })
					}
					if p%2 == 0 {
						runEng()
						runBare()
					} else {
						runBare()
						runEng()
					}
					er, br := float64(n)/eng.elapsed.Seconds(), float64(n)/bare.elapsed.Seconds()
					ratios = append(ratios, er/br)
					engRates, bareRates = append(engRates, er), append(bareRates, br)
					engCPU = append(engCPU, float64(eng.cpu.Microseconds())/float64(n))
					bareCPU = append(bareCPU, float64(bare.cpu.Microseconds())/float64(n))
					engAllocs = append(engAllocs, float64(eng.allocs)/float64(n))
					bareAllocs = append(bareAllocs, float64(bare.allocs)/float64(n))
					ends = append(ends, eng.end.Seconds())
					peak = max(peak, eng.peak)
					engStall, bareStall = max(engStall, eng.stall), max(bareStall, bare.stall)
					order := "redrive,bare"
					if p%2 == 1 {
						order = "bare,redrive"
					}
					b.Logf("pair %d (%s): redrive %.0f msg/s (%.1f µs CPU/msg, %.0f allocs/msg, longest gap %s), bare %.0f msg/s (%.1f µs CPU/msg, %.0f allocs/msg, longest gap %s): ratio %.2f",
						p+1, order, er, engCPU[len(engCPU)-1], engAllocs[len(engAllocs)-1], eng.stall.Round(time.Millisecond), br, bareCPU[len(bareCPU)-1], bareAllocs[len(bareAllocs)-1], bare.stall.Round(time.Millisecond), er/br)
				}
			}
			b.ReportMetric(median(ratios), "ratio")
			b.ReportMetric(median(engRates), "redrive-msg/s")
			b.ReportMetric(median(bareRates), "bare-msg/s")
			b.ReportMetric(median(engCPU), "redrive-cpu-µs/msg")
			b.ReportMetric(median(bareCPU), "bare-cpu-µs/msg")
			b.ReportMetric(median(engAllocs), "redrive-allocs/msg")
			b.ReportMetric(median(bareAllocs), "bare-allocs/msg")
			b.ReportMetric(median(ends), "end-s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(engStall.Seconds(), "redrive-max-gap-s")
			b.ReportMetric(bareStall.Seconds(), "bare-max-gap-s")
		})
	}
}

func (r *rig) endpointB(b *testing.B, queue string) *amqp.Endpoint {
	ref, err := broker.ParseRef(r.env.QueueRef(queue))
	if err != nil {
		b.Fatal(err)
	}
	ep, err := amqp.OpenEndpoint(context.Background(), ref, amqp.Config{ManagementURL: r.env.ManagementURL, Idle: 500 * time.Millisecond, Prefetch: benchPrefetch, ConfirmWindow: benchWindow})
	if err != nil {
		b.Fatal(err)
	}
	return ep
}
