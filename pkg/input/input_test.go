package input_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// notes collects what a read reports.
type notes struct{ warn, verbose []string }

func (n *notes) Warnf(format string, a ...any) { n.warn = append(n.warn, fmt.Sprintf(format, a...)) }
func (n *notes) Verbosef(format string, a ...any) {
	n.verbose = append(n.verbose, fmt.Sprintf(format, a...))
}

// recordsFile writes n message records (m-1 … m-n) as NDJSON.
func recordsFile(t *testing.T, n int) (path, text string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		rec := record.Record{MessageID: fmt.Sprintf("m-%d", i), Queue: "arn:aws:sqs:eu-west-1:123456789012:orders-dlq",
			Body: fmt.Sprintf(`{"order":%d,"error":"connection reset by peer"}`, i)}
		line, err := rec.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path = filepath.Join(t.TempDir(), "dlq.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, b.String()
}

// fileReader is a Reader that may only read files: opening a queue fails
// the test.
func fileReader(t *testing.T, n *notes, stdin string) *input.Reader {
	return &input.Reader{
		Endpoint: func(context.Context, string) (broker.Endpoint, error) {
			t.Error("a file read opened a queue")
			return nil, errors.New("no queues here")
		},
		Caps:   func(string) (broker.Capabilities, bool) { return broker.Capabilities{}, false },
		Stdin:  strings.NewReader(stdin),
		Report: n,
	}
}

func ids(t *testing.T, r *input.Reader, in input.Options) []string {
	t.Helper()
	var got []string
	if _, err := r.ForEach(context.Background(), in, func(rec *record.Record, _ any) error {
		got = append(got, rec.MessageID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestForEachReadsAFileAndStdinInOrder(t *testing.T) {
	path, text := recordsFile(t, 5)
	want := "m-1 m-2 m-3 m-4 m-5"
	if got := strings.Join(ids(t, fileReader(t, &notes{}, ""), input.Options{From: path}), " "); got != want {
		t.Errorf("file: read %q, want %q", got, want)
	}
	if got := strings.Join(ids(t, fileReader(t, &notes{}, text), input.Options{From: "-"}), " "); got != want {
		t.Errorf("stdin: read %q, want %q", got, want)
	}
}

func TestReadTriageLimitsAFileAndAccountsForIt(t *testing.T) {
	path, _ := recordsFile(t, 5)
	r := fileReader(t, &notes{}, "")
	progress, done := 0, false
	rr, err := r.ReadTriage(context.Background(), input.Triage{In: input.Options{From: path}, FileLimit: 2,
		Progress: func(int) { progress++ }, ProgressDone: func() { done = true }},
		func(*record.Record, any, any) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if rr.Read != 2 || rr.Complete || rr.Queue != nil {
		t.Errorf("read %d, complete %v, queue %v; want 2 records of a file, not complete", rr.Read, rr.Complete, rr.Queue)
	}
	if !done || progress != 0 {
		t.Errorf("progress: %d updates (want none under 100 records), done %v (want true)", progress, done)
	}
	rr, err = r.ReadTriage(context.Background(), input.Triage{In: input.Options{From: path}},
		func(*record.Record, any, any) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if rr.Read != 5 || !rr.Complete {
		t.Errorf("without a limit: read %d, complete %v; want all 5", rr.Read, rr.Complete)
	}
}

func TestReadTriagePrepareErrorStopsTheRead(t *testing.T) {
	path, _ := recordsFile(t, 5)
	refused := errors.New("the filter failed on every message")
	seen := 0
	_, err := fileReader(t, &notes{}, "").ReadTriage(context.Background(), input.Triage{In: input.Options{From: path,
		Prepare: func(rec *record.Record, _ any) any {
			if rec.MessageID == "m-3" {
				return refused
			}
			return rec.MessageID
		}}}, func(_ *record.Record, _, prepared any) error {
		seen++
		if _, ok := prepared.(string); !ok {
			t.Errorf("fn got %T, want what Prepare returned", prepared)
		}
		return nil
	})
	if !errors.Is(err, refused) {
		t.Fatalf("err %v, want the refusal Prepare returned", err)
	}
	if seen != 2 {
		t.Errorf("fn saw %d records before the refusal, want 2", seen)
	}
}

func TestReadsToEndFollowsTheBrokersCapabilities(t *testing.T) {
	r := &input.Reader{Caps: func(b string) (broker.Capabilities, bool) {
		if b == broker.Kafka {
			return broker.Capabilities{Hold: broker.HoldNone, Removal: broker.RemoveCommitOffset}, true
		}
		return broker.Capabilities{Hold: broker.HoldLease}, true
	}}
	if _, ok := r.ReadsToEnd("kafka://kafka-1:9092/orders.DLT"); !ok {
		t.Error("a Kafka topic is not read to its end")
	}
	if _, ok := r.ReadsToEnd("orders-dlq"); ok {
		t.Error("an SQS queue is read to its end")
	}
}
