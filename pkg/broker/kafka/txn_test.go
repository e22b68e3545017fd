package kafka_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// committedCopies counts, per original id, the copies in topic that a
// read_committed consumer sees.
func committedCopies(t *testing.T, c cluster, topic string) map[string]int {
	t.Helper()
	copies, _ := peekAll(t, c, topic, "")
	out := map[string]int{}
	for _, m := range copies {
		if mk := kafka.ReplayMarker(m.Headers); mk != nil {
			out[mk.OriginalID]++
		}
	}
	return out
}

// payIncident is the seeded incident's payments dead-letter topic (ep)
// and its source topic (dest, target) to replay it to.
type payIncident struct {
	c        cluster
	pay      string
	total    int
	ep, dest *kafka.Endpoint
	target   broker.Destination
}

func seedPayments(t *testing.T) payIncident {
	t.Helper()
	c := newCluster(t)
	prefix, res := seed(t, c)
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	inc := payIncident{c: c, pay: pay, total: res.DeadLetters[payDLT],
		ep: openEndpoint(t, c, payDLT, kafka.Config{}), dest: openEndpoint(t, c, pay, kafka.Config{})}
	target, err := inc.dest.Target(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	inc.target = target
	return inc
}

// TestTxnPublisherCommitsCopiesAndOffsetsTogether: through the seam
// (broker.TxnOpener), a transaction that cannot commit leaves nothing —
// no copy a read_committed consumer sees, no offset moved, nothing more
// committed by that source — and a run of transactions moves every
// record once, its copies and the group's commit together.
func TestTxnPublisherCommitsCopiesAndOffsetsTogether(t *testing.T) {
	inc := seedPayments(t)
	c, pay, total, ep, dest, target := inc.c, inc.pay, inc.total, inc.ep, inc.dest, inc.target
	if !ep.Capabilities().Transactions {
		t.Fatal("Kafka does not declare Transactions")
	}
	var opener broker.TxnOpener = dest

	// A peek cannot be part of a transaction.
	peek, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Peek})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opener.OpenTxnPublisher(t.Context(), peek); !errors.Is(err, broker.ErrUnsupported) {
		t.Fatalf("a transactional publisher over a peek: %v, want ErrUnsupported", err)
	}
	_ = peek.Close(t.Context())

	// Run 1: the first batch's last copy cannot be produced (larger than
	// the producer's batch limit): the transaction aborts.
	src, err := ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := opener.OpenTxnPublisher(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := src.Next(t.Context(), 20)
	if err != nil || len(ms) == 0 {
		t.Fatalf("first batch: %d messages, %v", len(ms), err)
	}
	batch := make([]broker.Outgoing, len(ms))
	for i, m := range ms {
		o, skip := pub.Prepare(m.Record, target, broker.CopyOptions{RunID: "txn-abort"})
		if skip != "" {
			t.Fatalf("prepare: %s", skip)
		}
		batch[i] = o
	}
	batch[len(batch)-1] = broker.Outgoing{Native: &kgo.Record{Topic: pay, Value: []byte(strings.Repeat("x", 2<<20))}}
	results, err := pub.PublishRemoving(t.Context(), target, batch, ms)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Err == nil || errors.Is(r.Err, broker.ErrRejected) {
			t.Fatalf("entry %d of an aborted transaction: %v (want an error, not a certain refusal)", i, r.Err)
		}
	}
	for i, err := range src.Ack(t.Context(), ms) {
		if err == nil {
			t.Fatalf("Ack of entry %d of an aborted transaction succeeded", i)
		}
	}
	// The source is fenced: a later transaction is refused, and reading
	// on stops the run.
	if _, err := pub.PublishRemoving(t.Context(), target, batch[:1], ms[:1]); err == nil {
		t.Fatal("a transaction after an aborted one was accepted")
	}
	if _, err := src.Next(t.Context(), 20); err == nil || errors.Is(err, broker.ErrSourceDone) {
		t.Fatalf("reading after an aborted transaction: %v, want an error that stops the run", err)
	}
	_ = pub.Close(t.Context())
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, _ := ep.Depth(t.Context()); d.Ready != int64(total) {
		t.Fatalf("after an aborted transaction %d pending, want all %d", d.Ready, total)
	}
	if n := len(committedCopies(t, c, pay)); n != 0 {
		t.Fatalf("a read_committed consumer sees %d copies of an aborted transaction", n)
	}

	// Run 2: every batch in a transaction.
	src, err = ep.OpenSource(t.Context(), broker.SourceOptions{Mode: broker.Consume})
	if err != nil {
		t.Fatal(err)
	}
	pub, err = opener.OpenTxnPublisher(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for {
		ms, err := src.Next(t.Context(), 37)
		if errors.Is(err, broker.ErrSourceDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		batch := make([]broker.Outgoing, len(ms))
		for i, m := range ms {
			batch[i], _ = pub.Prepare(m.Record, target, broker.CopyOptions{RunID: "txn"})
		}
		results, err := pub.PublishRemoving(t.Context(), target, batch, ms)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.Err != nil || r.ID == "" {
				t.Fatalf("result %+v", r)
			}
		}
		for _, err := range src.Ack(t.Context(), ms) {
			if err != nil {
				t.Fatalf("Ack after a committed transaction: %v", err)
			}
		}
		moved += len(ms)
	}
	_ = pub.Close(t.Context())
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if moved != total {
		t.Fatalf("moved %d of %d", moved, total)
	}
	if d, _ := ep.Depth(t.Context()); d.Ready != 0 {
		t.Fatalf("%d pending after the transactional run", d.Ready)
	}
	copies := committedCopies(t, c, pay)
	if len(copies) != total {
		t.Fatalf("a read_committed consumer sees copies of %d records, want %d", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s has %d committed copies", id, n)
		}
	}
}

// TestGroupLagReadsWhatAGroupHasLeft: the lag reader the --max-dest-lag
// guard asks sums the group's lag; an unknown group is ErrNotFound.
func TestGroupLagReadsWhatAGroupHasLeft(t *testing.T) {
	c := newCluster(t)
	topic := strings.ToLower(testenv.UniqueName(t, "lag"))
	if r, err := c.adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	t.Cleanup(func() { _, _ = c.adm.DeleteTopics(t.Context(), topic) })
	recs := make([]*kgo.Record, 10)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte("v")}
	}
	if err := c.cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	group := topic + "-consumers"
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	if _, err := c.adm.CommitOffsets(t.Context(), group, os); err != nil {
		t.Fatal(err)
	}
	var lr broker.LagReader = openEndpoint(t, c, topic, kafka.Config{})
	if lag, err := lr.GroupLag(t.Context(), group); err != nil || lag != 7 {
		t.Fatalf("lag %d, %v; want 7", lag, err)
	}
	if _, err := lr.GroupLag(t.Context(), topic+"-nobody"); !errors.Is(err, broker.ErrNotFound) {
		t.Fatalf("unknown group: %v, want ErrNotFound", err)
	}
}
