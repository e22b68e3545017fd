package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/time/rate"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// destLagGuard is one --max-dest-lag GROUP:N.
type destLagGuard struct {
	Group string
	Max   int64
}

func parseDestLag(raw []string) ([]destLagGuard, error) {
	var out []destLagGuard
	for _, r := range raw {
		g, n, ok := strings.Cut(r, ":")
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if !ok || strings.TrimSpace(g) == "" || err != nil || v < 0 {
			return nil, errs.BadInputf("--max-dest-lag %q: use GROUP:N, e.g. --max-dest-lag orders-service:1000 (the destination's consumer group and the most records it may lag behind)", r)
		}
		out = append(out, destLagGuard{Group: strings.TrimSpace(g), Max: v})
	}
	return out, nil
}

// kafkaPacer paces a Kafka redrive: --rate/--ramp as a token bucket
// (divided by --rate-share N) and the --max-dest-lag guards.
type kafkaPacer struct {
	lim       *rate.Limiter
	steps     []float64
	every     time.Duration
	start     time.Time
	guards    []destLagGuard
	check     func(ctx context.Context) (string, error)
	onGuard   string
	pauseMax  time.Duration
	guardGap  time.Duration
	lastCheck time.Time
	// trippedGuard is the guard that stopped the run.
	trippedGuard *KafkaGuard
}

func newKafkaPacer(opts *RedriveOptions, guards []destLagGuard, adm *kadm.Client) *kafkaPacer {
	p := &kafkaPacer{every: opts.RampEvery, start: time.Now(), guards: guards, onGuard: opts.OnGuard, pauseMax: opts.PauseTimeout, guardGap: opts.GuardInterval}
	if len(guards) > 0 {
		p.check = func(ctx context.Context) (string, error) {
			for _, g := range guards {
				lag, err := kafkaGroupLag(ctx, adm, g.Group)
				if err != nil {
					return "", fmt.Errorf("--max-dest-lag %s: %w", g.Group, err)
				}
				if lag > g.Max {
					why := fmt.Sprintf("consumer group %s lags %d records (over --max-dest-lag %d)", g.Group, lag, g.Max)
					p.trippedGuard = &KafkaGuard{Name: "max-dest-lag " + g.Group, State: "tripped", Value: float64(lag), Limit: float64(g.Max), Detail: why}
					return why, nil
				}
			}
			return "", nil
		}
	}
	var o redrive.Options
	opts.PaceFlags.apply(&o)
	p.steps = o.Ramp
	r := o.Rate
	if len(p.steps) > 0 {
		r = p.steps[0]
	}
	if r > 0 {
		p.lim = rate.NewLimiter(rate.Limit(r), max(1, min(500, int(r))))
	}
	return p
}

func (p *kafkaPacer) minRate() float64 {
	if p.lim == nil {
		return 0
	}
	m := float64(p.lim.Limit())
	for _, s := range p.steps {
		m = min(m, s)
	}
	return m
}

func (p *kafkaPacer) wait(ctx context.Context, n int) error {
	if err := p.guard(ctx); err != nil {
		return err
	}
	if p.lim == nil {
		return nil
	}
	if len(p.steps) > 1 && p.every > 0 {
		i := min(int(time.Since(p.start)/p.every), len(p.steps)-1)
		if l := rate.Limit(p.steps[i]); l != p.lim.Limit() {
			p.lim.SetLimit(l)
		}
	}
	for n > 0 {
		k := min(n, p.lim.Burst())
		if err := p.lim.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func (p *kafkaPacer) guard(ctx context.Context) error {
	if p.check == nil || time.Since(p.lastCheck) < p.guardGap {
		return nil
	}
	p.lastCheck = time.Now()
	why, err := p.check(ctx)
	if err != nil || why == "" {
		return err
	}
	if p.onGuard != redrive.GuardPause {
		return errKafkaGuard
	}
	deadline := time.Now().Add(p.pauseMax)
	for why != "" {
		if time.Now().After(deadline) {
			p.trippedGuard.Detail = why + " (did not clear within --pause-timeout)"
			return errKafkaGuard
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.guardGap):
		}
		if why, err = p.check(ctx); err != nil {
			return err
		}
	}
	p.lastCheck = time.Now()
	return nil
}
