package triage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/input"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/triage"
)

type quiet struct{}

func (quiet) Warnf(string, ...any)    {}
func (quiet) Verbosef(string, ...any) {}

// incident is a file of 6 records: 4 transient failures, 2 that fail
// to parse, as a consumer-enriched wrapper reports them.
func incident(t *testing.T) (*input.Reader, input.Triage) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 6; i++ {
		reason := "connection reset by peer"
		if i > 4 {
			reason = "json: cannot unmarshal string into Go value of type int"
		}
		body := fmt.Sprintf(`{"payload":{"order":%d},"error":{"message":%q}}`, i, reason)
		line, err := (&record.Record{MessageID: fmt.Sprintf("m-%d", i), Queue: "arn:aws:sqs:eu-west-1:123456789012:orders-dlq", Body: body}).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "incident.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &input.Reader{
		Endpoint: func(context.Context, string) (broker.Endpoint, error) { return nil, errors.New("no queues here") },
		Caps:     func(string) (broker.Capabilities, bool) { return broker.Capabilities{}, false },
		Report:   quiet{},
	}
	return r, input.Triage{In: input.Options{From: path}}
}

func builtin(t *testing.T, classes ...string) *classify.Selector {
	t.Helper()
	sel, err := classify.Compile(classify.Spec{Classes: classes, MinConfidence: 0.6, Always: true})
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestClassifySummaryCountsPerClass(t *testing.T) {
	r, tr := incident(t)
	rep, rr, err := triage.ClassifySummary(context.Background(), r, tr, builtin(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rr.Read != 6 || rep.Matched != 6 || !rep.Complete {
		t.Fatalf("read %d, matched %d, complete %v; want all 6", rr.Read, rep.Matched, rep.Complete)
	}
	got := map[string]int{}
	for _, c := range rep.Classes {
		got[c.Class+"/"+c.Action] = c.Group.Count
	}
	if got["transient/redrive"] != 4 || got["permanent/archive"] != 2 {
		t.Errorf("classes %v, want 4 transient/redrive and 2 permanent/archive", got)
	}
}

func TestClassifyListKeepsTheSelectedClassRedacted(t *testing.T) {
	r, tr := incident(t)
	var streamed []string
	res, _, err := triage.ClassifyList(context.Background(), r, tr, triage.List{Select: builtin(t, "permanent"), Redactor: inspect.NewRedactor(nil),
		Stream: func(line json.RawMessage) error { streamed = append(streamed, string(line)); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 2 || len(streamed) != 2 || res.Records != nil {
		t.Fatalf("matched %d, streamed %d lines, kept %d records; want 2 streamed, none kept", res.Matched, len(streamed), len(res.Records))
	}
	if !strings.Contains(streamed[0], `"message_id":"m-5"`) || !strings.Contains(streamed[0], `"class":"permanent"`) {
		t.Errorf("first line %s, want m-5 classified permanent", streamed[0])
	}
}

func TestGroupAndSample(t *testing.T) {
	r, tr := incident(t)
	keys, err := inspect.ParseGroupKeys([]string{"class"})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := triage.Group(context.Background(), r, tr, builtin(t), keys, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 2 || rep.By[0] != "class" || rep.Matched != 6 {
		t.Errorf("groups %d by %v, matched %d; want 2 classes of 6 messages", len(rep.Groups), rep.By, rep.Matched)
	}
	recs, _, err := triage.Sample(context.Background(), r, tr.In, 3, builtin(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].MessageID != "m-1" || recs[2].MessageID != "m-3" {
		t.Errorf("sample of 3: %d records, want m-1…m-3", len(recs))
	}
}

func TestExplainAMessageNotReadIsBadInput(t *testing.T) {
	r, tr := incident(t)
	sel := builtin(t)
	rec, found, _, err := triage.Explain(context.Background(), r, tr, "m-6", sel.Rules(), nil)
	if err != nil || found == nil || rec.MessageID != "m-6" {
		t.Fatalf("explain m-6: %v, found %v", err, found != nil)
	}
	_, _, _, err = triage.Explain(context.Background(), r, tr, "m-404", sel.Rules(), nil)
	if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "is not among the 6 messages read from the input") {
		t.Errorf("explain m-404: %v (exit %d), want bad input naming the 6 messages read", err, errs.Code(err))
	}
}
