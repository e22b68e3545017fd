package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// kafkaIncident seeds a fresh Kafka incident for one test.
func kafkaIncident(t *testing.T, o kafkaseed.Options) (brokers, prefix string, res *kafkaseed.Result, adm *kadm.Client) {
	t.Helper()
	brokers = testenv.RequireKafka(t)
	prefix = strings.ToLower(testenv.UniqueName(t, "k"))
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/x")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	o.Prefix = prefix
	res, err = kafkaseed.Seed(t.Context(), cl, o)
	if err != nil {
		t.Fatal(err)
	}
	return brokers, prefix, res, kadm.NewClient(cl)
}

// copiesIn counts dlqctl's copies in topic by the dead letter they copy.
func copiesIn(t *testing.T, brokers, topic string) map[string]int {
	t.Helper()
	addr, _ := kafka.ParseAddress("kafka://" + brokers + "/" + topic)
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	plan, err := kafka.MakePlan(t.Context(), kadm.NewClient(cl), topic, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	if _, err := kafka.Peek(t.Context(), addr, kafka.Conn{}, plan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		if mk := kafka.ReplayMarker(m.Headers); mk != nil {
			out[mk.OriginalID]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKafkaSampleAndGroupByStage(t *testing.T) {
	brokers, prefix, res, _ := kafkaIncident(t, kafkaseed.Options{})
	orders, _, _, _, dlq, pay, payDLT, _, _ := kafkaseed.Topics(prefix)

	r := runCLI(t, testenv.Env{}, "", "sample", "kafka://"+brokers+"/"+payDLT, "-n", "100", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("sample: exit %d: %s", r.Code, r.Stderr)
	}
	var recs []record.Record
	if err := json.Unmarshal([]byte(r.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != res.DeadLetters[payDLT] {
		t.Fatalf("sample showed %d records, the DLT holds %d", len(recs), res.DeadLetters[payDLT])
	}
	for _, rec := range recs {
		k := rec.System.Kafka
		if rec.Broker != "kafka" || k == nil || k.Origin == nil || k.Origin.Topic != pay || k.Origin.Format != "spring-kafka" || k.Key == "" || len(k.Headers) == 0 {
			t.Fatalf("record %s: %+v", rec.MessageID, k)
		}
		if rec.Failure == nil || strings.Contains(rec.Failure.Type, "ListenerExecutionFailed") {
			t.Fatalf("record %s: failure %+v", rec.MessageID, rec.Failure)
		}
	}

	r = runCLI(t, testenv.Env{}, "", "group", "kafka://"+brokers+"/"+dlq, "--by", "stage", "--all", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("group: exit %d: %s", r.Code, r.Stderr)
	}
	var rep struct {
		Groups []struct {
			Key   map[string]string `json:"key"`
			Count int               `json:"count"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, g := range rep.Groups {
		got[g.Key["stage"]] = g.Count
	}
	for _, st := range []string{"retry-1", "retry-2", "retry-3"} {
		topic := orders + "-" + st
		if got[st+" "+topic] != res.Topics[topic] || got[st+" "+topic] == 0 {
			t.Fatalf("stage %s: %d, the seeder wrote %d (groups %v)", st, got[st+" "+topic], res.Topics[topic], got)
		}
	}
	if got["dlt "+dlq] != res.DeadLetters[dlq] {
		t.Fatalf("dlt stage: %d, want %d (groups %v)", got["dlt "+dlq], res.DeadLetters[dlq], got)
	}
}

func TestKafkaRedriveSelectionLeavesRecordsPendingAcrossRuns(t *testing.T) {
	brokers, prefix, res, _ := kafkaIncident(t, kafkaseed.Options{})
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ref := "kafka://" + brokers + "/" + dlq
	total := res.DeadLetters[dlq]
	sel := `.attributes.dlq_reason.value == "VALIDATION"`

	// Dry run: nothing changes.
	r := runCLI(t, testenv.Env{}, "", "redrive", ref, "--filter", sel, "--dry-run", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("dry run: exit %d: %s", r.Code, r.Stderr)
	}
	var plan KafkaRedrivePlan
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Scanned != total || plan.WouldMove == 0 || plan.WouldMove >= total || plan.ByDest[orders] == nil {
		t.Fatalf("plan %+v", plan)
	}
	if n := len(copiesIn(t, brokers, orders)); n != 0 {
		t.Fatalf("the dry run produced %d copies", n)
	}
	// Without a selection (no record is decoded for it) every routable
	// record would move, counted under class "all" per destination.
	r = runCLI(t, testenv.Env{}, "", "redrive", ref, "--dry-run", "-o", "json")
	var all KafkaRedrivePlan
	if err := json.Unmarshal([]byte(r.Stdout), &all); r.Code != 0 || err != nil {
		t.Fatalf("dry run without selection: exit %d: %v: %s", r.Code, err, r.Stderr)
	}
	byAll := 0
	for _, classes := range all.ByDest {
		byAll += classes["all"]
	}
	if all.Scanned != total || all.WouldMove <= plan.WouldMove || byAll != all.WouldMove || all.ByDest[orders]["all"] == 0 {
		t.Fatalf("dry run without selection %+v (filtered plan would move %d)", all, plan.WouldMove)
	}
	// Without --yes in a script: refused, nothing changed.
	if r := runCLI(t, testenv.Env{}, "", "redrive", ref); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("no --yes: exit %d: %s", r.Code, r.Stderr)
	}

	run := func(args ...string) KafkaRedriveReport {
		t.Helper()
		r := runCLI(t, testenv.Env{}, "", append([]string{"redrive", ref, "--yes", "-o", "json"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("redrive %v: exit %d: %s", args, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "land after newer records with the same key") {
			t.Fatalf("redrive did not say that replayed records land after newer ones: %s", r.Stderr)
		}
		var rep KafkaRedriveReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := run("--filter", sel)
	if first.Moved != plan.WouldMove || first.Pending != int64(total-plan.WouldMove) {
		t.Fatalf("first run %+v, want %d moved and the rest pending", first, plan.WouldMove)
	}
	again := run("--filter", sel)
	if again.Moved != 0 {
		t.Fatalf("the same selection again moved %d: records handled past a pending one were sent twice", again.Moved)
	}
	rest := run()
	if rest.Moved != total-plan.WouldMove || rest.Pending != 0 || !rest.Complete {
		t.Fatalf("last run %+v", rest)
	}
	copies := copiesIn(t, brokers, orders)
	if len(copies) != total {
		t.Fatalf("%d dead letters replayed, want %d", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s replayed %d times", id, n)
		}
	}
}

func TestKafkaRedriveRefusals(t *testing.T) {
	brokers := testenv.RequireKafka(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--engine", "native", "--yes"}, "Kafka"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--max-dest-backlog", "5", "--yes"}, "--max-dest-lag"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--visibility", "1m", "--yes"}, "Kafka"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--max-dest-lag", "nogroup", "--yes"}, "GROUP:N"},
		{[]string{"redrive", "kafka://" + brokers + "/no-such-topic-dlq", "--yes"}, "does not exist"},
		{[]string{"redrive", "kafka://" + brokers + "/x-dlq", "--max-returns", "5%", "--yes"}, "--canary"},
		{[]string{"sample", "kafka://alice:s3cr3t-pw@" + brokers + "/x-dlq"}, "DLQCTL_KAFKA_PASSWORD"},
		{[]string{"sample", "kafka://" + brokers}, "topic"},
	} {
		r := runCLI(t, testenv.Env{}, "", tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Contains(r.Stderr+r.Stdout, "s3cr3t-pw") {
			t.Errorf("%v: exit %d, stderr %q (want exit 2 naming %q, no password)", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

func TestKafkaRedriveKilledMidRunLosesNothing(t *testing.T) {
	brokers, prefix, res, _ := kafkaIncident(t, kafkaseed.Options{Payments: 3000, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	args := []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--rate", "400", "--yes", "-o", "json"}
	env := os.Environ()
	for round := 0; round < 2; round++ {
		cmd := exec.Command(testenv.BuildBinary(t), args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once copies are flowing (not on a clock: wait for them).
		deadline := time.Now().Add(60 * time.Second)
		for {
			n := len(copiesIn(t, brokers, pay))
			if n > (round+1)*total/4 {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("round %d: no progress: %s", round, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	r := runCLI(t, testenv.Env{}, "", args...)
	if r.Code != 0 {
		t.Fatalf("resume: exit %d: %s", r.Code, r.Stderr)
	}
	var rep KafkaRedriveReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	copies := copiesIn(t, brokers, pay)
	if len(copies) != total || rep.Pending != 0 {
		t.Fatalf("after two kill -9 and a resume: %d of %d dead letters replayed, %d pending", len(copies), total, rep.Pending)
	}
	dups := 0
	for _, n := range copies {
		dups += n - 1
	}
	// Each kill can repeat at most the batch in flight (≤ 400 at --rate 400).
	if dups > 2*400 {
		t.Fatalf("%d duplicates after 2 kills, more than 2 batches", dups)
	}
	t.Logf("%d dead letters, %d duplicates after 2 kill -9", total, dups)
}

func TestKafkaAuditFindsDeadLetterTopicMisconfigurations(t *testing.T) {
	brokers, prefix, _, adm := kafkaIncident(t, kafkaseed.Options{Payments: 30, Partitions: 4})
	_, _, _, _, _, pay, _, _, _ := kafkaseed.Topics(prefix)
	// A compacted DLT with fewer partitions than its Spring source, and a
	// retry chain with no DLT.
	compact, short := "compact", "3600000"
	dlt := prefix + "-payments2-dlt"
	if r, err := adm.CreateTopic(t.Context(), 2, 1, map[string]*string{"cleanup.policy": &compact, "retention.ms": &short}, dlt); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	copyRecords(t, brokers, prefix+"-payments-dlt", dlt, 2)
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, prefix+"-lonely-retry-1"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	r := runCLI(t, testenv.Env{}, "", "audit", "kafka://"+brokers+"/"+dlt, "kafka://"+brokers+"/"+prefix+"-lonely-retry-1", "-o", "json")
	if r.Code != 3 {
		t.Fatalf("audit: exit %d (want 3: errors found): %s", r.Code, r.Stderr)
	}
	var rep struct {
		Findings []struct {
			Check   string `json:"check"`
			Queue   string `json:"queue"`
			Related string `json:"related"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range rep.Findings {
		got[f.Check] = f.Queue + " " + f.Related
	}
	for check, want := range map[string]string{
		"kafka-dlt-compacted":        dlt + " ",
		"kafka-dlt-fewer-partitions": dlt + " " + pay,
		"kafka-dlt-retention-short":  dlt + " " + pay,
		"kafka-retry-without-dlt":    prefix + "-lonely-retry-1 ",
	} {
		if got[check] != want {
			t.Errorf("finding %s: %q, want %q (all: %v)", check, got[check], want, got)
		}
	}
}

// copyRecords copies every record of from into to, keeping partitions
// (as Spring's recoverer does), modulo parts (to's partition count).
func copyRecords(t *testing.T, brokers, from, to string, parts int32) {
	t.Helper()
	addr, _ := kafka.ParseAddress("kafka://" + brokers + "/" + from)
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	plan, err := kafka.MakePlan(t.Context(), kadm.NewClient(cl), from, "")
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	_, err = kafka.Peek(t.Context(), addr, kafka.Conn{}, plan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		r := kafka.ToKgo(m, to, m.Headers)
		r.Partition = m.Partition % parts
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pcl, err := kafka.NewClient(addr, kafka.Conn{}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestKafkaRedriveExactlyOnceKilledLeavesNoDuplicateForReadCommitted(t *testing.T) {
	brokers, prefix, res, _ := kafkaIncident(t, kafkaseed.Options{Payments: 2000, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	args := []string{"redrive", "kafka://" + brokers + "/" + payDLT, "--exactly-once", "--rate", "300", "--yes", "-o", "json"}
	cmd := exec.Command(testenv.BuildBinary(t), args...)
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(copiesIn(t, brokers, pay)) < total/3 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	r := runCLI(t, testenv.Env{}, "", args...)
	if r.Code != 0 {
		t.Fatalf("resume: exit %d: %s", r.Code, r.Stderr)
	}
	copies := copiesIn(t, brokers, pay) // read_committed, as the destination's consumers should read
	if len(copies) != total {
		t.Fatalf("%d of %d dead letters replayed", len(copies), total)
	}
	for id, n := range copies {
		if n != 1 {
			t.Fatalf("%s visible %d times to a read_committed consumer after kill -9 and resume", id, n)
		}
	}
}

func TestKafkaQueuesListsDeadLetterTopicsByNameAndHeaders(t *testing.T) {
	brokers, prefix, res, adm := kafkaIncident(t, kafkaseed.Options{})
	orders, r1, _, _, dlq, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	// A DLT with a name no pattern knows, found by its records' headers.
	odd := prefix + "-payments-parking-lot"
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, odd); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	copyRecords(t, brokers, payDLT, odd, 1)
	r := runCLI(t, testenv.Env{}, "", "queues", "kafka://"+brokers+"/"+prefix, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("queues: exit %d: %s", r.Code, r.Stderr)
	}
	var topics []kafka.TopicInfo
	if err := json.Unmarshal([]byte(r.Stdout), &topics); err != nil {
		t.Fatal(err)
	}
	got := map[string]kafka.TopicInfo{}
	for _, ti := range topics {
		got[ti.Name] = ti
	}
	if _, ok := got[orders]; ok {
		t.Fatalf("the source topic %s is listed as a dead-letter topic", orders)
	}
	if ti := got[dlq]; ti.Stage != "dlt" || ti.FoundBy != "name" || ti.Pending != int64(res.DeadLetters[dlq]) || len(ti.Sources) != 1 || ti.Sources[0] != orders {
		t.Fatalf("%s: %+v", dlq, ti)
	}
	if ti := got[r1]; ti.Stage != "retry-1" || ti.Pending != int64(res.Topics[r1]) {
		t.Fatalf("%s: %+v", r1, ti)
	}
	if ti := got[odd]; ti.FoundBy != "headers" || ti.Stage != "dlt" || len(ti.Sources) != 1 || ti.Sources[0] != pay || ti.Pending != int64(res.DeadLetters[payDLT]) {
		t.Fatalf("%s: %+v", odd, ti)
	}
}

func kafkaBucket(t *testing.T) (testenv.Env, string) {
	t.Helper()
	env := testenv.Require(t)
	bucket := testenv.BucketName(t, "karch")
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return env, bucket
}

// archivedIDs reads every record archived under prefix (all runs) and
// counts them by message id.
func archivedIDs(t *testing.T, env testenv.Env, from string) map[string]int {
	t.Helper()
	r := runCLI(t, env, "", "sample", "--from", from, "-n", "1000000", "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("sample --from %s: exit %d: %s", from, r.Code, r.Stderr)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if line == "" {
			continue
		}
		var rec record.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		out[rec.MessageID]++
	}
	return out
}

func TestKafkaArchiveDeleteCommitsPastVerifiedRecordsAndSurvivesKill9(t *testing.T) {
	env, bucket := kafkaBucket(t)
	brokers, prefix, res, adm := kafkaIncident(t, kafkaseed.Options{Payments: 3000, Partitions: 3})
	_, _, _, _, _, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	total := res.DeadLetters[payDLT]
	ref := "kafka://" + brokers + "/" + payDLT
	dest := "s3://" + bucket + "/inc"
	args := []string{"archive", ref, "--to", dest, "--delete", "--part-records", "200", "--rate", "600", "--yes", "-o", "json"}
	pending := func() int64 {
		p, err := kafka.MakePlan(t.Context(), adm, payDLT, "dlqctl-"+payDLT)
		if err != nil {
			t.Fatal(err)
		}
		return p.Pending()
	}
	// kill -9 once some parts are verified and committed past.
	cmd := exec.Command(testenv.BuildBinary(t), args...)
	cmd.Env = env.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for pending() > int64(total*2/3) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the archive made no progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if p := pending(); p == 0 || p == int64(total) {
		t.Fatalf("killed run left %d pending of %d: not a mid-run kill", p, total)
	}
	r := runCLI(t, env, "", args...)
	if r.Code != 0 {
		t.Fatalf("resumed archive: exit %d: %s", r.Code, r.Stderr)
	}
	var sum struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Manifest == "" {
		t.Fatalf("summary %s: %v", r.Stdout, err)
	}
	if v := runCLI(t, env, "", "archive", "verify", sum.Manifest); v.Code != 0 {
		t.Fatalf("verify: exit %d: %s", v.Code, v.Stderr)
	}
	if p := pending(); p != 0 {
		pl, _ := kafka.MakePlan(t.Context(), adm, payDLT, "dlqctl-"+payDLT)
		t.Fatalf("%d pending after the resumed archive: %+v\nsummary: %s\nstderr: %s", p, pl.Partitions, r.Stdout, r.Stderr)
	}
	got := archivedIDs(t, env, dest+"/queue="+payDLT+"/")
	dups := 0
	for _, n := range got {
		dups += n - 1
	}
	if len(got) != total {
		t.Fatalf("%d distinct dead letters archived across both runs, want %d", len(got), total)
	}
	t.Logf("%d archived, %d archived twice (a killed run's unverified or uncommitted part)", total, dups)

	// --delete-records: the topic now starts at the committed offsets.
	if r := runCLI(t, env, "", "archive", ref, "--to", dest, "--delete-records", "--yes"); r.Code != 2 {
		t.Fatalf("--delete-records without --delete: exit %d", r.Code)
	}
	r = runCLI(t, env, "", "archive", ref, "--to", dest, "--delete", "--delete-records", "--yes")
	if r.Code != 0 {
		t.Fatalf("--delete-records: exit %d: %s", r.Code, r.Stderr)
	}
	starts, err := adm.ListStartOffsets(t.Context(), payDLT)
	if err != nil {
		t.Fatal(err)
	}
	ends, _ := adm.ListEndOffsets(t.Context(), payDLT)
	starts.Each(func(o kadm.ListedOffset) {
		e, _ := ends.Lookup(payDLT, o.Partition)
		if o.Offset != e.Offset {
			t.Errorf("partition %d starts at %d after --delete-records, want its end %d", o.Partition, o.Offset, e.Offset)
		}
	})
}

func TestKafkaCheckPendingAndOldestAge(t *testing.T) {
	brokers, prefix, res, _ := kafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ref := "kafka://" + brokers + "/" + dlq
	n := res.DeadLetters[dlq]
	if r := runCLI(t, testenv.Env{}, "", "check", ref, "--max-visible", fmt.Sprint(n), "--max-age", "1h", "-o", "json"); r.Code != 0 {
		t.Fatalf("at the limit: exit %d: %s", r.Code, r.Stderr)
	}
	r := runCLI(t, testenv.Env{}, "", "check", ref, "--max-visible", fmt.Sprint(n-1), "-o", "json")
	if r.Code != 3 || !strings.Contains(r.Stdout, `"status": "breach"`) {
		t.Fatalf("over the limit: exit %d: %s %s", r.Code, r.Stdout, r.Stderr)
	}
	time.Sleep(2200 * time.Millisecond) // ages are whole seconds
	if r := runCLI(t, testenv.Env{}, "", "check", ref, "--max-age", "1s"); r.Code != 3 {
		t.Fatalf("records older than --max-age: exit %d: %s", r.Code, r.Stderr)
	}
	if r := runCLI(t, testenv.Env{}, "", "check", ref, "--max-growth", "5/5m"); r.Code != 2 {
		t.Fatalf("--max-growth on Kafka: exit %d, want 2", r.Code)
	}
}

func TestKafkaWatchTicks(t *testing.T) {
	brokers, prefix, res, _ := kafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	r := runCLI(t, testenv.Env{}, "", "watch", "kafka://"+brokers+"/"+dlq, "--interval", "100ms", "--count", "3", "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("watch: exit %d: %s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], fmt.Sprintf(`"visible":%d`, res.DeadLetters[dlq])) || !strings.Contains(lines[2], `"growth_per_minute":0`) {
		t.Fatalf("ticks:\n%s", r.Stdout)
	}
}

func TestKafkaArchiveThenRestoreToATopic(t *testing.T) {
	env, bucket := kafkaBucket(t)
	brokers, prefix, res, adm := kafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, _, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	recovery := prefix + "-payments-recovery"
	if r, err := adm.CreateTopic(t.Context(), 3, 1, nil, recovery); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	r := runCLI(t, env, "", "archive", "kafka://"+brokers+"/"+payDLT, "--to", "s3://"+bucket+"/k", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("archive: exit %d: %s", r.Code, r.Stderr)
	}
	var sum struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Manifest == "" {
		t.Fatalf("archive summary %s: %v", r.Stdout, err)
	}
	// Without --delete nothing was committed.
	if p, _ := kafka.MakePlan(t.Context(), adm, payDLT, "dlqctl-"+payDLT); p.Pending() != int64(res.DeadLetters[payDLT]) {
		t.Fatalf("archive without --delete left %d pending, want all %d", p.Pending(), res.DeadLetters[payDLT])
	}
	state := t.TempDir()
	to := "kafka://" + brokers + "/" + recovery
	if r := runCLI(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", to, "--dry-run", "-o", "json"); r.Code != 0 {
		t.Fatalf("restore --dry-run: exit %d: %s", r.Code, r.Stderr)
	}
	if r := runCLI(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", to, "--yes", "-o", "json"); r.Code != 0 {
		t.Fatalf("restore: exit %d: %s", r.Code, r.Stderr)
	}
	copies := copiesIn(t, brokers, recovery)
	if len(copies) != res.DeadLetters[payDLT] {
		t.Fatalf("%d records restored to %s, want %d", len(copies), recovery, res.DeadLetters[payDLT])
	}
	for id, n := range copies {
		if n != 1 || !strings.HasPrefix(id, payDLT+"-") {
			t.Fatalf("%s restored %d times", id, n)
		}
	}
	// Keys and headers survive the archive round trip.
	msgs, _ := kafkaMessages(t, brokers, recovery)
	for _, m := range msgs {
		if len(m.Key) == 0 {
			t.Fatalf("%s lost its key", m.ID())
		}
		if _, ok := m.Header("kafka_dlt-original-topic"); ok {
			t.Fatalf("%s kept a dead-letter header", m.ID())
		}
	}
	if r := runCLI(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", to, "--yes"); r.Code != 2 || !strings.Contains(r.Stderr, "already restored") {
		t.Fatalf("second restore: exit %d: %s", r.Code, r.Stderr)
	}
}

func kafkaMessages(t *testing.T, brokers, topic string) ([]*kafka.Message, error) {
	t.Helper()
	addr, _ := kafka.ParseAddress("kafka://" + brokers + "/" + topic)
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	plan, err := kafka.MakePlan(t.Context(), kadm.NewClient(cl), topic, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []*kafka.Message
	_, err = kafka.Peek(t.Context(), addr, kafka.Conn{}, plan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		out = append(out, m)
		return nil
	})
	return out, err
}
