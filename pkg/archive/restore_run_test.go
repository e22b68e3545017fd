package archive

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

type toDest struct{ d broker.Destination }

func (r toDest) Route(context.Context, *record.Record) (broker.Destination, string, error) {
	return r.d, "", nil
}
func (r toDest) Describe() string { return r.d.Label }

// TestRestorePlansSendsAndRefusesTheSameRestoreTwice drives the domain
// entry point of `dlqctl restore`: a dry run plans every record and sends
// nothing, a run sends each once after its confirmation, and the same
// restore again is refused (exit 2) before its run.
func TestRestorePlansSendsAndRefusesTheSameRestoreTwice(t *testing.T) {
	f := newFixture(t)
	q := f.fillQueue(t, 12)
	res, err := Run(t.Context(), f.ep(q), f.s3, f.opts(false))
	if err != nil || res.ManifestKey == "" {
		t.Fatalf("archive: %v (manifest %q)", err, res.ManifestKey)
	}
	ref := Ref{Src: S3Source{API: f.s3, Bucket: f.bucket}, Key: res.ManifestKey}
	m, err := ReadManifest(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName(t, "rst")
	if _, err := f.env.SQS(t).CreateQueue(t.Context(), &awssqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	to := f.resolve(t, name)
	ep := f.ep(to)
	var said []string
	tell := func(format string, a ...any) { said = append(said, fmt.Sprintf(format, a...)) }
	tgt, err := OpenRestore(t.Context(), ep, ref, m, false, RestoreHooks{Warnf: tell, Infof: tell})
	if err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	confirmed := 0
	req := func(dry bool) RestoreRequest {
		return RestoreRequest{Run: ref, Manifest: m, To: ep, Target: tgt, Router: toDest{tgt.Dest}, DryRun: dry,
			OnPlanned: func(redrive.MessageEvent) {}, Info: tell, Warn: tell,
			Spec:    redrive.RunSpec{StateDir: stateDir, Meta: redrive.RunMeta{Fingerprint: "restore-test"}, Move: redrive.Options{Concurrency: 2}},
			Confirm: func() error { confirmed++; return nil }}
	}
	rs, err := Restore(t.Context(), req(true))
	if err != nil || rs.Plan == nil || rs.Outcome != nil {
		t.Fatalf("dry run: %v, %+v; want a plan and no run", err, rs)
	}
	if rs.Plan.WouldMove != 12 || !rs.Plan.Complete || confirmed != 0 {
		t.Fatalf("dry run plans %d (complete %v, %d confirmations), want 12 complete and none", rs.Plan.WouldMove, rs.Plan.Complete, confirmed)
	}
	if left := f.remaining(t, to); len(left) != 0 {
		t.Fatalf("a dry run sent %d messages", len(left))
	}
	rs, err = Restore(t.Context(), req(false))
	if err != nil || rs.Err != nil || rs.Outcome == nil || rs.Outcome.Err != nil {
		t.Fatalf("restore: %v / %+v", err, rs)
	}
	if got := rs.Outcome.Result.Moved; got != 12 || confirmed != 1 || rs.Outcome.Status != redrive.StatusCompleted {
		t.Fatalf("restore moved %d (%d confirmations, status %s), want 12, 1, completed", got, confirmed, rs.Outcome.Status)
	}
	if left := f.remaining(t, to); len(left) != 12 {
		t.Fatalf("destination holds %d messages, want 12", len(left))
	}
	rs, err = Restore(t.Context(), req(false))
	if err != nil || rs.Outcome != nil || errs.Code(rs.Err) != errs.ExitUsage {
		t.Fatalf("the same restore again: %v / %+v, want its run refused with exit 2", err, rs)
	}
	if confirmed != 1 {
		t.Fatalf("the refused restore asked for confirmation")
	}
}

// A dry run --to one of several queues the archived messages were
// dead-lettered from says how many came from the others; one source, or a
// destination that is none of them (a recovery queue), says nothing.
func TestOtherSourcesWarning(t *testing.T) {
	two := map[string]int{"orders": 29, "payments": 17}
	w := OtherSourcesWarning(two, "orders")
	want := "17 of the messages to restore were dead-lettered from other queues than orders (payments 17), and a restore sends every one to orders"
	if len(w) < len(want) || w[:len(want)] != want {
		t.Fatalf("warning %q; want it to start %q", w, want)
	}
	three := map[string]int{"orders": 1, "payments": 2, "refunds": 3}
	if w := OtherSourcesWarning(three, "payments"); !containsAll(w, "4 of the messages", "(orders 1, refunds 3)") {
		t.Fatalf("three sources: %q", w)
	}
	for _, c := range []struct {
		sources map[string]int
		dest    string
	}{{two, "orders-recovery"}, {map[string]int{"orders": 5}, "orders"}, {nil, "orders"}} {
		if w := OtherSourcesWarning(c.sources, c.dest); w != "" {
			t.Errorf("%v to %s: %q, want no warning", c.sources, c.dest, w)
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
