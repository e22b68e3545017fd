package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

type digestPublisher struct{}

func (digestPublisher) Prepare(*record.Record, broker.Destination, broker.CopyOptions) (broker.Outgoing, string) {
	return broker.Outgoing{Size: 1, Marked: true}, ""
}
func (digestPublisher) Publish(context.Context, broker.Destination, []broker.Outgoing) ([]broker.Result, error) {
	return nil, nil
}
func (digestPublisher) Close(context.Context) error { return nil }

type digestRouter struct{}

func (digestRouter) Route(context.Context, *record.Record) (broker.Destination, string, error) {
	return broker.Destination{Key: "orders", Label: "orders", Target: "orders"}, "", nil
}
func (digestRouter) Describe() string { return "orders" }

// A lean record (no BodySHA256) gets its body's digest for the journal
// only when a canary may read it; a record that carries its digest keeps
// it either way.
func TestPrepareHashesLeanBodiesOnlyForACanary(t *testing.T) {
	body := `{"orderId":1}`
	want := record.SHA256Hex(body)
	for _, tc := range []struct {
		name    string
		noBody  bool
		carried string
		sha     string
	}{
		{"canary, lean", false, "", want},
		{"no canary, lean", true, "", ""},
		{"no canary, digest carried", true, "ab12", "ab12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := CreateJournal(t.TempDir(), RunMeta{ID: "20261204T070000-abcdef", Kind: "redrive", Created: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			s := newMoveSink(Options{Journal: j, Publisher: digestPublisher{}, Router: digestRouter{}, Concurrency: 1, noBodyDigests: tc.noBody}, nil)
			rec := &record.Record{MessageID: "orders-dlt-0@1", Body: body, BodySHA256: tc.carried}
			dec, err := s.Prepare(context.Background(), Item{Record: rec})
			if err != nil {
				t.Fatal(err)
			}
			p, ok := dec.Payload.(prepared)
			if !ok {
				t.Fatalf("decision %+v: no prepared copy", dec)
			}
			if p.sha != tc.sha {
				t.Fatalf("digest %q, want %q", p.sha, tc.sha)
			}
		})
	}
}
