package amqp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	redrivepkg "github.com/dlqctl/dlqctl/pkg/redrive"
)

// Redrive — the real engine (redrive.Run: pipeline workers, router,
// exact copies, journal with fsync, acknowledgement after the confirm) —
// against bare loops (consume -> publish with a confirm window -> ack
// after the confirm), moving N dead letters back to their source queue.
// Every side: the same prefetch (1000), the same confirm window (256;
// redrive's unpaced batch is at most one window, amqp.UnpacedBatch: 256
// for 1 worker, 125 for 4, 62 for 8), the same concurrency
// (redrive workers, bare goroutines each with its own confirm channel over
// one consumer), a fresh seeded queue each, timed from the start to the
// N-th acknowledgement (redrive's end-of-run check, which waits for the
// management API's statistics, is measured apart: end-s).
//
// The bare loops differ only in what they publish:
//
//   - bare: each delivery as it came (body, properties and headers,
//     x-death included) to its first death's exchange and routing key —
//     the loop people write, and what a shovel does. The bar's reference.
//   - stripped: the same without the dead-lettering headers (x-death,
//     x-first-death-*, x-last-death-*), which redrive strips too; with
//     nothing in their place it publishes about 300 bytes less per message
//     than either redrive or bare (redrive keeps the history and its
//     marker: dlqctl-death-history, dlqctl-redrive).
//   - samecopy: redrive's own copy (amqp.Republish), so redrive/samecopy
//     is what the engine costs beyond the bytes it publishes.
//
// Sides run one after the other in a rotating order (round r starts with
// side r mod 4: each side runs in each position once per four rounds),
// all four queues seeded before the first runs, and the node given
// benchSettle to finish writing the seeded messages: without it the side
// that ran first was about 20% slower, whichever it was. Each round
// deletes its queues (and the messages moved) when it ends. The ratios
// reported are the medians of the rounds' ratios. With the node's pid
// (scripts/stack.sh's rabbitmq/rabbit.pid) readable, each side's broker
// CPU per message is reported too: on this 2-core machine the broker, not
// the client, is what a side waits for. Sizes from DLQCTL_AMQP_BENCH_N
// (default 10000), rounds from DLQCTL_AMQP_BENCH_ROUNDS (default 4),
// worker counts from DLQCTL_AMQP_BENCH_WORKERS (default 1,4,8).
//
//	go test -run '^$' -bench RedriveVsBare -benchtime 1x -v ./pkg/broker/amqp/

const benchPrefetch, benchWindow = 1000, 256

func benchWorkers() []int {
	var ws []int
	for _, f := range strings.Split(os.Getenv("DLQCTL_AMQP_BENCH_WORKERS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			ws = append(ws, n)
		}
	}
	if len(ws) == 0 {
		ws = []int{1, 4, 8} // 8 is redrive's default --concurrency
	}
	return ws
}

func benchN() int { return envInt("DLQCTL_AMQP_BENCH_N", 10000) }

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchSeed(b *testing.B, r *rig, n int) amqpseed.Names {
	names, _ := benchSeedDrop(b, r, n)
	return names
}

// benchSeedDrop seeds a fresh DLQ of n dead letters and returns drop,
// which deletes its queues and exchanges (messages moved back included):
// a round drops what it seeded, so the node holds no more than one
// round's messages (with 300,000 left in queues it ran about 40% slower
// per message by the eighth round).
func benchSeedDrop(b *testing.B, r *rig, n int) (amqpseed.Names, func()) {
	b.Helper()
	p := fmt.Sprintf("b%d", time.Now().UnixNano()%1e9)
	names, err := amqpseed.Seed(context.Background(), r.conn, amqpseed.Options{Prefix: p})
	if err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	drop := func() {
		once.Do(func() {
			if ch, err := r.conn.Channel(); err == nil {
				amqpseed.Delete(ch, p)
				ch.Close()
			}
		})
	}
	b.Cleanup(drop)
	if err := amqpseed.Bulk(context.Background(), r.conn, p, n); err != nil {
		b.Fatal(err)
	}
	return names, drop
}

// side is one timed move of n messages.
type side struct {
	moved   int64
	elapsed time.Duration // to the n-th acknowledgement
	cpu     time.Duration // user+sys of this process over the same span
	broker  time.Duration // the RabbitMQ node's user+sys over the same span (0: pid unknown)
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
	// broker: the node's CPU time at the n-th acknowledgement (0 when its
	// pid is unknown).
	broker time.Duration
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
		c.broker, _ = brokerCPU()
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
	broker0, _ := brokerCPU()
	res, err := redrivepkg.Run(ctx, countingSource{src, clock}, redrivepkg.Options{
		Publisher: pub, Journal: j, Router: router, Concurrency: workers,
		BatchEntries: amqp.UnpacedBatch(amqp.Config{Prefetch: benchPrefetch, ConfirmWindow: benchWindow}, workers, 0), BatchBytes: amqp.MaxBatchBytes,
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
	return side{moved: int64(res.Moved), elapsed: clock.at.Sub(start), cpu: clock.cpu - cpu0, broker: clock.broker - broker0, stall: clock.stall,
		end: ended.Sub(clock.at), peak: peak.Load(), allocs: m1 - m0}
}

// copyFunc is what a bare loop publishes for a delivery.
type copyFunc func(d amqp091.Delivery) (amqp091.Publishing, error)

// asItCame publishes the delivery as it came, x-death and all.
func asItCame(d amqp091.Delivery) (amqp091.Publishing, error) {
	return amqp.CopyPublishing(d, nil), nil
}

// withoutDeaths publishes the delivery without its dead-lettering headers.
func withoutDeaths(d amqp091.Delivery) (amqp091.Publishing, error) {
	h := make(amqp091.Table, len(d.Headers))
	for k, v := range d.Headers {
		if !amqp.IsDeathHeader(k) {
			h[k] = v
		}
	}
	return amqp.CopyPublishing(d, h), nil
}

// redriveCopy publishes what redrive publishes: amqp.Republish's copy.
func redriveCopy(runID string) copyFunc {
	return func(d amqp091.Delivery) (amqp091.Publishing, error) {
		m := amqp.Message{Delivery: d, Deaths: amqp.ParseDeaths(d.Headers)}
		route, err := amqp.SourceRoute(m)
		if err != nil {
			return amqp091.Publishing{}, err
		}
		p, err := amqp.Republish(m, route, d.MessageId, amqp.RepublishOptions{RunID: runID, Now: time.Now()})
		return p.Msg, err
	}
}

// bareRedrive is the loop a user would write: consume with manual ack at
// the prefetch; `workers` goroutines take deliveries, each publishing
// copyOf(delivery) on its own confirm channel to the first death's
// exchange and key, a window at a time, and acknowledging each delivery
// after its confirm.
func bareRedrive(b *testing.B, r *rig, dlq string, n, workers int, copyOf copyFunc) side {
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
	broker0, _ := brokerCPU()
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
				f, _ := amqp.ParseDeaths(d.Headers).First()
				msg, err := copyOf(d)
				if err != nil {
					errc <- err
					return
				}
				dc, err := pch.PublishWithDeferredConfirm(f.Exchange, f.RoutingKeys[0], true, false, msg)
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
	return side{moved: clock.n, elapsed: clock.at.Sub(start), cpu: clock.cpu - cpu0, broker: clock.broker - broker0, stall: clock.stall, allocs: mallocs() - m0}
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

// benchSettle is how long the node is left to finish writing the seeded
// messages before a round's first side runs.
const benchSettle = 2 * time.Second

// brokerCPU returns the RabbitMQ node's CPU time (user+sys) so far, and
// false when its pid is not known (scripts/stack.sh writes it).
func brokerCPU() (time.Duration, bool) {
	dir := os.Getenv("DLQCTL_STACK_DIR")
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return 0, false
		}
		dir = filepath.Join(root, ".stack")
	}
	pid, err := os.ReadFile(filepath.Join(dir, "rabbitmq", "rabbit.pid"))
	if err != nil {
		return 0, false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "stat"))
	if err != nil {
		return 0, false
	}
	// The fields after the command (which may hold spaces) in parentheses:
	// utime and stime are the 14th and 15th of the line, in clock ticks
	// (100 a second on Linux).
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * 10 * time.Millisecond, true
}

// benchSides are the sides of a round, in the order of round 0.
var benchSides = []string{"redrive", "bare", "stripped", "samecopy"}

func BenchmarkRedriveVsBare(b *testing.B) {
	r := newRig(b)
	n, rounds := benchN(), envInt("DLQCTL_AMQP_BENCH_ROUNDS", 4)
	{
		// Warm-up, not counted: the first run in a process pays for
		// connections, page faults and goroutine stacks on its own.
		a, bq := benchSeed(b, r, 1000), benchSeed(b, r, 1000)
		engineRedrive(b, r.endpointB(b, a.DLQ), 1000, 4)
		bareRedrive(b, r, bq.DLQ, 1000, 4, asItCame)
	}
	for _, workers := range benchWorkers() {
		b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
			rates := map[string][]float64{}
			cpu := map[string][]float64{}
			allocs := map[string][]float64{}
			broker := map[string][]float64{}
			ratios := map[string][]float64{}
			var ends []float64
			var peak uint64
			stalls := map[string]time.Duration{}
			for i := 0; i < b.N; i++ {
				for round := 0; round < rounds; round++ {
					// Fresh queues for every side, seeded before any runs.
					dlqs := map[string]string{}
					var drops []func()
					for _, name := range benchSides {
						names, drop := benchSeedDrop(b, r, n)
						dlqs[name], drops = names.DLQ, append(drops, drop)
					}
					ep := r.endpointB(b, dlqs["redrive"])
					time.Sleep(benchSettle)
					res := map[string]side{}
					var order []string
					for k := range benchSides {
						name := benchSides[(round+k)%len(benchSides)]
						order = append(order, name)
						runtime.GC()
						// Profile labels tell the sides apart in -cpuprofile:
						// go tool pprof -tagfocus side=redrive.
						pprof.Do(context.Background(), pprof.Labels("side", name), func(context.Context) {
							switch name {
							case "redrive":
								res[name] = engineRedrive(b, ep, n, workers)
							case "bare":
								res[name] = bareRedrive(b, r, dlqs[name], n, workers, asItCame)
							case "stripped":
								res[name] = bareRedrive(b, r, dlqs[name], n, workers, withoutDeaths)
							case "samecopy":
								res[name] = bareRedrive(b, r, dlqs[name], n, workers, redriveCopy(redrivepkg.NewRunID(time.Now())))
							}
						})
						if sd := res[name]; sd.broker > 0 {
							broker[name] = append(broker[name], float64(sd.broker.Microseconds())/float64(n))
						}
					}
					line := fmt.Sprintf("round %d (%s):", round+1, strings.Join(order, ","))
					for _, name := range benchSides {
						sd := res[name]
						rate := float64(n) / sd.elapsed.Seconds()
						rates[name] = append(rates[name], rate)
						cpu[name] = append(cpu[name], float64(sd.cpu.Microseconds())/float64(n))
						allocs[name] = append(allocs[name], float64(sd.allocs)/float64(n))
						stalls[name] = max(stalls[name], sd.stall)
						line += fmt.Sprintf(" %s %.0f msg/s (client %.1f µs CPU/msg", name, rate, cpu[name][len(cpu[name])-1])
						if bs := broker[name]; len(bs) > 0 {
							line += fmt.Sprintf(", broker %.0f", bs[len(bs)-1])
						}
						line += ");"
					}
					eng := res["redrive"]
					ends = append(ends, eng.end.Seconds())
					peak = max(peak, eng.peak)
					er := float64(n) / eng.elapsed.Seconds()
					for _, name := range benchSides[1:] {
						ratio := er / (float64(n) / res[name].elapsed.Seconds())
						ratios[name] = append(ratios[name], ratio)
						line += fmt.Sprintf(" redrive/%s %.2f", name, ratio)
					}
					b.Log(line)
					for _, drop := range drops {
						drop()
					}
				}
			}
			b.ReportMetric(median(ratios["bare"]), "ratio")
			b.ReportMetric(median(ratios["stripped"]), "ratio-vs-stripped")
			b.ReportMetric(median(ratios["samecopy"]), "ratio-vs-samecopy")
			for _, name := range benchSides {
				b.ReportMetric(median(rates[name]), name+"-msg/s")
				b.ReportMetric(median(cpu[name]), name+"-cpu-µs/msg")
				b.ReportMetric(median(allocs[name]), name+"-allocs/msg")
				if len(broker[name]) > 0 {
					b.ReportMetric(median(broker[name]), name+"-broker-cpu-µs/msg")
				}
				b.ReportMetric(stalls[name].Seconds(), name+"-max-gap-s")
			}
			b.ReportMetric(median(ends), "end-s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
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
