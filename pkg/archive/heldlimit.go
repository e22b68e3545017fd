package archive

import (
	"fmt"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// FitHeldLimit bounds o to what one reader may hold on the broker (hl):
// with Delete, parts close at that many records so each part's messages
// leave before the next are read; without, a queue (name) of ready
// messages deeper than the limit cannot be archived whole. It says what
// it did for -v (note) and what the user must know (warn); either is "".
func (o *Options) FitHeldLimit(hl broker.HeldLimiter, name string, ready int64) (note, warn string) {
	n, why := hl.HeldLimit(o.Delete)
	o.MaxHeld = n
	switch {
	case o.Delete && o.PartRecords > n:
		o.PartRecords = n
		return fmt.Sprintf("parts close at %d records (%s)", n, why), ""
	case !o.Delete && ready > int64(n):
		return "", fmt.Sprintf("%s holds %d messages; without --delete an archive holds every message it reads until the end, and %s: the archive will be partial", name, ready, why)
	}
	return "", ""
}

// PeekWarnings are the warnings of reading the queue (broker.PeekWarner)
// an archive run shows: with delete on a queue whose groups lock (FIFO),
// not the one about locked groups, since the run consumes what it
// archives and the groups unlock part by part.
func PeekWarnings(warnings []string, caps broker.Capabilities, delete bool) []string {
	var out []string
	for _, w := range warnings {
		if caps.Ordering == broker.OrderGroupLock && delete && strings.Contains(w, "is FIFO") {
			continue
		}
		out = append(out, w)
	}
	return out
}
