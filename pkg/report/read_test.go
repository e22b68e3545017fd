package report

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func TestReadAccount(t *testing.T) {
	file := &ReadAccount{Read: 2000, Complete: true}
	if got := file.Describe(2000, "all messages"); got != "read 2000 records" {
		t.Errorf("file: %q", got)
	}
	if got := file.Describe(12, "class permanent"); got != "read 2000 records; 12 matched class permanent" {
		t.Errorf("file with a selection: %q", got)
	}
	if err := file.Finish(nil); err != nil {
		t.Errorf("a complete read finishes with %v", err)
	}
	partial := &ReadAccount{Read: 9, Partial: true, Note: "3 FIFO groups locked"}
	if err := partial.Finish(nil); errs.Code(err) != errs.ExitPartial || err.Error() != "partial result: 3 FIFO groups locked" {
		t.Errorf("a partial --all read finishes with %v (code %d)", err, errs.Code(err))
	}
	var none *ReadAccount
	if err := none.Finish(nil); err != nil {
		t.Errorf("no read finishes with %v", err)
	}
}
