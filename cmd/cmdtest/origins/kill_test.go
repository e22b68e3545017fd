package origins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// originKind is one kind of non-queue DLQ for the kill -9 test: how to set
// it up, what each message's body and attributes are, and how to count what
// reached the origin (by body / payload).
type originKind struct {
	name  string
	setup func(t *testing.T, s *stack, dlqARN string) (attrs func(i int) map[string]string, body func(i int) string, arrived func() map[string]int)
}

var killKinds = []originKind{
	{name: "lambda-async", setup: func(t *testing.T, s *stack, dlqARN string) (func(int) map[string]string, func(int) string, func() map[string]int) {
		// Slow to answer: the kill lands while invocations are in flight.
		fn, _ := s.function(t, "kill-fn", dlqARN, 3, map[string]string{"LAMBDAFAKE_DELAY_MS": "400"})
		return lambdaAsyncAttrs, func(i int) string { return fmt.Sprintf(`{"orderId":"k-%04d"}`, i) }, func() map[string]int { return s.invokedWith(fn) }
	}},
	{name: "sns-subscription", setup: func(t *testing.T, s *stack, dlqARN string) (func(int) map[string]string, func(int) string, func() map[string]int) {
		topic, err := s.sns.CreateTopic(t.Context(), &sns.CreateTopicInput{Name: aws.String(strings.ReplaceAll(dlqARN[strings.LastIndexByte(dlqARN, ':')+1:], "dlq", "topic"))})
		if err != nil {
			t.Fatal(err)
		}
		url, arn := s.queue(t, "kill-sub", nil)
		if _, err := s.sns.Subscribe(t.Context(), &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn),
			Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `"}`}}); err != nil {
			t.Fatal(err)
		}
		body := func(i int) string {
			return fmt.Sprintf(`{"Type":"Notification","MessageId":"m-%04d","TopicArn":"%s","Message":"{\"orderId\":\"k-%04d\"}","Timestamp":"2026-12-04T02:00:00.000Z","SignatureVersion":"1","Signature":"c2ln","SigningCertURL":"https://sns/cert.pem","UnsubscribeURL":"https://sns/unsub"}`, i, aws.ToString(topic.TopicArn), i)
		}
		return nil, body, func() map[string]int { return s.bodiesIn(t, url) }
	}},
	{name: "eventbridge-target", setup: func(t *testing.T, s *stack, dlqARN string) (func(int) map[string]string, func(int) string, func() map[string]int) {
		url, arn := s.queue(t, "kill-target", nil)
		_, ruleARN := s.rule(t, s.eventBus(t), ebtypes.Target{Id: aws.String("q"), Arn: aws.String(arn), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)}})
		attrs := func(int) map[string]string {
			return map[string]string{"RULE_ARN": ruleARN, "TARGET_ARN": arn, "ERROR_CODE": "THROTTLING", "ERROR_MESSAGE": "Rate exceeded"}
		}
		return attrs, func(i int) string { return fmt.Sprintf(`{"id":"e-%04d","source":"shop.orders","detail":{}}`, i) }, func() map[string]int { return s.bodiesIn(t, url) }
	}},
}

// A real dlqctl process is killed with SIGKILL in the middle of a redrive
// of each kind, and the same command is run again: every message reached
// its origin, every one that reached it twice is among those the re-run
// names as possibly delivered twice, and the DLQ is empty.
func TestKill9MidRedriveLosesNothingAndReportsDuplicates(t *testing.T) {
	for _, k := range killKinds {
		t.Run(k.name, func(t *testing.T) {
			s := newStack(t)
			dlqURL, dlqARN := s.queue(t, "kill-dlq", nil)
			attrs, body, arrived := k.setup(t, s, dlqARN)
			const n = 240
			idOf := s.sendBatch(t, dlqURL, n, body, attrs)
			state := t.TempDir()
			args := []string{"redrive", dlqURL, "--yes", "--rate", "20", "--visibility", "5s", "--state-dir", state, "-o", "json"}
			c := clitest.BinCmd(t, s.env, args...)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for total(arrived()) < 30 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			_ = c.Process.Signal(syscall.SIGKILL)
			_ = c.Wait()
			before := total(arrived())
			if before >= n {
				t.Fatalf("the run finished before the kill (%d arrived); nothing was tested:\n%s", before, out.String())
			}

			r := s.run(t, args...)
			if r.Code != 0 {
				t.Fatalf("re-run exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			var rep struct {
				Status             string                 `json:"status"`
				MaybeTwiceMessages []redrive.TwiceMessage `json:"maybe_twice_messages"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
				t.Fatal(err)
			}
			reported := map[string]bool{}
			for _, m := range rep.MaybeTwiceMessages {
				reported[m.ID] = true
			}
			got := arrived()
			dups := 0
			for i := range n {
				b := originalOf(k.name, body(i))
				switch c := got[b]; {
				case c == 0:
					t.Errorf("message %d (%s) never reached its origin", i, idOf[i])
				case c > 1:
					dups++
					if !reported[idOf[i]] {
						t.Errorf("message %d reached its origin %d times but the re-run does not name it (maybe_twice_messages: %d)", i, c, len(rep.MaybeTwiceMessages))
					}
				}
			}
			if dups > 0 && !strings.Contains(r.Stderr, "may have been delivered twice") {
				t.Errorf("%d duplicate(s) and the re-run does not say so on stderr:\n%s", dups, r.Stderr)
			}
			if d := s.depth(t, dlqURL); d != 0 {
				t.Fatalf("the re-run exited 0 with %d message(s) still in the DLQ\n%s\n%s", d, r.Stdout, r.Stderr)
			}
			t.Logf("%s: %d arrived before the kill; after the re-run %d duplicate(s), %d reported as possibly twice", k.name, before, dups, len(rep.MaybeTwiceMessages))
		})
	}
}

// originalOf is what the origin receives for a DLQ body (the same body for
// these kinds).
func originalOf(_ string, body string) string { return body }

func total(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// sendBatch fills a queue with n messages (body(i), attrs(i)) and returns
// their message ids by i.
func (s *stack) sendBatch(t testing.TB, url string, n int, body func(int) string, attrs func(int) map[string]string) []string {
	t.Helper()
	ids := make([]string, n)
	for start := 0; start < n; start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := start; i < min(start+10, n); i++ {
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body(i))}
			if attrs != nil {
				e.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
				for k, v := range attrs(i) {
					e.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
				}
			}
			entries = append(entries, e)
		}
		var out *sqs.SendMessageBatchOutput
		s.seed(t, url, len(entries), func(opt func(*sqs.Options)) (err error) {
			out, err = s.sqs.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}, opt)
			return err
		})
		if out == nil { // arrived, its answer lost: read the ids back below
			continue
		}
		if len(out.Failed) > 0 {
			t.Fatalf("seeding: %v", out.Failed)
		}
		for _, ok := range out.Successful {
			var i int
			fmt.Sscan(aws.ToString(ok.Id), &i)
			ids[i] = aws.ToString(ok.MessageId)
		}
	}
	if slices.Contains(ids, "") {
		byBody := s.idsByBody(t, url)
		for i := range ids {
			if ids[i] == "" {
				ids[i] = byBody[body(i)]
			}
		}
	}
	return ids
}

// idsByBody maps each body in url to its message id (the queue is idle,
// its bodies distinct): every message is received once and made visible
// again.
func (s *stack) idsByBody(t testing.TB, url string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var held []string
	for {
		r, err := s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 120})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 && s.depth(t, url) == len(held) {
			break
		}
		for _, m := range r.Messages {
			out[aws.ToString(m.Body)] = aws.ToString(m.MessageId)
			held = append(held, aws.ToString(m.ReceiptHandle))
		}
	}
	for _, h := range held {
		if _, err := s.sqs.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h), VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// bodiesIn counts the bodies a queue holds, without consuming them (moto:
// received messages hidden for 5 minutes, so one pass sees each once; the
// test's queue is read by nobody else).
func (s *stack) bodiesIn(t testing.TB, url string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]map[string]int{}
	}
	seen := s.seen[url]
	if seen == nil {
		seen = map[string]int{}
		s.seen[url] = seen
	}
	for {
		out, err := s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 600})
		if err != nil || len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			seen[aws.ToString(m.Body)]++
		}
	}
	cp := make(map[string]int, len(seen))
	for k, v := range seen {
		cp[k] = v
	}
	return cp
}
