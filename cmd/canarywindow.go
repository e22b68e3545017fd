package cmd

import (
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// canaryMargin is added to the time a poison message needs to come back:
// the consumer's first poll, the dead-lettering and the canary's own poll.
const canaryMargin = 30 * time.Second

// poisonReturn is how long a message that always fails needs, at most, to
// be back in dlq after it was sent to one of dests: each receive by the
// consumer hides it for the destination's visibility timeout, and the
// destination's redrive policy dead-letters it after maxReceiveCount
// receives. It is 0 when no destination dead-letters into dlq (nothing
// known to wait for); why explains the figure.
func poisonReturn(dests []*sqs.Queue, dlq *sqs.Queue) (d time.Duration, why string) {
	for _, q := range dests {
		p := q.RedrivePolicy()
		if p == nil || p.MaxReceiveCount <= 0 || (dlq.ARN != "" && p.DeadLetterTargetARN != dlq.ARN) {
			continue
		}
		if w := time.Duration(p.MaxReceiveCount)*q.VisibilityTimeout() + canaryMargin; w > d {
			d = w
			why = fmt.Sprintf("maxReceiveCount %d × visibility timeout %s of %s, + %s", p.MaxReceiveCount, q.VisibilityTimeout(), q.Name, canaryMargin)
		}
	}
	return d, why
}

// defaultCanaryWindow is the watch when --verify-for is not given and no
// destination dead-letters into the DLQ (nothing known to wait for).
const defaultCanaryWindow = 2 * time.Minute

// canaryWindow is how long the canary watches: --verify-for when given
// (with a warning when it is shorter than a poison message needs to come
// back: a PASS then proves less), else that time, else
// defaultCanaryWindow. The flag has no default of its own, so --help
// shows one truth: the computed window.
func (c *CanaryFlags) canaryWindow(f *Factory, dests []*sqs.Queue, dlq *sqs.Queue) time.Duration {
	need, why := poisonReturn(dests, dlq)
	set := c.verifySet != nil && c.verifySet()
	switch {
	case set && need > 0 && c.VerifyFor < need:
		f.IO.Warnf("--verify-for %s is shorter than a failing message needs to come back to %s (%s = %s): a PASS proves less", c.VerifyFor, dlq.Name, why, need.Round(time.Second))
		return c.VerifyFor
	case set:
		return c.VerifyFor
	case need == 0:
		f.IO.Infof("canary: watching for %s (no destination dead-letters into %s, so there is no return time to compute); pass --verify-for to change it", defaultCanaryWindow, dlq.Name)
		return defaultCanaryWindow
	}
	f.IO.Infof("canary: watching for %s (%s); pass --verify-for to change it", need.Round(time.Second), why)
	return need
}
