package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestKafkaSampleAndGroupByStage(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	orders, _, _, _, dlq, pay, payDLT, _, _ := kafkaseed.Topics(prefix)

	r := clitest.Run(t, testenv.Env{}, "", "sample", "kafka://"+brokers+"/"+payDLT, "-n", "100", "-o", "json")
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

	r = clitest.Run(t, testenv.Env{}, "", "group", "kafka://"+brokers+"/"+dlq, "--by", "stage", "--all", "-o", "json")
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

	// Once a run handled every record, a sample finds nothing pending for
	// dlqctl's group, and says why "no messages" is not an empty topic.
	state := t.TempDir()
	if r := clitest.Run(t, testenv.Env{}, "", "redrive", "kafka://"+brokers+"/"+payDLT, "--yes", "--state-dir", state); r.Code != 0 {
		t.Fatalf("redrive: exit %d: %s", r.Code, r.Stderr)
	}
	r = clitest.Run(t, testenv.Env{}, "", "sample", "kafka://"+brokers+"/"+payDLT, "-n", "5")
	if r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "nothing pending in kafka://"+brokers+"/"+payDLT+" for consumer group dlqctl-"+payDLT) || !strings.Contains(r.Stderr, "--kafka-group NAME") {
		t.Fatalf("sample after the redrive: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
