package health

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

func TestKafkaAuditFindsDeadLetterTopicMisconfigurations(t *testing.T) {
	brokers, prefix, _, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 30, Partitions: 4})
	_, _, _, _, _, pay, _, _, _ := kafkaseed.Topics(prefix)
	// A compacted DLT with fewer partitions than its Spring source, and a
	// retry chain with no DLT.
	compact, short := "compact", "3600000"
	dlt := prefix + "-payments2-dlt"
	if r, err := adm.CreateTopic(t.Context(), 2, 1, map[string]*string{"cleanup.policy": &compact, "retention.ms": &short}, dlt); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	clitest.CopyRecords(t, brokers, prefix+"-payments-dlt", dlt, 2)
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, prefix+"-lonely-retry-1"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	r := clitest.Run(t, testenv.Env{}, "", "audit", "kafka://"+brokers+"/"+dlt, "kafka://"+brokers+"/"+prefix+"-lonely-retry-1", "-o", "json")
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

// TestKafkaAuditOfAClusterAuditsWhatQueuesLists: audit kafka://HOST:PORT
// --prefix P audits every dead-letter topic of the cluster whose name
// starts with P — by its name or by its records' headers — and every retry
// chain without one; a chain whose dead-letter topic exists raises
// nothing, and a prefix with no topics is exit 0 with a note.
func TestKafkaAuditOfAClusterAuditsWhatQueuesLists(t *testing.T) {
	brokers, prefix, _, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 30, Partitions: 4})
	_, _, _, _, dlq, _, payDLT, _, _ := kafkaseed.Topics(prefix)
	compact := "compact"
	dlt := prefix + "-payments2-dlt"
	if r, err := adm.CreateTopic(t.Context(), 2, 1, map[string]*string{"cleanup.policy": &compact}, dlt); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	clitest.CopyRecords(t, brokers, prefix+"-payments-dlt", dlt, 2)
	odd := prefix + "-payments-parking-lot"
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, odd); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	clitest.CopyRecords(t, brokers, payDLT, odd, 1)
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, prefix+"-lonely-retry-1"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	r := clitest.Run(t, testenv.Env{}, "", "audit", "kafka://"+brokers, "--prefix", prefix, "-o", "json")
	if r.Code != 3 {
		t.Fatalf("audit of the cluster: exit %d (want 3: the compacted DLT is an error): %s", r.Code, r.Stderr)
	}
	var rep struct {
		Queues   []string `json:"queues"`
		Notes    []string `json:"notes"`
		Findings []struct {
			Check string `json:"check"`
			Queue string `json:"queue"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	audited := strings.Join(rep.Queues, " ")
	for _, topic := range []string{dlq, payDLT, dlt, odd, prefix + "-lonely-retry-1"} {
		if !strings.Contains(audited+" ", "/"+topic+" ") {
			t.Errorf("%s was not audited: %v", topic, rep.Queues)
		}
	}
	got := map[string]bool{}
	for _, f := range rep.Findings {
		got[f.Check+" "+f.Queue] = true
		if f.Check == "kafka-retry-without-dlt" && f.Queue != prefix+"-lonely-retry-1" {
			t.Errorf("a retry chain with a dead-letter topic is reported without one: %+v", f)
		}
	}
	for _, want := range []string{"kafka-dlt-compacted " + dlt, "kafka-retry-without-dlt " + prefix + "-lonely-retry-1"} {
		if !got[want] {
			t.Errorf("no finding %q (all: %v)", want, got)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), odd+": audited as a dead-letter topic because its records carry dead-letter headers") {
		t.Errorf("no note says why %s was audited: %q", odd, rep.Notes)
	}

	r = clitest.Run(t, testenv.Env{}, "", "audit", "kafka://"+brokers, "--prefix", prefix+"-nothing-here", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stderr, "no dead-letter or retry topics on kafka://"+brokers+" whose name starts with "+prefix+"-nothing-here") {
		t.Errorf("audit of a prefix with no topics: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

func TestKafkaQueuesListsDeadLetterTopicsByNameAndHeaders(t *testing.T) {
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{})
	orders, r1, _, _, dlq, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	// A DLT with a name no pattern knows, found by its records' headers.
	odd := prefix + "-payments-parking-lot"
	if r, err := adm.CreateTopic(t.Context(), 1, 1, nil, odd); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	clitest.CopyRecords(t, brokers, payDLT, odd, 1)
	r := clitest.Run(t, testenv.Env{}, "", "queues", "kafka://"+brokers+"/"+prefix, "-o", "json")
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

func TestKafkaCheckPendingAndOldestAge(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ref := "kafka://" + brokers + "/" + dlq
	n := res.DeadLetters[dlq]
	if r := clitest.Run(t, testenv.Env{}, "", "check", ref, "--max-visible", fmt.Sprint(n), "--max-age", "1h", "-o", "json"); r.Code != 0 {
		t.Fatalf("at the limit: exit %d: %s", r.Code, r.Stderr)
	}
	r := clitest.Run(t, testenv.Env{}, "", "check", ref, "--max-visible", fmt.Sprint(n-1), "-o", "json")
	if r.Code != 3 || !strings.Contains(r.Stdout, `"status": "breach"`) {
		t.Fatalf("over the limit: exit %d: %s %s", r.Code, r.Stdout, r.Stderr)
	}
	time.Sleep(2200 * time.Millisecond) // ages are whole seconds
	if r := clitest.Run(t, testenv.Env{}, "", "check", ref, "--max-age", "1s"); r.Code != 3 {
		t.Fatalf("records older than --max-age: exit %d: %s", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, testenv.Env{}, "", "check", ref, "--max-growth", "5/5m"); r.Code != 2 {
		t.Fatalf("--max-growth on Kafka: exit %d, want 2", r.Code)
	}
}

func TestKafkaWatchTicks(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	_, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	r := clitest.Run(t, testenv.Env{}, "", "watch", "kafka://"+brokers+"/"+dlq, "--interval", "100ms", "--count", "3", "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("watch: exit %d: %s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], fmt.Sprintf(`"visible":%d`, res.DeadLetters[dlq])) || !strings.Contains(lines[2], `"growth_per_minute":0`) {
		t.Fatalf("ticks:\n%s", r.Stdout)
	}
}
