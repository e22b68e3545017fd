package archive

import (
	"slices"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// heldLimit is a broker that lets a reader hold n messages (why says why),
// more when it removes what it handles.
type heldLimit struct{ removing, keeping int }

func (h heldLimit) HeldLimit(removing bool) (int, string) {
	if removing {
		return h.removing, "the broker's unacked limit"
	}
	return h.keeping, "the broker's peek limit"
}

func TestFitHeldLimit(t *testing.T) {
	o := Options{Delete: true, PartRecords: DefaultPartRecords}
	note, warn := o.FitHeldLimit(heldLimit{removing: 2000, keeping: 500}, "orders.dlq", 50_000)
	if o.MaxHeld != 2000 || o.PartRecords != 2000 || note != "parts close at 2000 records (the broker's unacked limit)" || warn != "" {
		t.Errorf("--delete: max held %d, part records %d, note %q, warn %q", o.MaxHeld, o.PartRecords, note, warn)
	}
	o = Options{Delete: true, PartRecords: 100}
	if note, warn := o.FitHeldLimit(heldLimit{removing: 2000}, "orders.dlq", 50_000); o.PartRecords != 100 || note != "" || warn != "" {
		t.Errorf("smaller parts are kept: part records %d, note %q, warn %q", o.PartRecords, note, warn)
	}
	o = Options{PartRecords: DefaultPartRecords}
	note, warn = o.FitHeldLimit(heldLimit{removing: 2000, keeping: 500}, "orders.dlq", 501)
	if o.MaxHeld != 500 || o.PartRecords != DefaultPartRecords || note != "" || !strings.HasPrefix(warn, "orders.dlq holds 501 messages; without --delete") || !strings.HasSuffix(warn, "the broker's peek limit: the archive will be partial") {
		t.Errorf("without --delete, deeper than the limit: max held %d, note %q, warn %q", o.MaxHeld, note, warn)
	}
	o = Options{}
	if note, warn := o.FitHeldLimit(heldLimit{keeping: 500}, "orders.dlq", 500); note != "" || warn != "" {
		t.Errorf("a queue within the limit: note %q, warn %q", note, warn)
	}
}

func TestArchivePeekWarnings(t *testing.T) {
	ws := []string{"orders-dlq.fifo is FIFO: reading a group's first message hides the rest of it", "peeking increments ApproximateReceiveCount"}
	fifo := broker.Capabilities{Ordering: broker.OrderGroupLock}
	if got := PeekWarnings(ws, fifo, true); !slices.Equal(got, ws[1:]) {
		t.Errorf("--delete on a FIFO queue: %q", got)
	}
	if got := PeekWarnings(ws, fifo, false); !slices.Equal(got, ws) {
		t.Errorf("without --delete: %q", got)
	}
	if got := PeekWarnings(ws, broker.Capabilities{}, true); !slices.Equal(got, ws) {
		t.Errorf("--delete without group locks: %q", got)
	}
}
