package redrive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/internal/worker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func incident(t *testing.T) (*awssqs.Client, *sqs.Client, *seed.Truth) {
	t.Helper()
	env := testenv.Require(t)
	api := env.SQS(t)
	truth, err := seed.Incident(ctxT(t, 3*time.Minute), api, seed.Options{Prefix: testenv.UniqueName(t, "rd")})
	if err != nil {
		t.Fatalf("seeding: %v", err)
	}
	return api, sqs.New(api, env.Region), truth
}

func resolve(t *testing.T, c *sqs.Client, ref string) *sqs.Queue {
	t.Helper()
	q, err := c.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatalf("resolve %s: %v", ref, err)
	}
	return q
}

func createQueue(t *testing.T, api *awssqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := api.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// drain receives and deletes everything in a queue, in receive order.
func drain(t *testing.T, api *awssqs.Client, url string) []types.Message {
	t.Helper()
	var all []types.Message
	empty := 0
	for empty < 2 {
		out, err := api.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60, WaitTimeSeconds: 1,
			AttributeNames: []types.QueueAttributeName{"All"}, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatalf("receive %s: %v", url, err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		all = append(all, out.Messages...)
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(string(rune('a' + i))), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := api.DeleteMessageBatch(context.Background(), &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	return all
}

func depth(t *testing.T, c *sqs.Client, url string) sqs.Counts {
	t.Helper()
	q := &sqs.Queue{URL: url}
	if err := c.Refresh(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return q.Counts()
}

type runCfg struct {
	router redrive.Router
	sel    redrive.Selector
	opt    redrive.Options
}

func move(t *testing.T, c *sqs.Client, dlq *sqs.Queue, stateDir string, cfg runCfg) (*redrive.Result, *redrive.Journal) {
	t.Helper()
	j, err := redrive.CreateJournal(stateDir, redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: dlq.ARN, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	src := newQueueSource(c, dlq, 30*time.Second, time.Second)
	opt := cfg.opt
	opt.Publisher, opt.DestDepth, opt.SourceCaps, opt.Journal, opt.Router, opt.Select = sqs.NewPublisher(c), c.DestinationDepth, capsOf(src), j, cfg.router, cfg.sel
	res, err := redrive.Run(ctxT(t, 2*time.Minute), src, opt)
	if cerr := src.Close(context.Background()); cerr != nil {
		t.Fatalf("close: %v", cerr)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, j
}

func attrsOf(m types.Message) map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{}
	for k, v := range m.MessageAttributes {
		if k != record.MarkerAttribute {
			out[k] = v
		}
	}
	return out
}

func sameAttrs(t *testing.T, id string, want, got map[string]types.MessageAttributeValue) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d attributes, want %d (%v vs %v)", id, len(got), len(want), keys(got), keys(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s: attribute %s missing", id, k)
		}
		if aws.ToString(g.DataType) != aws.ToString(w.DataType) || aws.ToString(g.StringValue) != aws.ToString(w.StringValue) || string(g.BinaryValue) != string(w.BinaryValue) {
			t.Fatalf("%s: attribute %s = %s/%q/%x, want %s/%q/%x", id, k, aws.ToString(g.DataType), aws.ToString(g.StringValue), g.BinaryValue,
				aws.ToString(w.DataType), aws.ToString(w.StringValue), w.BinaryValue)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

func TestRedriveToSourceMakesExactCopiesAcrossSourcesAndFIFO(t *testing.T) {
	api, c, truth := incident(t)
	state := t.TempDir()
	for _, dq := range []seed.Queue{truth.DLQ, truth.FIFODLQ} {
		dlq := resolve(t, c, dq.URL)
		router, err := sqs.ToSource(context.Background(), c, dlq)
		if err != nil {
			t.Fatal(err)
		}
		res, j := move(t, c, dlq, state, runCfg{router: router, opt: redrive.Options{Concurrency: 4}})
		want := truth.InQueue(dq.Name)
		if res.Moved != len(want) || res.SkippedTotal() != 0 || res.Err() != nil {
			t.Fatalf("%s: moved %d of %d, skipped %v, err %v, errors %v", dq.Name, res.Moved, len(want), res.Skipped, res.Err(), res.Errors)
		}
		if d := depth(t, c, dlq.URL); d.Visible+d.InFlight != 0 {
			t.Fatalf("%s still holds %+v", dq.Name, d)
		}
		if sent, del := j.Counts(); sent != len(want) || del != len(want) {
			t.Fatalf("journal: %d sent, %d deleted, want %d", sent, del, len(want))
		}
		runID := j.Meta().ID
		bySHA := map[string]seed.Seeded{}
		for _, m := range want {
			bySHA[m.BodySHA256] = m
		}
		found := map[string]bool{}
		sources := truth.Sources()
		if dq.FIFO {
			sources = []seed.Queue{truth.FIFOSource}
		}
		for _, src := range sources {
			lastSeq := map[string]int{}
			for _, m := range drain(t, api, src.URL) {
				body := aws.ToString(m.Body)
				s, ok := bySHA[record.SHA256Hex(body)]
				if !ok {
					t.Fatalf("%s received a body that was not in the DLQ: %.80q", src.Name, body)
				}
				if found[s.BodySHA256] {
					t.Fatalf("message %s copied twice", s.MessageID)
				}
				found[s.BodySHA256] = true
				if s.SourceName != src.Name {
					t.Fatalf("message %s went to %s, its source is %s", s.MessageID, src.Name, s.SourceName)
				}
				sameAttrs(t, s.MessageID, s.Attributes, attrsOf(m))
				var mk record.Marker
				if err := json.Unmarshal([]byte(aws.ToString(m.MessageAttributes[record.MarkerAttribute].StringValue)), &mk); err != nil && len(s.Attributes) < 10 {
					t.Fatalf("message %s has no readable marker: %v", s.MessageID, err)
				} else if err == nil && (mk.RunID != runID || mk.OriginalID != s.MessageID || mk.Count != 1) {
					t.Fatalf("marker %+v, want run %s orig %s count 1", mk, runID, s.MessageID)
				}
				if dq.FIFO {
					g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
					if g != s.GroupID {
						t.Fatalf("message %s in group %q, want %q", s.MessageID, g, s.GroupID)
					}
					if prev, ok := lastSeq[g]; ok && s.GroupSeq <= prev {
						t.Fatalf("group %s out of order: %d after %d", g, s.GroupSeq, prev)
					}
					lastSeq[g] = s.GroupSeq
				}
			}
		}
		if len(found) != len(want) {
			t.Fatalf("%s: %d of %d messages arrived in their sources", dq.Name, len(found), len(want))
		}
	}
}

func TestRedriveToRecoveryQueueMovesOnlySelected(t *testing.T) {
	api, c, truth := incident(t)
	dlq := resolve(t, c, truth.DLQ.URL)
	rec := resolve(t, c, createQueue(t, api, testenv.UniqueName(t, "recovery"), nil))
	filter, err := inspect.CompileFilter(`.envelope.event_type == "OrderPaid"`)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := classify.NewSelector(nil, nil, filter)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := move(t, c, dlq, t.TempDir(), runCfg{router: sqs.ToQueue(rec), sel: sel})
	want := map[string]bool{}
	for _, m := range truth.InQueue(truth.DLQ.Name) {
		if m.EventType == "OrderPaid" {
			want[m.BodySHA256] = true
		}
	}
	if len(want) == 0 {
		t.Fatal("the incident has no OrderPaid message to select")
	}
	got := drain(t, api, rec.URL)
	if len(got) != len(want) || res.Moved != len(want) {
		t.Fatalf("recovery queue got %d, run moved %d, want %d", len(got), res.Moved, len(want))
	}
	for _, m := range got {
		if !want[record.SHA256Hex(aws.ToString(m.Body))] {
			t.Fatalf("moved a message that was not selected: %.80q", aws.ToString(m.Body))
		}
	}
	left := len(truth.InQueue(truth.DLQ.Name)) - len(want)
	if d := depth(t, c, dlq.URL); d.Visible != left || d.InFlight != 0 {
		t.Fatalf("DLQ holds %+v, want %d visible and none in flight (unselected messages released)", d, left)
	}
	if res.Skipped[redrive.SkipFiltered] != left {
		t.Fatalf("skipped %v, want %d %q", res.Skipped, left, redrive.SkipFiltered)
	}
}

// TestRedrivePauseGuardHoldsUntilTheBacklogClears: with --on-guard pause the
// run stops sending while the destination is backed up, keeps its messages,
// and finishes once a consumer catches up.
func TestRedrivePauseGuardHoldsUntilTheBacklogClears(t *testing.T) {
	env := testenv.Require(t)
	api := env.SQS(t)
	c := sqs.New(api, env.Region)
	const n = 120
	dlqURL := createQueue(t, api, testenv.UniqueName(t, "pdlq"), nil)
	recURL := createQueue(t, api, testenv.UniqueName(t, "prec"), nil)
	if err := seed.FillDLQ(ctxT(t, time.Minute), api, dlqURL, n, func(i int) string { return fmt.Sprintf("m-%d", i) }); err != nil {
		t.Fatal(err)
	}
	dlq, rec := resolve(t, c, dlqURL), resolve(t, c, recURL)
	var mu sync.Mutex
	var states []string
	consumer := make(chan struct{})
	go func() {
		<-consumer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		worker.Run(ctx, api, worker.Options{QueueURL: recURL, Mode: worker.ModeOK})
	}()
	res, _ := move(t, c, dlq, t.TempDir(), runCfg{router: sqs.ToQueue(rec), opt: redrive.Options{
		Rate: 100, Concurrency: 2,
		Guards: redrive.Guards{MaxDestBacklog: 30, OnGuard: redrive.GuardPause, PauseTimeout: 20 * time.Second, Every: 200 * time.Millisecond},
		Reporter: redrive.Reporter{Guard: func(ev redrive.GuardEvent) {
			mu.Lock()
			defer mu.Unlock()
			states = append(states, ev.State)
			if ev.State == "paused" && len(states) == 1 {
				close(consumer) // the consumer comes back
			}
		}},
	}})
	if res.Err() != nil || res.Moved != n || res.Guard != nil {
		t.Fatalf("moved %d of %d, guard %+v, err %v", res.Moved, n, res.Guard, res.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) < 2 || states[0] != "paused" || states[1] != "cleared" {
		t.Fatalf("guard events %v, want paused then cleared", states)
	}
}
