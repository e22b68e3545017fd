package seed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// receiveAll receives (and deletes) messages until want have arrived, asking
// for every attribute both ways: local-aws-sqs ignores
// MessageSystemAttributeNames and only answers the deprecated AttributeNames.
func receiveAll(t *testing.T, c *sqs.Client, url string, want int) []types.Message {
	t.Helper()
	ctx := t.Context()
	var got []types.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           60,
			AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // emulator needs it
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			got = append(got, m)
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(del) > 0 {
			if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

func TestIncidentLandsInDLQ(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	prefix := testenv.UniqueName(t, "inc")
	before := time.Now()
	truth, err := seed.Incident(t.Context(), c, seed.Options{Prefix: prefix, Scale: 25})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { truth.DeleteQueues(context.Background(), c) })
	t.Logf("seeded %d messages: %+v", len(truth.Messages), truth.Timings)

	for _, q := range truth.Queues() {
		if !strings.HasSuffix(q.ARN, ":"+q.Name) || !strings.HasSuffix(q.URL, "/"+q.Name) {
			t.Errorf("queue %s: URL %q ARN %q", q.Name, q.URL, q.ARN)
		}
	}
	byID := truth.ByMessageID()
	if len(byID) != len(truth.Messages) {
		t.Fatalf("%d distinct message ids for %d messages", len(byID), len(truth.Messages))
	}
	if n := len(truth.ByBodySHA256()); n != len(truth.Messages) {
		t.Fatalf("%d distinct bodies for %d messages", n, len(truth.Messages))
	}

	// Sources are empty and have their normal visibility timeout back.
	for _, q := range []seed.Queue{truth.Orders, truth.Payments, truth.FIFOSource} {
		out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(q.URL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Attributes["ApproximateNumberOfMessages"]; got != "0" {
			t.Errorf("%s still holds %s messages", q.Name, got)
		}
		if got := out.Attributes["VisibilityTimeout"]; got != "30" {
			t.Errorf("%s VisibilityTimeout = %s, want 30", q.Name, got)
		}
		var rp struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     any    `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(out.Attributes["RedrivePolicy"]), &rp); err != nil {
			t.Errorf("%s RedrivePolicy %q: %v", q.Name, out.Attributes["RedrivePolicy"], err)
		}
		if fmt.Sprint(rp.MaxReceiveCount) != strconv.Itoa(q.MaxReceiveCount) {
			t.Errorf("%s maxReceiveCount = %v, want %d", q.Name, rp.MaxReceiveCount, q.MaxReceiveCount)
		}
	}

	for _, dlq := range []seed.Queue{truth.DLQ, truth.FIFODLQ} {
		t.Run(dlq.Name, func(t *testing.T) {
			want := truth.InQueue(dlq.Name)
			got := receiveAll(t, c, dlq.URL, len(want))
			if len(got) != len(want) {
				t.Fatalf("received %d messages from %s, want %d", len(got), dlq.Name, len(want))
			}
			gotKinds := map[string]int{}
			lastSeq := map[string]int{}
			for _, m := range got {
				s, ok := byID[aws.ToString(m.MessageId)]
				if !ok {
					t.Fatalf("unexpected message %s in %s", aws.ToString(m.MessageId), dlq.Name)
				}
				gotKinds[string(s.Kind)]++
				if aws.ToString(m.Body) != s.Body {
					t.Errorf("%s (%s): body differs from what was sent", s.MessageID, s.Kind)
				}
				if src := m.Attributes["DeadLetterQueueSourceArn"]; src != s.SourceARN {
					t.Errorf("%s: DeadLetterQueueSourceArn = %q, want %q", s.MessageID, src, s.SourceARN)
				}
				if len(m.MessageAttributes) != len(s.Attributes) {
					t.Errorf("%s: %d message attributes, sent %d", s.MessageID, len(m.MessageAttributes), len(s.Attributes))
				}
				for k, sent := range s.Attributes {
					a := m.MessageAttributes[k]
					if aws.ToString(a.DataType) != aws.ToString(sent.DataType) || aws.ToString(a.StringValue) != aws.ToString(sent.StringValue) || !bytes.Equal(a.BinaryValue, sent.BinaryValue) {
						t.Errorf("%s: attribute %s = %s/%q/%x, sent %s/%q/%x", s.MessageID, k,
							aws.ToString(a.DataType), aws.ToString(a.StringValue), a.BinaryValue,
							aws.ToString(sent.DataType), aws.ToString(sent.StringValue), sent.BinaryValue)
					}
				}
				// Emulator quirk: the DLQ copy is a new record: SentTimestamp is
				// the move time and the receive count restarts (real SQS keeps
				// the original enqueue time on standard queues).
				if rc := m.Attributes["ApproximateReceiveCount"]; rc != "1" {
					t.Errorf("%s: ApproximateReceiveCount = %s on first DLQ receive, want 1", s.MessageID, rc)
				}
				if ms, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); time.UnixMilli(ms).Before(before.Add(-time.Second)) {
					t.Errorf("%s: SentTimestamp %s predates seeding", s.MessageID, m.Attributes["SentTimestamp"])
				}
				if dlq.FIFO {
					if g := m.Attributes["MessageGroupId"]; g != s.GroupID {
						t.Errorf("%s: MessageGroupId = %q, want %q", s.MessageID, g, s.GroupID)
					}
					if d := m.Attributes["MessageDeduplicationId"]; d != s.DedupID {
						t.Errorf("%s: MessageDeduplicationId = %q, want %q", s.MessageID, d, s.DedupID)
					}
					if prev, ok := lastSeq[s.GroupID]; ok && s.GroupSeq <= prev {
						t.Errorf("group %s: message %d arrived after %d", s.GroupID, s.GroupSeq, prev)
					}
					lastSeq[s.GroupID] = s.GroupSeq
				}
			}
			wantKinds := map[string]int{}
			for _, s := range want {
				wantKinds[string(s.Kind)]++
			}
			if fmt.Sprint(gotKinds) != fmt.Sprint(wantKinds) {
				t.Errorf("kinds in %s = %v, want %v", dlq.Name, gotKinds, wantKinds)
			}
			if dlq.FIFO && len(lastSeq) < 3 {
				t.Errorf("FIFO DLQ holds %d message groups, want at least 3", len(lastSeq))
			}
		})
	}
}

func TestIncidentRefusesToMixIncidents(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	prefix := testenv.UniqueName(t, "mix")
	if _, err := seed.Incident(t.Context(), c, seed.Options{Prefix: prefix}); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Incident(t.Context(), c, seed.Options{Prefix: prefix}); err == nil {
		t.Fatal("second Incident with the same prefix succeeded; want an error naming the prefix clash")
	}
	truth, err := seed.Incident(t.Context(), c, seed.Options{Prefix: prefix, Reset: true})
	if err != nil {
		t.Fatalf("Incident with Reset: %v", err)
	}
	t.Cleanup(func() { truth.DeleteQueues(context.Background(), c) })
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(truth.DLQ.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Attributes["ApproximateNumberOfMessages"], strconv.Itoa(len(truth.InQueue(truth.DLQ.Name))); got != want {
		t.Errorf("DLQ after Reset holds %s messages, want %s", got, want)
	}
}

func TestPlanContent(t *testing.T) {
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	a := seed.PlanForTest("demo", now, 7)
	b := seed.PlanForTest("demo", now, 7)
	if len(a) != len(b) {
		t.Fatalf("plan length differs between runs: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Body != b[i].Body {
			t.Fatalf("message %d (%s) differs between runs with the same prefix and time", i, a[i].Kind)
		}
	}
	truth := &seed.Truth{Messages: a}

	kinds := truth.CountBy(func(m seed.Seeded) string { return string(m.Kind) })
	for _, k := range []seed.Kind{seed.KindEnvelope, seed.KindEnriched, seed.KindAttrFailure, seed.KindMalformed,
		seed.KindPlaintext, seed.KindUnicode, seed.KindSecret, seed.KindLarge, seed.KindFIFO} {
		if kinds[string(k)] == 0 {
			t.Errorf("no %s messages", k)
		}
	}
	classes := truth.CountBy(func(m seed.Seeded) string { return string(m.Class) })
	for _, c := range []seed.Class{seed.ClassTransient, seed.ClassPermanent, seed.ClassSchemaMismatch, seed.ClassBusiness, seed.ClassUnknown} {
		if classes[string(c)] == 0 {
			t.Errorf("no %s messages", c)
		}
	}
	if n := len(truth.Filter(func(m seed.Seeded) bool { return m.Extra })); n != 7 {
		t.Errorf("Scale 7 added %d extra messages", n)
	}
	dataTypes := map[string]bool{}
	var failureTypes []string
	for _, m := range a {
		if len(m.Attributes) > 10 {
			t.Errorf("%s message has %d attributes (SQS allows 10)", m.Kind, len(m.Attributes))
		}
		for _, v := range m.Attributes {
			dataTypes[aws.ToString(v.DataType)] = true
		}
		if m.FailureType != "" && !slices.Contains(failureTypes, m.FailureType) {
			failureTypes = append(failureTypes, m.FailureType)
		}
		valid := json.Valid([]byte(m.Body))
		switch m.Kind {
		case seed.KindMalformed, seed.KindPlaintext:
			if valid {
				t.Errorf("%s body is valid JSON: %.60s", m.Kind, m.Body)
			}
		case seed.KindEnvelope, seed.KindEnriched, seed.KindAttrFailure, seed.KindSecret, seed.KindLarge, seed.KindFIFO:
			if !valid {
				t.Errorf("%s body is not valid JSON: %.60s", m.Kind, m.Body)
			}
			if m.EventType == "" || m.EventID == "" || !strings.Contains(m.Body, m.EventID) {
				t.Errorf("%s message without envelope fields", m.Kind)
			}
		}
		if m.Kind == seed.KindEnriched && !strings.Contains(m.Body, `"failure_reason":`) {
			t.Errorf("enriched body lacks failure_reason: %.80s", m.Body)
		}
		if m.Kind == seed.KindAttrFailure && (aws.ToString(m.Attributes["dlq_reason"].StringValue) == "" || aws.ToString(m.Attributes["error_type"].StringValue) == "") {
			t.Errorf("attr-failure message lacks dlq_reason/error_type attributes")
		}
		if m.Kind == seed.KindLarge && (len(m.Body) < seed.LargeBodyTarget-8*1024 || len(m.Body) > 1000*1000) {
			t.Errorf("large body is %d bytes, want about %d", len(m.Body), seed.LargeBodyTarget)
		}
		for _, s := range m.Secrets {
			if !strings.Contains(m.Body, s) {
				t.Errorf("secret %q not in its body", s)
			}
		}
		if m.Class == seed.ClassSchemaMismatch && m.EventVersion != 9 {
			t.Errorf("schema-mismatch message has eventVersion %d", m.EventVersion)
		}
	}
	for _, dt := range []string{"String", "Number", "Binary", "String.tenant"} {
		if !dataTypes[dt] {
			t.Errorf("no message attribute of type %s", dt)
		}
	}
	for _, ft := range []string{"DatabaseTimeout", "Throttling", "HttpError", "ConnectionReset", "BusinessRuleViolation"} {
		if !slices.Contains(failureTypes, ft) {
			t.Errorf("no %s failure (have %v)", ft, failureTypes)
		}
	}
	var emoji, cyrillic, cjk bool
	for _, m := range truth.Filter(func(m seed.Seeded) bool { return m.Kind == seed.KindUnicode }) {
		for _, r := range m.Body {
			emoji = emoji || r >= 0x1F300
			cyrillic = cyrillic || unicode.Is(unicode.Cyrillic, r)
			cjk = cjk || unicode.Is(unicode.Han, r)
		}
	}
	if !emoji || !cyrillic || !cjk {
		t.Errorf("unicode bodies: emoji %v, Cyrillic %v, CJK %v; want all", emoji, cyrillic, cjk)
	}
	groups := truth.CountBy(func(m seed.Seeded) string { return m.GroupID })
	delete(groups, "")
	if len(groups) < 3 {
		t.Errorf("FIFO groups = %v, want at least 3", groups)
	}
}

func TestFillDLQ(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	for _, tc := range []struct {
		suffix string
		n      int
	}{{"", 1234}, {".fifo", 37}} {
		name := testenv.UniqueName(t, "fill") + tc.suffix
		attrs := map[string]string{}
		if tc.suffix != "" {
			attrs["FifoQueue"] = "true"
		}
		q, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
		start := time.Now()
		if err := seed.FillDLQ(t.Context(), c, aws.ToString(q.QueueUrl), tc.n, func(i int) string {
			return fmt.Sprintf(`{"n":%d,"reason":"timeout after %dms"}`, i, 100+i%900)
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("FillDLQ %d into %s: %s", tc.n, name, time.Since(start))
		out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
			QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Attributes["ApproximateNumberOfMessages"]; got != strconv.Itoa(tc.n) {
			t.Errorf("%s holds %s messages after FillDLQ(%d)", name, got, tc.n)
		}
	}
}

// The emulator facts below are pinned to local-aws-sqs 2.0.2. If one of
// these tests fails after an upgrade, the emulator changed: update
// docs/emulators.md and drop or adjust the workaround named in the test.
func TestEmulatorQuirks(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	ctx := t.Context()
	newQueue := func(t *testing.T, attrs map[string]string) string {
		name := testenv.UniqueName(t, "quirk")
		if attrs["FifoQueue"] == "true" {
			name += ".fifo"
		}
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
		return aws.ToString(q.QueueUrl)
	}
	send := func(t *testing.T, url string, bodies ...string) {
		for _, b := range bodies {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Workaround: every receive that needs system attributes sends
	// AttributeNames ["All"] too (receiveAll above, pkg/broker/sqs).
	t.Run("ReceiveMessage ignores MessageSystemAttributeNames", func(t *testing.T) {
		url := newQueue(t, nil)
		send(t, url, "a", "b")
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), VisibilityTimeout: 60,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
		}
		if n := len(out.Messages[0].Attributes); n != 0 {
			t.Errorf("MessageSystemAttributeNames alone returned %d attributes: the emulator now honours it", n)
		}
		out, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), VisibilityTimeout: 60,
			AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // the workaround
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
		}
		for _, k := range []string{"SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp"} {
			if out.Messages[0].Attributes[k] == "" {
				t.Errorf("AttributeNames [All] did not return %s: %v", k, out.Messages[0].Attributes)
			}
		}
	})

	// Workaround: seed.Incident sets VisibilityTimeout 0 with
	// SetQueueAttributes after CreateQueue.
	t.Run("CreateQueue ignores VisibilityTimeout 0", func(t *testing.T) {
		url := newQueue(t, map[string]string{"VisibilityTimeout": "0"})
		vt := func() string {
			out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout},
			})
			if err != nil {
				t.Fatal(err)
			}
			return out.Attributes["VisibilityTimeout"]
		}
		if got := vt(); got != "30" {
			t.Errorf("VisibilityTimeout after CreateQueue with 0 = %s: the emulator now honours it", got)
		}
		if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "0"},
		}); err != nil {
			t.Fatal(err)
		}
		if got := vt(); got != "0" {
			t.Errorf("VisibilityTimeout after SetQueueAttributes 0 = %s, want 0", got)
		}
	})

	// Consequence: releasing a message (visibility 0) inflates its receive
	// count, and on a queue with a RedrivePolicy a release can dead-letter
	// it. Real SQS counts receives only.
	t.Run("ChangeMessageVisibility increments ApproximateReceiveCount", func(t *testing.T) {
		url := newQueue(t, nil)
		send(t, url, "x")
		recv := func() types.Message {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), VisibilityTimeout: 60,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // emulator
			})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
			}
			return out.Messages[0]
		}
		m := recv()
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if got := recv().Attributes["ApproximateReceiveCount"]; got != "3" {
			t.Errorf("receive count after receive, release, receive = %s; the emulator counted 3 (real SQS: 2)", got)
		}
	})

	// Real SQS blocks a message group while one of its messages is in
	// flight; the emulator hands out the rest of the group.
	t.Run("FIFO receive does not lock the message group", func(t *testing.T) {
		url := newQueue(t, map[string]string{"FifoQueue": "true"})
		for i, g := range []string{"a", "a", "b"} {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(url), MessageBody: aws.String(g + strconv.Itoa(i)),
				MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(strconv.Itoa(i)),
			}); err != nil {
				t.Fatal(err)
			}
		}
		first, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, VisibilityTimeout: 60})
		if err != nil || len(first.Messages) != 1 || aws.ToString(first.Messages[0].Body) != "a0" {
			t.Fatalf("first receive: %v %v", err, first.Messages)
		}
		rest, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for _, m := range rest.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
		if !slices.Contains(bodies, "a1") {
			t.Errorf("second receive returned %v: group a is now locked while a0 is in flight (as on real SQS)", bodies)
		}
	})
}

func BenchmarkIncident(b *testing.B) {
	env := testenv.Require(b)
	c := env.SQS(b)
	for _, scale := range []int{0, 1000} {
		b.Run(fmt.Sprintf("scale=%d", scale), func(b *testing.B) {
			for b.Loop() {
				truth, err := seed.Incident(b.Context(), c, seed.Options{Prefix: testenv.UniqueName(b, "bench"), Scale: scale})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(truth.Messages)), "msgs/op")
				b.StopTimer()
				truth.DeleteQueues(b.Context(), c)
				b.StartTimer()
			}
		})
	}
}

func BenchmarkFillDLQ(b *testing.B) {
	env := testenv.Require(b)
	c := env.SQS(b)
	const n = 10000
	body := strings.Repeat("x", 512)
	for b.Loop() {
		q, err := c.CreateQueue(b.Context(), &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(b, "fillbench"))})
		if err != nil {
			b.Fatal(err)
		}
		if err := seed.FillDLQ(b.Context(), c, aws.ToString(q.QueueUrl), n, func(int) string { return body }); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c.DeleteQueue(b.Context(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		b.StartTimer()
	}
	b.ReportMetric(n, "msgs/op")
}
