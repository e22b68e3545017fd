package redrive

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// canaryVerdict is the canary object of a run's JSON summary.
type canaryVerdict struct {
	Pass          bool    `json:"pass"`
	Moved         int     `json:"moved"`
	Returned      int     `json:"returned"`
	Watched       float64 `json:"watched_seconds"`
	WindowSeconds float64 `json:"window_seconds"`
	WindowReason  string  `json:"window_reason"`
	Detail        string  `json:"detail"`
}

// TestKafkaCanaryWindowIsComputedOrRefused: a Kafka canary without
// --verify-for never watches 0 s. Where Kafka cannot know how long a
// failing record takes to come back (no delay-named retry topics), it is
// refused before anything moves (exit 2, one sentence asking for
// --verify-for). With Spring retry topics named by their delays it watches
// their sum + 30 s, says so on stderr, and the verdict (text and JSON)
// says how the window was derived. A shorter --verify-for is warned about.
func TestKafkaCanaryWindowIsComputedOrRefused(t *testing.T) {
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 20, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	dlt := "kafka://" + brokers + "/" + payDLT
	pending := func() int64 {
		plan, err := kafka.MakePlan(t.Context(), adm, payDLT, kafka.DefaultGroup(payDLT))
		if err != nil {
			t.Fatal(err)
		}
		return plan.Pending()
	}
	total := int64(res.DeadLetters[payDLT])

	r := clitest.Run(t, testenv.Env{}, "", "redrive", dlt, "--to", "source", "--canary", "2", "--yes", "-o", "json")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--canary needs --verify-for on "+payDLT) || !strings.Contains(r.Stderr, "pass --verify-for DURATION") {
		t.Fatalf("Kafka canary without --verify-for and no retry topics: exit %d, want 2 asking for --verify-for\n%s", r.Code, r.Stderr)
	}
	if n := len(clitest.CopiesIn(t, brokers, pay)); n != 0 || pending() != total {
		t.Fatalf("the refused canary changed something: %d copies at %s, %d of %d pending", n, pay, pending(), total)
	}

	for _, name := range []string{pay + "-retry-1000", pay + "-retry-2000"} {
		if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	r = clitest.Run(t, testenv.Env{}, "", "redrive", dlt, "--to", "source", "--canary", "2", "--verify-poll", "1s", "--yes", "-o", "json")
	var rep struct {
		Moved  int            `json:"moved"`
		Canary *canaryVerdict `json:"canary"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	c := rep.Canary
	if r.Code != 0 || c == nil || !c.Pass || rep.Moved != 2 {
		t.Fatalf("Kafka canary with retry topics: exit %d, moved %d, canary %+v\n%s", r.Code, rep.Moved, c, r.Stderr)
	}
	if c.WindowSeconds != 33 || c.Watched < c.WindowSeconds {
		t.Errorf("window %gs, watched %gs; want the retry topics' 1s + 2s + 30s, watched in full", c.WindowSeconds, c.Watched)
	}
	for _, s := range []string{"Spring retry topics of " + pay, pay + "-retry-1000 1s", pay + "-retry-2000 2s", "+ 30s"} {
		if !strings.Contains(c.WindowReason, s) || !strings.Contains(c.Detail, s) {
			t.Errorf("the verdict does not say %q: reason %q, detail %q", s, c.WindowReason, c.Detail)
		}
	}
	if !strings.Contains(r.Stderr, "canary: watching "+payDLT+" for 33s (Spring retry topics") {
		t.Errorf("stderr does not state the computed window:\n%s", r.Stderr)
	}
	if n := len(clitest.CopiesIn(t, brokers, pay)); n != 2 {
		t.Errorf("%d copies at %s after a canary of 2", n, pay)
	}

	r = clitest.Run(t, testenv.Env{}, "", "redrive", dlt, "--to", "source", "--canary", "1", "--verify-for", "2s", "--verify-poll", "500ms", "--yes", "-o", "json")
	rep.Canary = nil
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Canary == nil {
		t.Fatalf("--verify-for 2s: exit %d %v\n%s", r.Code, err, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "--verify-for 2s is shorter than a failing message needs to come back to "+payDLT) || rep.Canary.WindowSeconds != 2 || !strings.Contains(rep.Canary.WindowReason, "shorter than the 33s") {
		t.Errorf("a short --verify-for: window %+v, want 2s with a warning and the reason saying it is short\n%s", rep.Canary, r.Stderr)
	}
}

// TestAMQPRedriveCanaryWindowFromQueueArguments: a RabbitMQ redrive canary
// without --verify-for watches the window derived from the queues that
// dead-letter into the DLQ (their message TTL + 30 s: the seeded TTL
// queue's 20 ms), states it on stderr, and the verdict says how it was
// derived — here while failing, as the source's consumer rejects the
// copies.
func TestAMQPRedriveCanaryWindowFromQueueArguments(t *testing.T) {
	env, names, _ := clitest.BulkRabbit(t, 10)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	ch := clitest.OpenTestChannel(t, env)
	if err := ch.Qos(10, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(names.Orders, "rejecting-consumer", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rejected atomic.Int64
	go func() {
		for d := range ds {
			_ = d.Nack(false, false)
			rejected.Add(1)
		}
	}()
	r := clitest.Run(t, testenv.Env{}, "", "redrive", env.QueueRef(names.DLQ), "--to", "source", "--canary", "2", "--verify-poll", "500ms", "--yes", "-o", "json")
	var sum struct {
		Moved  int            `json:"moved"`
		Canary *canaryVerdict `json:"canary"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatalf("exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	c := sum.Canary
	if r.Code != 3 || c == nil || c.Pass || c.Returned != 2 || sum.Moved != 2 || rejected.Load() != 2 {
		t.Fatalf("canary of 2 to a rejecting source: exit %d, moved %d, rejected %d, canary %+v\n%s", r.Code, sum.Moved, rejected.Load(), c, r.Stderr)
	}
	if c.WindowSeconds != 30.02 {
		t.Errorf("window %gs; want the TTL queue's 20ms + 30s", c.WindowSeconds)
	}
	for _, s := range []string{"queue " + names.TTL + " (message TTL 20ms) dead-letters into " + names.DLQ, "+ 30s"} {
		if !strings.Contains(c.WindowReason, s) {
			t.Errorf("window_reason %q does not say %q", c.WindowReason, s)
		}
	}
	if !strings.Contains(r.Stderr, "canary: watching "+names.DLQ+" for 30s (queue "+names.TTL) {
		t.Errorf("stderr does not state the computed window:\n%s", r.Stderr)
	}
}

// TestSQSRedriveCanaryWindowFromRedrivePolicy: an SQS redrive canary
// without --verify-for watches maxReceiveCount × the source's visibility
// timeout + 30 s (2 × 30 s + 30 s here), says so on stderr, and the verdict
// carries the window and its derivation — here while failing, as the
// source's consumer still has the bug.
func TestSQSRedriveCanaryWindowFromRedrivePolicy(t *testing.T) {
	env := testenv.Require(t)
	p := deadLettered(t, env, orderBodies(10, 10))
	startWorker(t, env, p.srcURL, worker.ModeBug)
	r := clitest.Run(t, env, "", "redrive", p.dlqName, "--canary", "2", "--verify-poll", "500ms", "--yes", "-o", "json", "--state-dir", t.TempDir())
	s := clitest.SummaryOf(t, r)
	if r.Code != 3 || s.Canary == nil || s.Canary.Pass || s.Canary.Returned == 0 {
		t.Fatalf("canary with the bug live: exit %d, verdict %+v\n%s", r.Code, s.Canary, r.Stderr)
	}
	want := "maxReceiveCount 2 × visibility timeout 30s of " + p.srcName + ", + 30s"
	if s.Canary.WindowSeconds != 90 || s.Canary.WindowReason != want {
		t.Errorf("window %gs %q; want 90s %q", s.Canary.WindowSeconds, s.Canary.WindowReason, want)
	}
	if !strings.Contains(r.Stderr, "canary: watching "+p.dlqName+" for 1m30s ("+want+")") {
		t.Errorf("stderr does not state the computed window:\n%s", r.Stderr)
	}
}
