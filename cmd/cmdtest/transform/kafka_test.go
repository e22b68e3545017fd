package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// kafkaDLT is a source topic and its dead-letter topic holding what
// Spring's DeadLetterPublishingRecoverer writes: each order keyed by its
// customer, with the producer's headers (a repeated tenant, a trace id, a
// null-valued flag) and the recoverer's (original topic, exception).
type kafkaDLT struct {
	brokers, src, dlt string
	adm               *kadm.Client
	fixable           []int // order numbers
	unfixable         []int
}

// kafkaHeaders are the producer's headers of order i, as the copy must
// keep them (order, repeat, null value).
func kafkaHeaders(i int) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: "tenant", Value: []byte("acme")},
		{Key: "trace-id", Value: []byte(fmt.Sprintf("t-%d", i))},
		{Key: "tenant", Value: []byte("acme-eu")},
		{Key: "flag", Value: nil},
	}
}

func kafkaIncident(t testing.TB, fixable, unfixable int) kafkaDLT {
	t.Helper()
	brokers := testenv.RequireKafka(t)
	k := kafkaDLT{brokers: brokers, src: strings.ToLower(testenv.UniqueName(t, "xfk-orders"))}
	k.dlt = k.src + ".DLT"
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/" + k.src)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	k.adm = kadm.NewClient(cl)
	for _, topic := range []string{k.src, k.dlt} {
		if r, err := k.adm.CreateTopic(t.Context(), 3, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
	}
	var recs []*kgo.Record
	for i := range fixable + unfixable {
		fix := i < fixable
		body := orderBody(i, true)
		if fix {
			k.fixable = append(k.fixable, i)
		} else {
			body = orderBody(i, false)
			k.unfixable = append(k.unfixable, i)
		}
		hs := append(kafkaHeaders(i),
			kgo.RecordHeader{Key: "kafka_dlt-original-topic", Value: []byte(k.src)},
			kgo.RecordHeader{Key: "kafka_dlt-exception-message", Value: []byte("Cannot deserialize value of type `java.math.BigDecimal` from String")})
		recs = append(recs, &kgo.Record{Topic: k.dlt, Key: []byte(fmt.Sprintf("cust-%d", i)), Value: []byte(body), Headers: hs})
	}
	rand.Shuffle(len(recs), func(a, b int) { recs[a], recs[b] = recs[b], recs[a] })
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k kafkaDLT) ref(topic string) string { return "kafka://" + k.brokers + "/" + topic }

// orderOf is the order number of a body orderBody or repaired wrote.
func orderOf(body string) int {
	var o struct{ Order string }
	_ = json.Unmarshal([]byte(body), &o)
	n, err := strconv.Atoi(strings.TrimPrefix(o.Order, "o-"))
	if err != nil {
		return -1
	}
	return n
}

// checkKafkaCopy checks one repaired copy: the repaired body, the key and
// the producer's headers kept exactly (dead-letter headers dropped), then
// the provenance and redrive markers. It returns the provenance.
func checkKafkaCopy(t *testing.T, m *kafka.Message) transform.Marker {
	t.Helper()
	i := orderOf(string(m.Value))
	if i < 0 || string(m.Value) != repaired(i) {
		t.Fatalf("copy %s is not a repaired order: %s", m.ID(), m.Value)
	}
	if string(m.Key) != fmt.Sprintf("cust-%d", i) {
		t.Errorf("copy of order %d has key %q", i, m.Key)
	}
	want := kafkaHeaders(i)
	if len(m.Headers) != len(want)+2 {
		t.Fatalf("copy of order %d has headers %q; want the producer's four, the provenance and the redrive marker", i, m.Headers)
	}
	for j, h := range want {
		g := m.Headers[j]
		if g.Key != h.Key || !bytes.Equal(g.Value, h.Value) || (g.Value == nil) != (h.Value == nil) {
			t.Errorf("copy of order %d: header %d is %q=%q (nil %v), want %q=%q (nil %v)", i, j, g.Key, g.Value, g.Value == nil, h.Key, h.Value, h.Value == nil)
		}
	}
	if m.Headers[4].Key != transform.Attribute || m.Headers[5].Key != kafka.MarkerHeader {
		t.Fatalf("copy of order %d: headers end %q, %q; want the provenance then the redrive marker", i, m.Headers[4].Key, m.Headers[5].Key)
	}
	var mk transform.Marker
	if err := json.Unmarshal(m.Headers[4].Value, &mk); err != nil || mk.OriginalID == "" {
		t.Fatalf("provenance %q: %v", m.Headers[4].Value, err)
	}
	if rm := kafka.ReplayMarker(m.Headers); rm == nil || rm.OriginalID != mk.OriginalID || rm.Count != 1 {
		t.Fatalf("redrive marker %+v, provenance %+v", rm, mk)
	}
	return mk
}

// TestTransformRedriveKafka is the "done means" on Kafka: the
// dry run shows the diff; the run sends every fixable order repaired to
// the topic its headers name, with its key and the producer's headers
// (order, repeat and null value kept, dead-letter headers dropped) and
// the provenance marker; the unfixable stay pending in the DLT (exit 4
// naming them); the archive holds every original byte for byte; a re-run
// sends nothing twice; restore --transform repairs from the archive.
func TestTransformRedriveKafka(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	k := kafkaIncident(t, 9, 3)

	d := clitest.Run(t, env, "", "redrive", k.ref(k.dlt), "--transform", fixExpr, "--dry-run")
	if d.Code != 0 || !strings.Contains(d.Stdout, `  + .json.amount: 10.5`) || !strings.Contains(d.Stdout, "transform: 9 changed, 0 unchanged, 3 failed") ||
		!strings.Contains(d.Stdout, "customer is required") || strings.Contains(d.Stdout, ".attributes.") || strings.Contains(d.Stdout, ".system.kafka") {
		t.Fatalf("dry run: exit %d\n%s\n%s", d.Code, d.Stdout, d.Stderr)
	}
	j := clitest.Run(t, env, "", "redrive", k.ref(k.dlt), "--transform", fixExpr, "--dry-run", "-o", "json")
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(j.Stdout), &plan); err != nil || j.Code != 0 || plan.Transform == nil || plan.Transform.Changed != 9 ||
		plan.Transform.Failed != 3 || plan.WouldMove != 9 || plan.Skipped[redrive.SkipTransform] != 3 {
		t.Fatalf("dry run -o json: exit %d %v\n%s", j.Code, err, j.Stdout)
	}
	// A key and a header rewritten show in the diff too.
	kd := clitest.Run(t, env, "", "redrive", k.ref(k.dlt), "--transform", `.system.kafka.key |= ascii_upcase | .attributes.tenant.value = "ACME"`, "--dry-run")
	// The diff shows a sample of the records, in the order the partitions
	// were read: any one of them, with its key before and after.
	keyDiff := regexp.MustCompile(`  - \.system\.kafka\.key: "cust-(\d+)"\n  \+ \.system\.kafka\.key: "CUST-(\d+)"`).FindStringSubmatch(kd.Stdout)
	if kd.Code != 0 || keyDiff == nil || keyDiff[1] != keyDiff[2] ||
		!strings.Contains(kd.Stdout, `  + .attributes.tenant: {"type":"String","value":"ACME"}`) || !strings.Contains(kd.Stdout, "transform: 12 changed") {
		t.Fatalf("key/header dry run: exit %d\n%s\n%s", kd.Code, kd.Stdout, kd.Stderr)
	}
	if got, _ := clitest.KafkaMessages(t, k.brokers, k.src); len(got) != 0 {
		t.Fatalf("the dry runs produced %d record(s)", len(got))
	}

	state := t.TempDir()
	args := []string{"--state-dir", state, "redrive", k.ref(k.dlt), "--transform", fixExpr,
		"--archive-originals", "s3://" + bucket + "/originals", "--yes", "-o", "json"}
	r := clitest.Run(t, env, "", args...)
	if r.Code != 4 {
		t.Fatalf("exit %d (want 4: three orders could not be repaired)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sum := clitest.SummaryOf(t, r)
	xf := sum.Transform
	if sum.Moved != 9 || xf == nil || xf.Changed != 9 || xf.Failed != 3 || len(xf.Errors) != 1 || xf.Errors[0].Reason != transform.ReasonExpression ||
		!strings.Contains(xf.Errors[0].FirstError, "customer is required") || sum.Skipped[redrive.SkipTransform] != 3 {
		t.Fatalf("summary %+v transform %+v", sum.Result, xf)
	}
	if sum.PendingAfter == nil || *sum.PendingAfter != 3 {
		t.Fatalf("pending after the run: %v, want the 3 unfixable", sum.PendingAfter)
	}
	if !strings.Contains(r.Stderr, "could not be transformed") {
		t.Errorf("stderr does not say why the run is partial: %q", r.Stderr)
	}
	if xf.Originals == nil || xf.Originals.Records != 9 || !strings.HasPrefix(xf.Originals.Manifest, "s3://"+bucket+"/originals/") {
		t.Fatalf("originals %+v", xf.Originals)
	}

	copies, err := clitest.KafkaMessages(t, k.brokers, k.src)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, m := range copies {
		mk := checkKafkaCopy(t, m)
		if mk.RunID != sum.RunID || mk.ExprSHA256 != xf.SHA256 {
			t.Errorf("provenance %+v (run %s, sha %s)", mk, sum.RunID, xf.SHA256)
		}
		seen[orderOf(string(m.Value))] = true
	}
	if len(copies) != 9 || len(seen) != 9 {
		t.Fatalf("%d copies of %d orders in %s, want one of each of the 9 fixable", len(copies), len(seen), k.src)
	}

	// The unfixable stay pending: a second run reads them again, the
	// expression fails on every one of them, so it refuses (exit 2) and
	// sends nothing more.
	again := clitest.Run(t, env, "", args...)
	if again.Code != 2 || !strings.Contains(again.Stderr, "--transform failed on every message read (3 message(s)") {
		t.Fatalf("second run: exit %d\n%s", again.Code, again.Stderr)
	}
	if n, _ := clitest.KafkaMessages(t, k.brokers, k.src); len(n) != 9 {
		t.Fatalf("%d records in %s after a second run, want the 9 copies", len(n), k.src)
	}

	// The archive: verified, every original byte for byte (body, key,
	// every header in order).
	if v := clitest.Run(t, env, "", "archive", "verify", xf.Originals.Manifest); v.Code != 0 {
		t.Fatalf("archive verify: exit %d %s", v.Code, v.Stderr)
	}
	arch := clitest.SampleArchive(t, env, xf.Originals.Manifest)
	got := map[int]int{}
	for _, rec := range arch {
		i := orderOf(rec.Body)
		got[i]++
		ks := rec.System.Kafka
		if rec.Body != orderBody(i, true) || ks == nil || ks.Key != fmt.Sprintf("cust-%d", i) || len(ks.Headers) != 6 ||
			ks.Headers[0] != (record.Header{Key: "tenant", Value: "acme"}) || ks.Headers[2] != (record.Header{Key: "tenant", Value: "acme-eu"}) ||
			ks.Headers[4].Key != "kafka_dlt-original-topic" {
			t.Errorf("archived original %s: body %s kafka %+v", rec.MessageID, rec.Body, ks)
		}
	}
	if len(got) != 9 {
		t.Fatalf("the archive holds %d orders (%v), want the 9 fixable once each", len(got), got)
	}

	// restore --transform to a Kafka topic repairs from the archive.
	fixed := k.src + "-fixed"
	if r, err := k.adm.CreateTopic(t.Context(), 1, 1, nil, fixed); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	rf := clitest.Run(t, env, "", "--state-dir", state, "restore", xf.Originals.Manifest, "--to", k.ref(fixed), "--transform", fixExpr, "--yes", "-o", "json")
	var rsum cmd.RestoreSummary
	if rf.Code != 0 || json.Unmarshal([]byte(rf.Stdout), &rsum) != nil || rsum.Transform == nil || rsum.Transform.Changed != 9 {
		t.Fatalf("restore --transform: exit %d\n%s\n%s", rf.Code, rf.Stdout, rf.Stderr)
	}
	restored, _ := clitest.KafkaMessages(t, k.brokers, fixed)
	if len(restored) != 9 {
		t.Fatalf("restore --transform produced %d record(s), want 9", len(restored))
	}
	for _, m := range restored {
		i := orderOf(string(m.Value))
		if string(m.Value) != repaired(i) || string(m.Key) != fmt.Sprintf("cust-%d", i) || len(m.Headers) < 3 || m.Headers[0].Key != "tenant" || m.Headers[2].Key != "tenant" {
			t.Errorf("restored copy %s: key %q value %s headers %q", m.ID(), m.Key, m.Value, m.Headers)
		}
	}
}

// TestTransformKafkaKill9 kills a transforming Kafka redrive with SIGKILL
// at a random point and runs it again: every fixable record has a
// repaired copy (nothing lost), a record copied twice is among those the
// re-run reports, the unfixable stay pending, and the archive holds every
// original once.
func TestTransformKafkaKill9(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	const n, u = 3000, 12
	k := kafkaIncident(t, n, u)
	state := t.TempDir()
	args := []string{"--state-dir", state, "redrive", k.ref(k.dlt), "--transform", fixExpr,
		"--archive-originals", "s3://" + bucket + "/orig", "--rate", "1000", "--yes", "-o", "json"}
	victim := clitest.BinCmd(t, env, args...)
	var vout, verr bytes.Buffer
	victim.Stdout, victim.Stderr = &vout, &verr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	at := int64(n/10 + rand.IntN(n/2))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if topicEnd(t, k.adm, k.src) >= at {
			break
		}
		if time.Now().After(deadline) {
			_ = victim.Process.Kill()
			_ = victim.Wait()
			t.Fatalf("the redrive produced fewer than %d copies within 3 minutes: %s", at, verr.String())
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	produced := topicEnd(t, k.adm, k.src)

	r := clitest.Run(t, env, "", args...)
	if r.Code != 4 {
		t.Fatalf("re-run: exit %d (want 4: the unfixable stay)\n%s\n%s\nkilled run said:\n%s", r.Code, r.Stdout, r.Stderr, verr.String())
	}
	if !strings.Contains(r.Stderr, "resuming unfinished run") {
		t.Errorf("the re-run did not resume the killed run:\n%s", r.Stderr)
	}
	sum := clitest.SummaryOf(t, r)
	reported := map[string]bool{}
	for _, m := range sum.MaybeTwiceMessages {
		reported[m.Orig] = true
	}
	byOrig := map[string]int{}
	orders := map[int]bool{}
	copies, err := clitest.KafkaMessages(t, k.brokers, k.src)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range copies {
		mk := checkKafkaCopy(t, m)
		byOrig[mk.OriginalID]++
		orders[orderOf(string(m.Value))] = true
	}
	if len(orders) != n || len(byOrig) != n {
		t.Fatalf("copies of %d orders (%d originals) in %s, want all %d fixable (none lost)", len(orders), len(byOrig), k.src, n)
	}
	dups := 0
	for orig, c := range byOrig {
		if c > 1 {
			dups += c - 1
			if !reported[orig] {
				t.Errorf("%s arrived %d times and the re-run did not report it", orig, c)
			}
		}
		if c > 2 {
			t.Errorf("%s arrived %d times: one kill can double a copy at most once", orig, c)
		}
	}
	if sum.PendingAfter == nil || *sum.PendingAfter != u {
		t.Fatalf("pending after the re-run: %v, want the %d unfixable", sum.PendingAfter, u)
	}
	xo := sum.Transform.Originals
	if xo == nil || xo.Manifest == "" || xo.Records != n {
		t.Fatalf("originals %+v; want a manifest of %d records", xo, n)
	}
	if v := clitest.Run(t, env, "", "archive", "verify", xo.Manifest); v.Code != 0 {
		t.Fatalf("archive verify: exit %d %s", v.Code, v.Stderr)
	}
	arch := map[string]int{}
	for _, rec := range clitest.SampleArchive(t, env, xo.Manifest) {
		arch[rec.MessageID]++
		if rec.Body != orderBody(orderOf(rec.Body), true) {
			t.Errorf("archived original %s is not as it was read: %s", rec.MessageID, rec.Body)
		}
	}
	if len(arch) != n {
		t.Fatalf("the archive holds %d distinct originals, want %d", len(arch), n)
	}
	for id, c := range arch {
		if c != 1 {
			t.Fatalf("original %s is %d times in the archive", id, c)
		}
	}
	if sum.Status != redrive.StatusPartial {
		t.Errorf("status %s", sum.Status)
	}
	t.Logf("killed after %d copies (%d produced by then): %d duplicate(s), %d reported, %d archive part(s)", at, produced, dups, len(reported), xo.Parts)
}

// topicEnd sums topic's high watermarks.
func topicEnd(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// TestTransformKafkaExactlyOnce: with --exactly-once the repaired copies
// and the commit past their originals are one transaction per batch; the
// originals are archived before it, the unfixable stay pending.
func TestTransformKafkaExactlyOnce(t *testing.T) {
	env, bucket := clitest.KafkaBucket(t)
	k := kafkaIncident(t, 6, 2)
	r := clitest.Run(t, env, "", "--state-dir", t.TempDir(), "redrive", k.ref(k.dlt), "--transform", fixExpr, "--exactly-once",
		"--archive-originals", "s3://"+bucket+"/originals", "--yes", "-o", "json")
	if r.Code != 4 {
		t.Fatalf("exit %d (want 4)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sum := clitest.SummaryOf(t, r)
	if sum.Moved != 6 || sum.Transform.Failed != 2 || sum.PendingAfter == nil || *sum.PendingAfter != 2 || sum.Transform.Originals.Records != 6 {
		t.Fatalf("summary %+v transform %+v", sum.Result, sum.Transform)
	}
	copies, err := clitest.KafkaMessages(t, k.brokers, k.src) // read_committed
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != 6 {
		t.Fatalf("%d copies, want 6", len(copies))
	}
	for _, m := range copies {
		checkKafkaCopy(t, m)
	}
}
