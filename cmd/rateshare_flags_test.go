package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestRateShareDividesTheBudget: --rate-share 2/4 with --rate 100 paces the
// process at 25/s; with --ramp every step is divided; the share is kept
// in the options the journal stores (a resume paces the same).
func TestRateShareDividesTheBudget(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		rate     float64
		ramp     string
		shareStr string
	}{
		{[]string{"--rate", "100", "--rate-share", "2/4"}, 25, "[]", "2/4"},
		{[]string{"--ramp", "8,40,200", "--rate-share", "1/4"}, 0, "[2 10 50]", "1/4"},
		{[]string{"--rate", "100"}, 100, "[]", ""},
		{[]string{"--rate", "100", "--rate-share", "1/1"}, 100, "[]", ""},
	} {
		var got *cmd.RedriveOptions
		f := &cmd.Factory{IO: output.Test(nil, io.Discard, io.Discard, false)}
		c := cmd.NewCmdRedrive(f, func(_ context.Context, o *cmd.RedriveOptions) error { got = o; return nil })
		c.SetArgs(append([]string{"orders-dlq"}, tc.args...))
		if err := c.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var mo redrive.Options
		got.PaceFlags.Apply(&mo)
		if mo.Rate != tc.rate || fmt.Sprint(mo.Ramp) != tc.ramp || mo.Share.String() != tc.shareStr {
			t.Errorf("%v: rate %g, ramp %v, share %q; want %g, %s, %q", tc.args, mo.Rate, mo.Ramp, mo.Share, tc.rate, tc.ramp, tc.shareStr)
		}
		// What the journal stores, read back as `redrive resume` does.
		raw, _ := json.Marshal(got)
		var back cmd.RedriveOptions
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		var mb redrive.Options
		back.PaceFlags.Apply(&mb)
		if mb.Rate != mo.Rate || fmt.Sprint(mb.Ramp) != fmt.Sprint(mo.Ramp) || mb.Share != mo.Share {
			t.Errorf("%v: resumed from the journal the pace is %g %v %q, want %g %v %q", tc.args, mb.Rate, mb.Ramp, mb.Share, mo.Rate, mo.Ramp, mo.Share)
		}
	}
}
