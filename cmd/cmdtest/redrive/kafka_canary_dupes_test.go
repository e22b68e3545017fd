package redrive

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestKafkaCanaryTellsAnOlderDuplicateFromAReturn: a dead-letter topic
// often holds a record twice (a producer's retry dead-lettered twice). A
// canary moves one; its twin, on the topic before the run, is not a copy
// that came back without its marker, so the canary passes (it failed
// before: the body matched). A marker-less record with a copy's body
// produced during the watch is a return: the canary fails.
func TestKafkaCanaryTellsAnOlderDuplicateFromAReturn(t *testing.T) {
	brokers, prefix, _, _ := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 4, Partitions: 1})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	dlt := "kafka://" + brokers + "/" + payDLT
	ms, err := clitest.KafkaMessages(t, brokers, payDLT)
	if err != nil || len(ms) == 0 {
		t.Fatalf("reading %s: %d records, %v", payDLT, len(ms), err)
	}
	var twins []*kgo.Record
	for _, m := range ms {
		twins = append(twins, &kgo.Record{Topic: payDLT, Key: m.Key, Value: m.Value, Headers: m.Headers})
	}
	produce(t, brokers, twins...)

	canary := func(watch string) (int, canaryVerdict, string) {
		r := clitest.Run(t, testenv.Env{}, "", "redrive", dlt, "--to", "source", "--canary", "1", "--verify-for", watch, "--verify-poll", "300ms", "--yes", "-o", "json")
		var rep struct {
			Moved  int            `json:"moved"`
			Canary *canaryVerdict `json:"canary"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Canary == nil || rep.Moved != 1 {
			t.Fatalf("canary: exit %d, moved %d, %v\n%s\n%s", r.Code, rep.Moved, err, r.Stdout, r.Stderr)
		}
		return r.Code, *rep.Canary, r.Stderr
	}
	if code, v, stderr := canary("2s"); code != 0 || !v.Pass || v.Returned != 0 {
		t.Fatalf("the twin of the canary's record, on the topic before the run: exit %d, verdict %+v; want PASS\n%s", code, v, stderr)
	}

	// The next canary's copy comes back without its marker while it watches.
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			copies, err := clitest.KafkaMessages(t, brokers, pay)
			if err != nil {
				t.Error(err)
				return
			}
			var latest *kafka.Message
			n := 0
			for _, c := range copies {
				if kafka.ReplayMarker(c.Headers) != nil {
					latest, n = c, n+1
				}
			}
			if n == 2 {
				produce(t, brokers, &kgo.Record{Topic: payDLT, Key: latest.Key, Value: latest.Value})
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Error("the second canary's copy never reached " + pay)
	}()
	code, v, stderr := canary("6s")
	<-done
	if code != 3 || v.Pass || v.Returned != 1 {
		t.Fatalf("a marker-less copy produced during the watch: exit %d, verdict %+v; want FAIL (exit 3) with 1 returned\n%s", code, v, stderr)
	}
}

// produce writes recs (each naming its topic) and waits for them.
func produce(t *testing.T, brokers string, recs ...*kgo.Record) {
	t.Helper()
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/x")
	if err != nil {
		t.Error(err)
		return
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Error(err)
	}
}
