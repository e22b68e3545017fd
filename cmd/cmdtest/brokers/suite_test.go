// Package brokers runs one table of command scenarios against every
// broker: the same commands, the same user-visible promises, and per
// broker only what differs (declared in its brokerCase, as a conformance
// suite declares features). A scenario added here runs on SQS, RabbitMQ
// and Kafka; a broker added to dlqctl adds one brokerCase.
package brokers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// incident is one seeded DLQ with a known source, as a scenario sees it.
type incident struct {
	// ref is the DLQ's reference as a user types it.
	ref string
	// left counts the messages still in the DLQ (settled: in flight
	// included), read with the broker's own client.
	left func(t *testing.T) int
	// copies consumes the source (the --to source destination) and counts
	// dlqctl's copies in it by the original message id their marker names.
	copies func(t *testing.T) map[string]int
	// knowWindow, where the broker cannot know a canary's window until
	// the incident says so (Kafka: delay-named retry topics), makes it
	// knowable; before it, --canary without --verify-for is refused.
	knowWindow func(t *testing.T)
}

// brokerCase is one broker: how to seed an incident, and what differs.
type brokerCase struct {
	name string
	// display is the broker's name as refusals print it.
	display string
	// seed makes a fresh DLQ of at least n dead letters whose source
	// dlqctl can find (--to source), and returns it.
	seed func(t *testing.T, env testenv.Env, n int) incident
	// foreignFlag is a flag of another broker that this one refuses.
	foreignFlag []string
	// unreachable is a reference at an address nobody listens on, and
	// the environment that points there.
	unreachable func(t *testing.T, env testenv.Env) (string, testenv.Env)
}

// closedAddr is a 127.0.0.1 address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func cases() []brokerCase {
	return []brokerCase{
		{
			name: "sqs", display: "Amazon SQS",
			seed:        seedSQS,
			foreignFlag: []string{"--max-dest-lag", "billing:100"},
			unreachable: func(t *testing.T, env testenv.Env) (string, testenv.Env) {
				env.SQSEndpoint = "http://" + closedAddr(t)
				return "nobody-listens", env
			},
		},
		{
			name: "rabbitmq", display: "RabbitMQ",
			seed:        seedRabbit,
			foreignFlag: []string{"--exactly-once"},
			unreachable: func(t *testing.T, env testenv.Env) (string, testenv.Env) {
				return "amqp://dlqctl@" + closedAddr(t) + "/%2f/nobody-listens", env
			},
		},
		{
			name: "kafka", display: "Kafka",
			seed:        seedKafka,
			foreignFlag: []string{"--max-dest-backlog", "5"},
			unreachable: func(t *testing.T, env testenv.Env) (string, testenv.Env) {
				return "kafka://" + closedAddr(t) + "/nobody-listens", env
			},
		},
	}
}

// TestEveryBrokerKeepsTheSamePromises runs the scenarios a user relies on
// against SQS, RabbitMQ and Kafka: a peek leaves the DLQ as it was, a dry
// run changes nothing, a filter that fails on every message and a flag of
// another broker are refused before anything moves, a canary gives a
// verdict over a non-zero window, a ramped redrive moves every message
// exactly once, archive --delete removes only what S3 holds (also when
// --max stops it, and the next run archives the rest once), and an
// unreachable endpoint exits 2. (The brokers run one after the other: the
// commands run in this process and set its environment.)
func TestEveryBrokerKeepsTheSamePromises(t *testing.T) {
	env := testenv.Require(t)
	testenv.RequireRabbitMQ(t)
	testenv.RequireKafka(t)
	for _, bc := range cases() {
		t.Run(bc.name, func(t *testing.T) {
			t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
			t.Run("redrive", func(t *testing.T) { redriveScenarios(t, env, bc) })
			t.Run("archive", func(t *testing.T) { archiveScenario(t, env, bc) })
			t.Run("unreachable", func(t *testing.T) {
				ref, uenv := bc.unreachable(t, env)
				r := clitest.Run(t, uenv, "", "sample", ref, "-n", "1")
				if r.Code != 2 || r.Stdout != "" || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 2 {
					t.Fatalf("sample of an unreachable %s: exit %d, want 2 with a short sentence on stderr and nothing on stdout\nstdout: %s\nstderr: %s", bc.display, r.Code, r.Stdout, r.Stderr)
				}
			})
		})
	}
}

func redriveScenarios(t *testing.T, env testenv.Env, bc brokerCase) {
	in := bc.seed(t, env, 24)
	ids := sampleIDs(t, env, in.ref)
	n := len(ids)
	if n < 24 {
		t.Fatalf("the seeded DLQ holds %d messages, want at least 24", n)
	}
	unchanged := func(t *testing.T, what string) {
		t.Helper()
		if got := in.left(t); got != n {
			t.Fatalf("after %s the DLQ holds %d of its %d messages", what, got, n)
		}
	}

	t.Run("peek leaves the DLQ as it was", func(t *testing.T) {
		again := sampleIDs(t, env, in.ref)
		if !sameKeys(ids, again) {
			t.Fatalf("a second sample read other messages: %d ids, %d the first time", len(again), len(ids))
		}
		unchanged(t, "two samples")
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		r := clitest.Run(t, env, "", "redrive", in.ref, "--to", "source", "--dry-run", "-o", "json")
		if r.Code != 0 {
			t.Fatalf("dry run: exit %d\n%s", r.Code, r.Stderr)
		}
		var plan struct {
			Status string `json:"status"`
			DryRun bool   `json:"dry_run"`
			Moved  int    `json:"moved"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
			t.Fatalf("dry run JSON: %v\n%s", err, r.Stdout)
		}
		if plan.Moved != 0 {
			t.Errorf("a dry run reports %d moved", plan.Moved)
		}
		unchanged(t, "a dry run")
	})

	t.Run("a filter that fails on every message is refused", func(t *testing.T) {
		r := clitest.Run(t, env, "", "redrive", in.ref, "--to", "source", "--filter", ".body | tonumber > 0", "--yes")
		if r.Code != 2 || !strings.Contains(r.Stderr, "failed on every message read") || !strings.Contains(r.Stderr, "first: message ") {
			t.Fatalf("failing filter: exit %d, want 2 naming the error and a message\n%s", r.Code, r.Stderr)
		}
		unchanged(t, "a refused filter")
	})

	t.Run("a flag of another broker is refused", func(t *testing.T) {
		args := append([]string{"redrive", in.ref, "--to", "source", "--yes"}, bc.foreignFlag...)
		r := clitest.Run(t, env, "", args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, bc.foreignFlag[0]) || !strings.Contains(r.Stderr, bc.display) {
			t.Fatalf("%s on %s: exit %d, want 2 naming the flag and the broker\n%s", bc.foreignFlag[0], bc.display, r.Code, r.Stderr)
		}
		unchanged(t, "a refused flag")
	})

	const canaryN = 3
	t.Run("canary gives a verdict over a computed window", func(t *testing.T) {
		canary := []string{"redrive", in.ref, "--to", "source", "--canary", fmt.Sprint(canaryN), "--verify-poll", "1s", "--yes", "-o", "json"}
		if in.knowWindow != nil {
			r := clitest.Run(t, env, "", canary...)
			if r.Code != 2 || !strings.Contains(r.Stderr, "--verify-for") {
				t.Fatalf("a canary whose window %s cannot know: exit %d, want 2 asking for --verify-for\n%s", bc.display, r.Code, r.Stderr)
			}
			unchanged(t, "a refused canary")
			in.knowWindow(t)
		}
		r := clitest.Run(t, env, "", canary...)
		var sum struct {
			Moved  int `json:"moved"`
			Canary *struct {
				Pass          bool    `json:"pass"`
				Watched       float64 `json:"watched_seconds"`
				WindowSeconds float64 `json:"window_seconds"`
				WindowReason  string  `json:"window_reason"`
			} `json:"canary"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || r.Code != 0 || sum.Canary == nil {
			t.Fatalf("canary: exit %d (%v)\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
		}
		c := sum.Canary
		if !c.Pass || sum.Moved != canaryN {
			t.Fatalf("canary of %d with nobody failing them: moved %d, verdict %+v", canaryN, sum.Moved, c)
		}
		if c.WindowSeconds <= 0 || c.Watched < c.WindowSeconds || c.WindowReason == "" {
			t.Fatalf("the canary watched %gs of a %gs window (%q): want a non-zero window, stated and watched in full", c.Watched, c.WindowSeconds, c.WindowReason)
		}
		if got := in.left(t); got != n-canaryN {
			t.Fatalf("after a canary of %d the DLQ holds %d of %d", canaryN, got, n)
		}
	})

	t.Run("ramped redrive moves every message once", func(t *testing.T) {
		r := clitest.Run(t, env, "", "redrive", in.ref, "--to", "source", "--ramp", "10,40", "--ramp-every", "1s", "--yes", "-o", "json")
		var sum struct {
			Status string `json:"status"`
			Moved  int    `json:"moved"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || r.Code != 0 {
			t.Fatalf("ramped redrive: exit %d (%v)\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
		}
		if sum.Status != "completed" || sum.Moved != n-canaryN {
			t.Fatalf("ramped redrive: status %q, moved %d; want completed, %d", sum.Status, sum.Moved, n-canaryN)
		}
		if got := in.left(t); got != 0 {
			t.Fatalf("the DLQ still holds %d after a completed redrive", got)
		}
		copies := in.copies(t)
		var missing, twice []string
		for id := range ids {
			switch copies[id] {
			case 1:
			case 0:
				missing = append(missing, id)
			default:
				twice = append(twice, id)
			}
		}
		for id := range copies {
			if !ids[id] {
				t.Errorf("the source holds a copy of %s, which was not in the DLQ", id)
			}
		}
		sort.Strings(missing)
		sort.Strings(twice)
		if len(missing) > 0 || len(twice) > 0 {
			t.Fatalf("of %d messages, %d never reached the source %v and %d arrived more than once %v", n, len(missing), missing, len(twice), twice)
		}
	})
}

func archiveScenario(t *testing.T, env testenv.Env, bc brokerCase) {
	in := bc.seed(t, env, 12)
	ids := sampleIDs(t, env, in.ref)
	bucket := clitest.Bucket(t, env, "xb")
	prefix := "s3://" + bucket + "/" + bc.name
	type summary struct {
		Status   string `json:"status"`
		Manifest string `json:"manifest"`
		Stats    struct {
			Received, Archived, Deleted, Released int
			NotSelected                           int `json:"not_selected"`
		} `json:"stats"`
	}
	archive := func(extra ...string) summary {
		t.Helper()
		r := clitest.Run(t, env, "", append([]string{"archive", in.ref, "--to", prefix, "--delete", "--yes", "-o", "json"}, extra...)...)
		var sum summary
		if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || r.Code != 0 {
			t.Fatalf("archive --delete %v: exit %d (%v)\n%s\n%s", extra, r.Code, err, r.Stdout, r.Stderr)
		}
		return sum
	}
	// --max first: what was read past it is counted as released (not as
	// "not selected") and stays in the DLQ for the next run.
	const max = 5
	sum := archive("--max", fmt.Sprint(max))
	manifests := []string{sum.Manifest}
	if st := sum.Stats; sum.Status != "stopped" || st.Archived != max || st.Deleted != max || st.NotSelected != 0 || st.Received != st.Archived+st.Released {
		t.Fatalf("archive --delete --max %d: status %q, stats %+v; want stopped, %d archived and deleted, the rest of what was read released", max, sum.Status, st, max)
	}
	if got := in.left(t); got != len(ids)-max {
		t.Fatalf("the DLQ holds %d after archive --delete --max %d of %d, want %d", got, max, len(ids), len(ids)-max)
	}
	sum = archive()
	manifests = append(manifests, sum.Manifest)
	if sum.Status != "completed" || sum.Stats.Archived != len(ids)-max || sum.Stats.Deleted != len(ids)-max {
		t.Fatalf("archive --delete: status %q, %d archived, %d deleted; want completed, %d of each", sum.Status, sum.Stats.Archived, sum.Stats.Deleted, len(ids)-max)
	}
	if got := in.left(t); got != 0 {
		t.Fatalf("the DLQ still holds %d after a completed archive --delete", got)
	}
	archived := clitest.ArchivedIDs(t, env, prefix+"/")
	for id := range ids {
		if archived[id] != 1 {
			t.Errorf("message %s is in the archive %d time(s), want once", id, archived[id])
		}
	}
	if len(archived) != len(ids) {
		t.Errorf("the archive holds %d messages, the DLQ held %d", len(archived), len(ids))
	}

	// restore --to source sends every archived message back to the queue
	// (topic) it was dead-lettered from, once; the dry run first sends
	// nothing and says where they would go.
	for i, m := range manifests {
		r := clitest.Run(t, env, "", "restore", m, "--to", "source", "--dry-run", "-o", "json")
		var pl struct {
			WouldMove int                       `json:"would_move"`
			ByDest    map[string]map[string]int `json:"by_destination"`
			To        string                    `json:"to"`
		}
		want := []int{max, len(ids) - max}[i]
		if err := json.Unmarshal([]byte(r.Stdout), &pl); err != nil || r.Code != 0 || pl.WouldMove != want || len(pl.ByDest) != 1 || !strings.HasPrefix(pl.To, "source (") {
			t.Fatalf("restore %s --to source --dry-run: exit %d (%v), would move %d (want %d) to %v (want the one source)\n%s\n%s", m, r.Code, err, pl.WouldMove, want, pl.ByDest, r.Stdout, r.Stderr)
		}
	}
	for _, m := range manifests {
		if r := clitest.Run(t, env, "", "restore", m, "--to", "source", "--yes", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"status": "completed"`) {
			t.Fatalf("restore %s --to source: exit %d\n%s\n%s", m, r.Code, r.Stdout, r.Stderr)
		}
	}
	got := in.copies(t)
	for id := range ids {
		if got[id] != 1 {
			t.Errorf("message %s came back to its source %d time(s) from the archive, want once", id, got[id])
		}
	}
	if len(got) != len(ids) {
		t.Errorf("the source holds copies of %d messages, the archive %d", len(got), len(ids))
	}
	// Its canary watches the DLQ the archive was read from, on every
	// broker; nothing fails the copies, so it passes.
	r := clitest.Run(t, env, "", "restore", manifests[1], "--to", "source", "--canary", "2", "--verify-for", "2s", "--yes", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"pass": true`) {
		t.Fatalf("restore --to source --canary 2: exit %d, want a PASS\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// sampleIDs reads the DLQ with `dlqctl sample` (nothing consumed) and
// returns its message ids.
func sampleIDs(t *testing.T, env testenv.Env, ref string) map[string]bool {
	t.Helper()
	r := clitest.Run(t, env, "", "sample", ref, "-n", "1000", "-o", "ndjson")
	if r.Code != 0 {
		t.Fatalf("sample %s: exit %d\n%s", ref, r.Code, r.Stderr)
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if line == "" {
			continue
		}
		var rec record.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if ids[rec.MessageID] {
			t.Fatalf("sample returned %s twice", rec.MessageID)
		}
		ids[rec.MessageID] = true
	}
	return ids
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// origOf is the original id in a marker's JSON ("" when it is none).
func origOf(marker string) string {
	var mk record.Marker
	if json.Unmarshal([]byte(marker), &mk) != nil {
		return ""
	}
	return mk.OriginalID
}

// ---- SQS ----------------------------------------------------------------

// seedSQS makes a source queue whose RedrivePolicy targets a fresh DLQ
// (visibility 2 s, maxReceiveCount 2: a 34 s canary window) and fills the
// DLQ with n JSON order events.
func seedSQS(t *testing.T, env testenv.Env, n int) incident {
	c := env.SQS(t)
	dlqName := testenv.UniqueName(t, "xdlq")
	dlqURL, dlqARN := clitest.CreateQueue(t, c, dlqName, nil)
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": 2})
	srcURL, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "xsrc"), map[string]string{"RedrivePolicy": string(policy), "VisibilityTimeout": "2"})
	if err := seed.FillDLQ(context.Background(), c, dlqURL, n, func(i int) string {
		return fmt.Sprintf(`{"eventType":"OrderPaid","eventId":"e-%d","payload":{"order":"o-%d"}}`, i, i)
	}); err != nil {
		t.Fatal(err)
	}
	return incident{
		ref: dlqName,
		left: func(t *testing.T) int {
			v, f := clitest.SettledDepth(t, c, dlqURL)
			return v + f
		},
		copies: func(t *testing.T) map[string]int { return drainSQSCopies(t, c, srcURL) },
	}
}

// drainSQSCopies receives and deletes every message of url and counts
// them by their marker's original id.
func drainSQSCopies(t *testing.T, c *awssqs.Client, url string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for empty := 0; empty < 3; {
		out, err := c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{record.MarkerAttribute},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			got[origOf(aws.ToString(m.MessageAttributes[record.MarkerAttribute].StringValue))]++
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := c.DeleteMessageBatch(context.Background(), &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// ---- RabbitMQ -----------------------------------------------------------

func seedRabbit(t *testing.T, _ testenv.Env, n int) incident {
	renv, names, _ := clitest.BulkRabbit(t, n)
	return incident{
		ref: renv.QueueRef(names.DLQ),
		left: func(t *testing.T) int {
			clitest.WaitNoUnacked(t, renv, names.DLQ)
			return clitest.ReadyOf(t, renv, names.DLQ)
		},
		copies: func(t *testing.T) map[string]int {
			return clitest.DrainBy(t, renv, names.Orders, func(d amqp091.Delivery) string {
				switch v := d.Headers[record.MarkerAttribute].(type) {
				case string:
					return origOf(v)
				case []byte:
					return origOf(string(v))
				}
				return ""
			})
		},
	}
}

// ---- Kafka --------------------------------------------------------------

func seedKafka(t *testing.T, _ testenv.Env, n int) incident {
	brokers, prefix, res, adm := clitest.KafkaIncident(t, kafkaseed.Options{Payments: 2 * n, Partitions: 3})
	_, _, _, _, _, pay, payDLT, _, _ := kafkaseed.Topics(prefix)
	if res.DeadLetters[payDLT] == 0 {
		t.Fatalf("the Kafka incident dead-lettered nothing into %s", payDLT)
	}
	return incident{
		ref: "kafka://" + brokers + "/" + payDLT,
		left: func(t *testing.T) int {
			plan, err := kafka.MakePlan(t.Context(), adm, payDLT, kafka.DefaultGroup(payDLT))
			if err != nil {
				t.Fatal(err)
			}
			return int(plan.Pending())
		},
		copies: func(t *testing.T) map[string]int { return clitest.CopiesIn(t, brokers, pay) },
		knowWindow: func(t *testing.T) {
			// Spring's retry topics named by their delays: the window is
			// their sum + 30 s.
			if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, pay+"-retry-1000"); err != nil {
				t.Fatal(err)
			}
		},
	}
}
