package clitest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// KafkaIncident seeds a fresh Kafka incident for one test.
func KafkaIncident(t *testing.T, o kafkaseed.Options) (brokers, prefix string, res *kafkaseed.Result, adm *kadm.Client) {
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

// CopiesIn counts dlqctl's copies in topic by the dead letter they copy.
func CopiesIn(t *testing.T, brokers, topic string) map[string]int {
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

// EachCopiedOnce fails t unless topic holds exactly one dlqctl copy of
// each of want distinct originals (CopiesIn).
func EachCopiedOnce(t *testing.T, brokers, topic string, want int) {
	t.Helper()
	copies := CopiesIn(t, brokers, topic)
	if len(copies) != want {
		t.Errorf("%d distinct record(s) replayed to %s, want %d", len(copies), topic, want)
	}
	for id, k := range copies {
		if k != 1 {
			t.Errorf("record %s replayed %d times to %s", id, k, topic)
		}
	}
}

// CopyRecords copies every record of from into to, keeping partitions
// (as Spring's recoverer does), modulo parts (to's partition count).
func CopyRecords(t *testing.T, brokers, from, to string, parts int32) {
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

// KafkaBucket creates an S3 bucket for one Kafka archive test.
func KafkaBucket(t *testing.T) (testenv.Env, string) {
	t.Helper()
	env := testenv.Require(t)
	bucket := testenv.BucketName(t, "karch")
	if _, err := env.S3(t).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return env, bucket
}

// ArchivedIDs reads every record archived under prefix (all runs) and
// counts them by message id.
func ArchivedIDs(t *testing.T, env testenv.Env, from string) map[string]int {
	t.Helper()
	r := Run(t, env, "", "sample", "--from", from, "-n", "1000000", "-o", "ndjson")
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

// KafkaMessages peeks every record of topic up to its high watermarks.
func KafkaMessages(t *testing.T, brokers, topic string) ([]*kafka.Message, error) {
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
