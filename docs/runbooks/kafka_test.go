package runbooks

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestKafkaRunbook runs kafka-dlt.md against the stack's Kafka server
// (kfake) on a freshly seeded incident and checks that exactly the
// VALIDATION dead letters were replayed, once each, and the rest archived
// (step 7).
func TestKafkaRunbook(t *testing.T) {
	k := kafkaIncident(t)
	runRunbookKilling(t, k.env, "kafka-dlt.md", k.inc, nil)
	k.check(t)
}

// kafkaRunbookIncident is a seeded Kafka incident with what the runbook
// must do to it.
type kafkaRunbookIncident struct {
	env         testenv.Env
	inc         *incident
	cl          *kgo.Client
	addr        kafka.Address
	orders, dlq string
	want        map[string]bool // the VALIDATION dead letters, by id
	deadLetters int
}

func (k *kafkaRunbookIncident) check(t *testing.T) {
	t.Helper()
	checkKafkaRunbook(t, k.env, k.inc, k.cl, k.addr, k.orders, k.dlq, k.want, k.deadLetters)
}

func kafkaIncident(t *testing.T) *kafkaRunbookIncident {
	t.Helper()
	const name = "kafka-dlt.md"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "docs/runbooks/"+name) {
		t.Fatalf("README.md does not link docs/runbooks/%s", name)
	}
	blocks := readRunbook(t, name)
	if len(blocks) == 0 || blocks[0].Kind != "env" {
		t.Fatal("the first sh block must be the env block")
	}
	if p := checkVariables(blocks); len(p) > 0 {
		t.Fatal(strings.Join(p, "\n"))
	}
	env := testenv.Require(t)
	brokers := testenv.RequireKafka(t)
	addr, _ := kafka.ParseAddress("kafka://" + brokers + "/x")
	cl, err := kafka.NewClient(addr, kafka.Conn{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	prefix := strings.ToLower(testenv.UniqueName(t, "rb"))
	res, err := kafkaseed.Seed(t.Context(), cl, kafkaseed.Options{Prefix: prefix, Orders: 120})
	if err != nil {
		t.Fatal(err)
	}
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	adm := kadm.NewClient(cl)

	// What the runbook should replay: the VALIDATION dead letters.
	before, _ := kafka.MakePlan(t.Context(), adm, dlq, "")
	want := map[string]bool{}
	_, err = kafka.Peek(t.Context(), addr.WithTopic(dlq), kafka.Conn{}, before, kafka.PeekOptions{}, func(m *kafka.Message) error {
		if v, _ := m.Header("dlq_reason"); string(v) == "VALIDATION" {
			want[m.ID()] = true
		}
		return nil
	})
	if err != nil || len(want) == 0 {
		t.Fatalf("seeded %d VALIDATION dead letters: %v", len(want), err)
	}

	bucket := testenv.BucketName(t, "rbk")
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	inc := &incident{bucket: bucket, vars: map[string]string{
		"BROKERS": brokers, "DLT": dlq, "CONSUMER_GROUP": prefix + "-orders-service",
		// The stack's kfake is plaintext; an explicit flag shows every
		// command takes KAFKA_FLAGS.
		"KAFKA_FLAGS": "--kafka-tls=false", "DLQCTL_KAFKA_PASSWORD": "",
		"AWS_REGION": env.Region, "AWS_PROFILE": "", "BUCKET": bucket,
		"VERIFY_FOR": "5s", "DELETE_RECORDS": "yes",
	}}
	return &kafkaRunbookIncident{env: env, inc: inc, cl: cl, addr: addr, orders: orders, dlq: dlq, want: want, deadLetters: res.DeadLetters[dlq]}
}

// checkKafkaRunbook: exactly the VALIDATION dead letters were replayed,
// once each; every other dead letter is in the archive (at least once: a
// killed archive's unverified part is archived again), nothing is pending
// for dlqctl's group, and DELETE_RECORDS=yes deleted the archived records
// from the DLT.
func checkKafkaRunbook(t *testing.T, env testenv.Env, inc *incident, cl *kgo.Client, addr kafka.Address, orders, dlq string, want map[string]bool, deadLetters int) {
	t.Helper()
	adm := kadm.NewClient(cl)

	// Exactly the VALIDATION records were replayed, once each.
	srcPlan, _ := kafka.MakePlan(t.Context(), adm, orders, "")
	got := map[string]int{}
	_, err := kafka.Peek(t.Context(), addr.WithTopic(orders), kafka.Conn{}, srcPlan, kafka.PeekOptions{}, func(m *kafka.Message) error {
		if mk := kafka.ReplayMarker(m.Headers); mk != nil {
			got[mk.OriginalID]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records replayed, want the %d VALIDATION dead letters", len(got), len(want))
	}
	for id, n := range got {
		if !want[id] || n != 1 {
			t.Fatalf("%s replayed %d times (VALIDATION: %v)", id, n, want[id])
		}
	}
	after, err := kafka.MakePlan(t.Context(), adm, dlq, "dlqctl-"+dlq)
	if err != nil {
		t.Fatal(err)
	}
	if after.Pending() != 0 {
		t.Fatalf("%d records pending after the runbook, want 0 (step 7 archives what is left)", after.Pending())
	}
	// Every record that was not replayed is in the archive.
	archived := map[string]bool{}
	for _, m := range manifests(t, env, inc.bucket, "kafka/") {
		for _, id := range archivedIDs(t, env, "s3://"+inc.bucket+"/"+m) {
			archived[id] = true
		}
	}
	if len(archived) != deadLetters-len(want) {
		t.Errorf("%d distinct records archived, want the %d dead letters that were not replayed", len(archived), deadLetters-len(want))
	}
	for id := range want {
		if archived[id] {
			t.Errorf("%s was replayed and archived", id)
		}
	}
	// DELETE_RECORDS=yes: the DLT starts at dlqctl's committed offsets.
	starts, err := adm.ListStartOffsets(t.Context(), dlq)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(t.Context(), dlq)
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if end, _ := ends.Lookup(dlq, o.Partition); o.Offset != end.Offset {
			t.Errorf("%s partition %d starts at %d, ends at %d: --delete-records left archived records in the topic", dlq, o.Partition, o.Offset, end.Offset)
		}
	})
}
