package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

func loadCorpus(t *testing.T) []corpus.Message {
	t.Helper()
	msgs, err := corpus.Load(corpus.Dir(clitest.RepoPath(t)))
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestClassifyCorpusOffline runs `classify --from` over the triage corpus
// written as NDJSON records, as `sample -o ndjson` would, and requires every
// message's expected class; `-v` prints per-format accuracy.
func TestClassifyCorpusOffline(t *testing.T) {
	msgs := loadCorpus(t)
	var b strings.Builder
	byID := map[string]corpus.Message{}
	for _, m := range msgs {
		rec, err := m.Record()
		if err != nil {
			t.Fatal(err)
		}
		line, err := inspect.MarshalRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		byID[m.ID] = m
	}
	file := filepath.Join(t.TempDir(), "corpus.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, testenv.Env{}, "", "classify", "--from", file, "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	recs := readNDJSONRecords(t, r.Stdout)
	if len(recs) != len(msgs) {
		t.Fatalf("%d records, want %d", len(recs), len(msgs))
	}
	tally := corpus.NewTally()
	for _, rec := range recs {
		m := byID[rec["message_id"].(string)]
		tally.Add(m, fmt.Sprint(rec["class"]), fmt.Sprint(rec["rule"]))
	}
	t.Logf("classify --from, per format:\n%s", tally.Report())
	for _, w := range tally.Wrong {
		t.Error(w)
	}

	// group: plain messages show "(no failure context)", and --by format
	// names the decoder of every other one.
	g := clitest.Run(t, testenv.Env{}, "", "group", "--from", file, "--by", "format,error", "-o", "json")
	if g.Code != 0 {
		t.Fatalf("group: exit %d: %s", g.Code, g.Stderr)
	}
	var rep struct {
		Groups []struct {
			Key   map[string]string `json:"key"`
			Count int               `json:"count"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(g.Stdout), &rep); err != nil {
		t.Fatalf("group -o json: %v\n%s", err, g.Stdout)
	}
	noContext := 0
	formats := map[string]bool{}
	for _, grp := range rep.Groups {
		formats[grp.Key["format"]] = true
		if grp.Key["error"] == inspect.NoFailure {
			noContext += grp.Count
		}
	}
	plain := 0
	for _, m := range msgs {
		if m.Decoded != nil && m.Decoded.NoFailure {
			plain++
		}
	}
	if noContext != plain {
		t.Errorf("group --by error: %d messages under %q, want the %d without failure context", noContext, inspect.NoFailure, plain)
	}
	for _, f := range []string{"lambda-async", "lambda-destination", "eventbridge", "sns", "cloudevents", "masstransit", "nservicebus", "spring-kafka", "kafka-connect", "enriched", "generic"} {
		if !formats[f] {
			t.Errorf("group --by format has no %s group (groups: %v)", f, formats)
		}
	}
}

// TestClassifyCorpusExplain: --explain shows the format, the evidence with
// where it was read, the family and the deciding rule; for a plain message
// it says SQS recorded no reason.
func TestClassifyCorpusExplain(t *testing.T) {
	msgs := loadCorpus(t)
	var b strings.Builder
	for _, m := range msgs {
		rec, err := m.Record()
		if err != nil {
			t.Fatal(err)
		}
		line, _ := inspect.MarshalRecord(rec)
		b.Write(line)
		b.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), "corpus.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]string{
		"eventbridge-01": {"format: eventbridge", `attributes.ERROR_CODE [code] → "THROTTLING": transient/throttling`,
			"family: transient, decided by attributes.ERROR_CODE", "=> class transient, action redrive (rule transient-failure)"},
		"plain-06": {"format: eventbridge-event", "SQS recorded no reason", "the envelope has no event_version",
			"=> class unknown, action investigate (rule default)"},
		"plain-08":        {"version 7 is not the event's schema version", "=> class unknown, action investigate (rule default)"},
		"plain-01":        {"format: none recognised", "SQS recorded no reason", "=> class unknown, action investigate (rule default)"},
		"spring-kafka-09": {"family: conflict", "YES  conflicting-signals", "=> class unknown, action investigate (rule conflicting-signals)"},
		"eventbridge-03":  {`attributes.ERROR_CODE [code] → "NO_PERMISSIONS": configuration`, "=> class unknown, action investigate (rule configuration-error)"},
	} {
		r := clitest.Run(t, testenv.Env{}, "", "classify", "--from", file, "--explain", id)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d: %s", id, r.Code, r.Stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("%s: explain lacks %q:\n%s", id, w, r.Stdout)
			}
		}
	}
	j := clitest.Run(t, testenv.Env{}, "", "classify", "--from", file, "--explain", "lambda-async-09", "-o", "json")
	var rep cmd.ExplainReport
	if err := json.Unmarshal([]byte(j.Stdout), &rep); err != nil || rep.Format != "lambda-async" || rep.Verdict == nil || rep.Verdict.Family != "transient" || len(rep.Verdict.Readings) == 0 {
		t.Errorf("explain -o json: %v %+v", err, rep)
	}
}

// TestClassifyCorpusFromSQS sends the corpus to the local SQS — messages
// without failure context dead-lettered for real through a RedrivePolicy,
// the others (whose failure context AWS services and frameworks write)
// sent to the DLQ with their attributes — and requires `classify --all`
// to give every message its expected class.
func TestClassifyCorpusFromSQS(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	ctx := context.Background()
	msgs := loadCorpus(t)
	name := testenv.UniqueName(t, "corpus")
	dlqURL, dlqARN := clitest.CreateQueue(t, c, name+"-dlq", nil)
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, dlqARN)
	srcURL, _ := clitest.CreateQueue(t, c, name+"-src", map[string]string{"RedrivePolicy": policy, "VisibilityTimeout": "1"})

	byID := map[string]corpus.Message{}
	redriven := 0
	for _, m := range msgs {
		attrs, err := m.Attrs()
		if err != nil {
			t.Fatal(err)
		}
		sqsAttrs, err := sqs.SQSAttributes(attrs)
		if err != nil {
			t.Fatal(err)
		}
		url := dlqURL
		if m.Format == "plain" {
			url = srcURL
			redriven++
		}
		out, err := c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(m.BodyText()), MessageAttributes: sqsAttrs})
		if err != nil {
			t.Fatalf("send %s: %v", m.ID, err)
		}
		byID[aws.ToString(out.MessageId)] = m
	}
	// Dead-letter the plain ones for real: receive without deleting until
	// the redrive policy moves them.
	deadline := time.Now().Add(90 * time.Second)
	for {
		v, inFlight := clitest.QueueDepth(t, c, srcURL)
		if v == 0 && inFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source queue still holds %d visible, %d in flight", v, inFlight)
		}
		_, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}

	r := clitest.Run(t, env, "", "classify", name+"-dlq", "--all", "-o", "ndjson", "--visibility", "60s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	recs := readNDJSONRecords(t, r.Stdout)
	if len(recs) != len(msgs) {
		t.Fatalf("classify read %d messages, want %d", len(recs), len(msgs))
	}
	tally := corpus.NewTally()
	withSource := 0
	for _, rec := range recs {
		m, ok := byID[rec["message_id"].(string)]
		if !ok {
			t.Fatalf("unknown message %v", rec["message_id"])
		}
		if sys, _ := rec["system"].(map[string]any); m.Format == "plain" && sys["source_queue_arn"] != nil {
			withSource++
		}
		tally.Add(m, fmt.Sprint(rec["class"]), fmt.Sprint(rec["rule"]))
	}
	t.Logf("classify --all against SQS, per format:\n%s", tally.Report())
	for _, w := range tally.Wrong {
		t.Error(w)
	}
	if !env.IsMoto() && withSource != redriven {
		t.Errorf("%d of %d plain messages carry DeadLetterQueueSourceArn; they were not dead-lettered by the redrive policy", withSource, redriven)
	}
	assertUntouched(t, c, dlqURL, len(msgs))
}
