package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Redrive through the broker seam (Source -> Router -> Prepare -> Publish
// -> Ack, what the engine drives) against a bare loop (consume -> publish
// with a confirm window -> ack after the confirm), same prefetch and
// confirm window, moving DLQ messages back to their source queue. Sizes
// from DLQCTL_AMQP_BENCH_N (default 10000).
//
//	go test -run '^$' -bench RedriveVsBare -benchtime 1x ./pkg/broker/amqp/

const benchPrefetch, benchWindow = 1000, 256

func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("DLQCTL_AMQP_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 10000
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

// seamRedrive moves everything from the DLQ back through the broker seam
// with `workers` goroutines sharing one source and one publisher.
func seamRedrive(b *testing.B, ep *amqp.Endpoint, workers int) (int64, uint64) {
	ctx := context.Background()
	src, err := ep.OpenSource(ctx, broker.SourceOptions{Mode: broker.Consume, Wait: 500 * time.Millisecond,
		Decode: func(r *record.Record) any { return inspect.DecodeMarker(r) }})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close(ctx)
	router, _ := ep.RouterToSource(ctx)
	pub, err := ep.OpenPublisher(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close(ctx)
	var moved atomic.Int64
	var peak atomic.Uint64
	done := make(chan error, workers)
	for range workers {
		go func() {
			for {
				ms, err := src.Next(ctx, amqp.MaxBatchEntries)
				if errors.Is(err, broker.ErrSourceDone) || err == nil && len(ms) == 0 && drained(b, src) {
					done <- nil
					return
				}
				if err != nil {
					done <- err
					return
				}
				groups := map[string][]int{}
				dests := map[string]broker.Destination{}
				outs := make([]broker.Outgoing, len(ms))
				for i, m := range ms {
					d, skip, err := router.Route(ctx, m.Record)
					if err != nil || skip != "" {
						done <- fmt.Errorf("route: %v %s", err, skip)
						return
					}
					o, skip := pub.Prepare(m.Record, d, broker.CopyOptions{RunID: "bench", Now: time.Now()})
					if skip != "" {
						done <- errors.New(skip)
						return
					}
					outs[i] = o
					groups[d.Key] = append(groups[d.Key], i)
					dests[d.Key] = d
				}
				for k, idx := range groups {
					batch := make([]broker.Outgoing, len(idx))
					for j, i := range idx {
						batch[j] = outs[i]
					}
					res, err := pub.Publish(ctx, dests[k], batch)
					if err != nil {
						done <- err
						return
					}
					var ack []broker.Message
					for j, i := range idx {
						if res[j].Err == nil {
							ack = append(ack, ms[i])
						}
					}
					for _, e := range src.Ack(ctx, ack) {
						if e != nil {
							done <- e
							return
						}
					}
					moved.Add(int64(len(ack)))
				}
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	return moved.Load(), peak.Load()
}

// bareRedrive is the loop a user would write: consume with manual ack,
// publish each to its first death's exchange and key with a confirm
// window, ack each delivery after its confirm.
func bareRedrive(b *testing.B, r *rig, dlq string, n int) int64 {
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
	ds, err := cch.Consume(dlq, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	pch, _ := pconn.Channel()
	_ = pch.Confirm(false)
	type inflight struct {
		dc  *amqp091.DeferredConfirmation
		tag uint64
	}
	var win []inflight
	var moved int64
	flush := func() {
		for _, f := range win {
			if f.dc.Wait() {
				_ = cch.Ack(f.tag, false)
				moved++
			}
		}
		win = win[:0]
	}
	for moved+int64(len(win)) < int64(n) {
		var d amqp091.Delivery
		select {
		case d = <-ds:
		case <-time.After(5 * time.Second):
			b.Fatalf("bare: stalled at %d", moved)
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
			b.Fatal(err)
		}
		win = append(win, inflight{dc, d.DeliveryTag})
		if len(win) == benchWindow {
			flush()
		}
	}
	flush()
	return moved
}

func BenchmarkRedriveVsBare(b *testing.B) {
	r := newRig(b)
	n := benchN()
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
			var seamRate, bareRate float64
			var peak uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				names := benchSeed(b, r, n)
				ep := r.endpointB(b, names.DLQ)
				runtime.GC()
				b.StartTimer()
				start := time.Now()
				moved, pk := seamRedrive(b, ep, workers)
				el := time.Since(start)
				b.StopTimer()
				peak = max(peak, pk)
				if moved != int64(n) {
					b.Fatalf("seam moved %d of %d", moved, n)
				}
				seamRate = float64(n) / el.Seconds()
				names = benchSeed(b, r, n)
				start = time.Now()
				bm := bareRedrive(b, r, names.DLQ, n)
				el = time.Since(start)
				if bm != int64(n) {
					b.Fatalf("bare moved %d of %d", bm, n)
				}
				bareRate = float64(n) / el.Seconds()
			}
			b.ReportMetric(seamRate, "seam-msg/s")
			b.ReportMetric(bareRate, "bare-msg/s")
			b.ReportMetric(seamRate/bareRate, "ratio")
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
