package redrive

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Native is a move the broker makes itself (redrive --engine native: SQS
// message move tasks): the DLQ and its mover, the destination (nil: back
// to the sources) and how the confirmation names it, and the pace (whole
// rate steps, the time at each).
type Native struct {
	DLQ   broker.Endpoint
	Mover broker.NativeMover
	Dest  broker.Endpoint
	To    string
	Steps []int
	Every time.Duration
}

// NativeSteps are the rate steps of a native move: the --ramp steps, else
// the one --rate (0: the broker's own pace).
func NativeSteps(rate float64, ramp []float64) []int {
	if len(ramp) == 0 {
		return []int{int(rate)}
	}
	steps := make([]int, 0, len(ramp))
	for _, r := range ramp {
		steps = append(steps, int(r))
	}
	return steps
}

// NativeRates refuses a --rate or --ramp step the broker's own move cannot
// take (whole numbers up to maxRate).
func NativeRates(maxRate int, rate float64, ramp []float64) error {
	if rate > float64(maxRate) || rate != float64(int(rate)) {
		return errs.BadInputf("--engine native takes a whole --rate from 1 to %d (got %g)", maxRate, rate)
	}
	for _, r := range ramp {
		if r > float64(maxRate) || r != float64(int(r)) {
			return errs.BadInputf("--engine native takes whole --ramp steps from 1 to %d (got %g)", maxRate, r)
		}
	}
	return nil
}

// Move asks to confirm (confirm gets the question and the refusal of a
// script without --yes), starts the broker's move and follows it, each
// poll reported to onTask with the time since the start, until it ends.
func (n *Native) Move(ctx context.Context, confirm func(prompt, refusal string) error, onTask func(broker.NativeTask, time.Duration)) (*broker.NativeTask, error) {
	depth, err := n.DLQ.Depth(ctx)
	if err != nil {
		return nil, broker.StartError(err)
	}
	if err := confirm(fmt.Sprintf("Start an SQS move task for all %d messages of %s to %s?", depth.Ready, n.DLQ.Name(), n.To),
		fmt.Sprintf("redrive moves every message out of %s; pass --yes to confirm", n.DLQ.Name())); err != nil {
		return nil, err
	}
	start := time.Now()
	return n.Mover.NativeMove(ctx, n.Dest, n.Steps, n.Every, 2*time.Second, func(t broker.NativeTask) { onTask(t, time.Since(start)) })
}

// ParseShare parses a share of messages: a percentage ("5%") or a fraction
// ("0.05"; a number above 1 is a percentage); "" is none (0).
func ParseShare(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, err
	}
	if pct || v > 1 {
		v /= 100
	}
	if v <= 0 || v > 1 {
		return 0, fmt.Errorf("out of range")
	}
	return v, nil
}
