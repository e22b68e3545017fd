package cmd

import (
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
