package kafka_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// fillDLT creates a DLT of n Spring-style dead letters (3 partitions, 300-byte
// values, 8 headers) and an empty destination topic; it returns their names.
func fillDLT(b testing.TB, c cluster, n int) (dlt, dest string) {
	b.Helper()
	base := strings.ToLower(testenv.UniqueName(b, "bench"))
	dlt, dest = base+"-dlt", base
	for _, t := range []string{dlt, dest} {
		if r, err := c.adm.CreateTopic(context.Background(), 3, 1, nil, t); err != nil || r.Err != nil {
			b.Fatal(err, r.Err)
		}
	}
	val := []byte(`{"eventType":"OrderCreated","eventId":"ord-XXXXXX","orderId":1,"customerId":"cust-1","amount":10.50,"lines":[{"sku":"sku-1","qty":1}],"pad":"` + strings.Repeat("x", 150) + `"}`)
	batch := make([]*kgo.Record, 0, 5000)
	for i := 0; i < n; i++ {
		batch = append(batch, &kgo.Record{Topic: dlt, Key: []byte(fmt.Sprintf("order-%d", i%1000)), Value: val, Headers: []kgo.RecordHeader{
			{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("org.springframework.kafka.listener.ListenerExecutionFailedException")},
			{Key: "kafka_dlt-exception-cause-fqcn", Value: []byte("java.net.SocketTimeoutException")},
			{Key: "kafka_dlt-exception-message", Value: []byte("Read timed out")},
			{Key: "kafka_dlt-original-topic", Value: []byte(dest)},
			{Key: "kafka_dlt-original-partition", Value: []byte{0, 0, 0, 1}},
			{Key: "kafka_dlt-original-offset", Value: []byte{0, 0, 0, 0, 0, 0, 1, 0}},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("orders-service")},
		}})
		if len(batch) == cap(batch) || i == n-1 {
			if err := c.cl.ProduceSync(context.Background(), batch...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return dlt, dest
}

// BenchmarkRedrive compares dlqctl's Kafka redrive (Drain + ReplaySink:
// group consumer, journal, header filtering, marker, idempotent acks=all
// producer, commit per batch) with a bare franz-go loop doing the same
// work with the same batching (poll 500, produce them with acks=all and
// wait, commit). records/s for each; the ratio is dlqctl/bare.
func BenchmarkRedrive(b *testing.B) {
	const n = 50000
	c := newCluster(b)
	for _, mode := range []string{"dlqctl", "bare"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dlt, dest := fillDLT(b, c, n)
				b.StartTimer()
				start := time.Now()
				if mode == "dlqctl" {
					prod, err := kafka.OpenProducer(c.addr, kafka.Conn{}, kafka.ProducerOptions{})
					if err != nil {
						b.Fatal(err)
					}
					st, err := kafka.Drain(context.Background(), kafka.DrainOptions{Source: c.addr.WithTopic(dlt), Group: "g-" + dlt, Batch: 500,
						Sink: kafka.ReplaySink(prod, kafka.NewRouter(c.adm, ""), "bench")})
					prod.Close()
					if err != nil || st.Handled != n {
						b.Fatalf("%v %+v", err, st)
					}
				} else {
					bareLoop(b, c, dlt, dest, n)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "records/s")
		})
	}
}

func bareLoop(b *testing.B, c cluster, dlt, dest string, n int) {
	cons, err := kafka.NewClient(c.addr, kafka.Conn{}, kgo.ConsumerGroup("g-"+dlt), kgo.ConsumeTopics(dlt),
		kgo.DisableAutoCommit(), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	prod, err := kafka.NewClient(c.addr, kafka.Conn{}, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	done := 0
	for done < n {
		fs := cons.PollRecords(context.Background(), 500)
		recs := fs.Records()
		out := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			out[i] = &kgo.Record{Topic: dest, Key: r.Key, Value: r.Value, Headers: r.Headers}
		}
		if err := prod.ProduceSync(context.Background(), out...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		if err := cons.CommitRecords(context.Background(), recs...); err != nil {
			b.Fatal(err)
		}
		done += len(recs)
	}
}

// BenchmarkRedriveRSS runs the dlqctl binary's Kafka redrive on DLTs of
// 10k and 200k records and reports its peak RSS (getrusage maxrss).
func BenchmarkRedriveRSS(b *testing.B) {
	c := newCluster(b)
	bin := testenv.BuildBinary(b)
	for _, n := range []int{10000, 100000, 200000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var rss int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dlt, _ := fillDLT(b, c, n)
				b.StartTimer()
				cmd := exec.Command(bin, "redrive", "kafka://"+strings.Join(c.addr.Brokers, ",")+"/"+dlt, "--yes", "-o", "json")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					rss = max(rss, ru.Maxrss)
				}
			}
			b.ReportMetric(float64(rss)/1024, "maxrss_MB")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
