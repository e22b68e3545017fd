package redrive

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func TestParseDestLag(t *testing.T) {
	got, err := ParseDestLag([]string{"orders-service:1000", " billing : 0 "})
	if err != nil || len(got) != 2 || got[0] != (DestLag{Group: "orders-service", Max: 1000}) || got[1] != (DestLag{Group: "billing", Max: 0}) {
		t.Fatalf("ParseDestLag = %+v, %v", got, err)
	}
	for _, bad := range []string{"orders-service", ":10", "g:-1", "g:ten", "g:"} {
		if _, err := ParseDestLag([]string{bad}); err == nil || errs.Code(err) != 2 {
			t.Errorf("%q: err = %v (exit %d), want a bad-input error (exit 2)", bad, err, errs.Code(err))
		}
	}
}
