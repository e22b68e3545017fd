package cmd

import (
	"time"

	"bufio"
	"fmt"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// confirm guards every command that changes queues: --yes proceeds; on a
// terminal the user is asked (prompt + " [y/N] "); in a script without
// --yes the command refuses with scriptRefusal. A declined prompt returns
// declined. Both refusals are bad-input errors (exit 2, nothing changed).
func confirm(f *Factory, prompt, scriptRefusal, declined string) error {
	if f.Opts.Yes {
		return nil
	}
	if !f.IO.InTTY || !f.IO.ErrTTY {
		return errs.BadInputf("%s", scriptRefusal)
	}
	fmt.Fprintf(f.IO.ErrOut, "%s [y/N] ", prompt)
	line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errs.BadInputf("%s", declined)
	}
	return nil
}

// limitedWhat describes a selection bounded by --canary or --max.
func limitedWhat(what string, canary, max int) string {
	switch {
	case canary > 0:
		return fmt.Sprintf("a canary of %d (%s)", canary, what)
	case max > 0:
		return fmt.Sprintf("up to %d (%s)", max, what)
	}
	return what
}

// waitInFlightHelp documents --wait-inflight (redrive, archive).
const waitInFlightHelp = "at the end, wait (up to their visibility timeout) for messages held by nobody — taken by a receive whose answer was lost, or still hidden by a killed dlqctl process (the hold ledger in --state-dir) — and process them; --wait-inflight=false reports them and exits 4. Without such messages nothing is waited for"

// maxWaitInFlight bounds --wait-inflight; the queue's visibility timeout
// (and the run's own) bounds it first.
const maxWaitInFlight = 12 * time.Hour

func waitInFlight(on bool) time.Duration {
	if on {
		return maxWaitInFlight
	}
	return 0
}
