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

// canaryWindow is how long the canary watches: --verify-for when given
// (with a warning when it is shorter than a poison message needs to come
// back: a PASS then proves less), else that time, else the flag's default.
func (c *CanaryFlags) canaryWindow(f *Factory, dests []*sqs.Queue, dlq *sqs.Queue) time.Duration {
	need, why := poisonReturn(dests, dlq)
	set := c.verifySet != nil && c.verifySet()
	switch {
	case set && need > 0 && c.VerifyFor < need:
		f.IO.Warnf("--verify-for %s is shorter than a failing message needs to come back to %s (%s = %s): a PASS proves less", c.VerifyFor, dlq.Name, why, need.Round(time.Second))
		return c.VerifyFor
	case set || need == 0:
		return c.VerifyFor
	}
	f.IO.Infof("canary: watching for %s (%s); pass --verify-for to change it", need.Round(time.Second), why)
	return need
}
