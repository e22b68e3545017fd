package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// TestArchiveSummarySaysWhatHappenedOnEachBroker: the summary of an
// archive --delete --max run counts what the selection left apart from
// what was read past --max, and says what --delete did in the broker's
// terms: deleted from a queue, committed past on a topic (whose records
// stay until retention or --delete-records).
func TestArchiveSummarySaysWhatHappenedOnEachBroker(t *testing.T) {
	res := func(deleted bool) *archive.Result {
		m := &archive.Manifest{RunID: "r1", Queue: archive.QueueInfo{Name: "orders-dlq"}, Deleted: deleted,
			Totals: archive.Totals{Records: 3, Parts: 1, Deleted: 3}}
		return &archive.Result{Manifest: m, StoppedAtMax: true,
			Stats: archive.Stats{Received: 10, Selected: 3, Archived: 3, Deleted: 3, NotSelected: 2, Released: 5}}
	}
	sqs := broker.Capabilities{Hold: broker.HoldLease, Removal: broker.RemovePerMessage}
	kafka := broker.Capabilities{Hold: broker.HoldNone, Removal: broker.RemoveCommitOffset}
	for _, c := range []struct {
		name    string
		caps    broker.Capabilities
		deleted bool
		want    []string
	}{
		{"sqs", sqs, true, []string{
			"deleted\t3 from orders-dlq after verification",
			"not selected\t2, released",
			"not archived\t5 read(s) after --max was reached (a message read again counts again), released"}},
		{"sqs without --delete", sqs, false, []string{"deleted\tnone (without --delete every message was released)"}},
		{"kafka", kafka, true, []string{
			"removed\t3 from orders-dlq after verification: dlqctl's consumer group committed past them; the records stay in the topic until its retention (or --delete-records) deletes them",
			"not selected\t2, left pending",
			"not archived\t5 read(s) after --max was reached (a message read again counts again), left pending"}},
		{"kafka without --delete", kafka, false, []string{"removed\tnone (without --delete nothing is committed: every record stays pending)"}},
	} {
		var out, errOut bytes.Buffer
		s := output.Test(nil, &out, &errOut, false)
		if err := WriteArchiveSummary(s, output.NewProgress(s, output.Table), output.Table, res(c.deleted), nil, c.caps); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		for _, w := range c.want {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: the summary has no line %q:\n%s", c.name, w, out.String())
			}
		}
	}
}
