package pipeline

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// askLeftover asks a source that can say what it knows is left at the end
// of a run (broker.Reconciler: a Kafka consumer reads the group's commits
// back) once every worker and acker has stopped — what was acked is then
// final. It is asked only after a run that read its source to the end: an
// interrupted or stopped run is partial already. The answer goes into the
// Result, and a run is never complete while anything is left.
func askLeftover(ctx context.Context, src Source, readToEnd bool) (broker.Leftover, bool) {
	rc, ok := src.(broker.Reconciler)
	if !ok || !readToEnd {
		return broker.Leftover{}, false
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lo, err := rc.Leftover(lctx)
	if err != nil && lo.Note == "" {
		lo.Note = "could not confirm what the source has left at the end of the run (" + err.Error() + "); run the same command again"
	}
	return lo, lo.Note != "" || lo.Blocked > 0 || lo.Unread > 0 || lo.HeldElsewhere > 0
}

// applyLeftoverLocked puts what the source reported left into the result:
// the run is not complete, and the source's sentence says why.
func applyLeftoverLocked(r *Result, lo broker.Leftover) {
	r.Blocked += lo.Blocked
	r.VisibleLeft += lo.Unread
	r.InFlightElsewhere += lo.HeldElsewhere
	if lo.ReturnAfter > r.ReturnAfter {
		r.ReturnAfter = lo.ReturnAfter
	}
	r.Complete = false
	if lo.Note != "" {
		r.Note = lo.Note
	} else if r.Note == "" {
		r.Note = "the source reports records left that the run did not read; run the same command again"
	}
}
