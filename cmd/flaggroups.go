package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// The flag groups shared by the commands that move messages (redrive,
// restore; archive takes --rate and --concurrency), next to SelectionFlags.
// Embedded in a command's Options, their fields are promoted and their JSON
// names stay flat (the journal stores the options for `redrive resume`).

// PaceFlags are --rate, --ramp, --ramp-every, --concurrency and
// --rate-share. Rate and Ramp are the budget the flags name; a process of
// a shared run paces itself at its share of them (apply).
type PaceFlags struct {
	Rate         float64       `json:"rate,omitempty"`
	RampRaw      []string      `json:"-"`
	Ramp         []float64     `json:"ramp,omitempty"`
	RampEvery    time.Duration `json:"ramp_every,omitempty"`
	Concurrency  int           `json:"concurrency"`
	RateShareRaw string        `json:"-"`
	// Share is --rate-share I/N (nil: the run is alone).
	Share *redrive.Share `json:"rate_share,omitempty"`
}

// rateShareHelp describes --rate-share (redrive, restore and archive).
const rateShareHelp = "I/N: this process is the I-th of N sharing the run: it paces itself at 1/N of --rate and of every --ramp step (both are per process otherwise), and leaves to its peers the messages they hold (see 'dlqctl help scale')"

// parseRateShare parses --rate-share I/N ("" is a run alone).
func parseRateShare(raw string) (*redrive.Share, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	is, ns, ok := strings.Cut(raw, "/")
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || ierr != nil || nerr != nil || n < 1 || n > maxRateShare || i < 1 || i > n {
		return nil, errs.BadInputf("--rate-share %q: use I/N with whole numbers, 1 ≤ I ≤ N ≤ %d (e.g. --rate-share 2/4 on the second of four processes)", raw, maxRateShare)
	}
	return &redrive.Share{I: i, N: n}, nil
}

// maxRateShare bounds N in --rate-share: SQS lets 120,000 messages be in
// flight per queue, and each process holds up to --concurrency × 10.
const maxRateShare = 1000

// share is the run's share (the zero Share for a run alone).
func (p *PaceFlags) share() redrive.Share {
	if p.Share == nil {
		return redrive.Share{}
	}
	return *p.Share
}

// apply sets a run's pace: this process's share of the rate and of every
// ramp step, the ramp interval, the workers, and the share.
func (p *PaceFlags) apply(o *redrive.Options) {
	sh := p.share()
	o.Rate, o.Ramp, o.RampEvery, o.Share = sh.Rate(p.Rate), sh.Ramp(p.Ramp), p.RampEvery, sh
}

// AddFlags registers the pace flags; concurrencyHelp describes the workers.
func (p *PaceFlags) AddFlags(fl *pflag.FlagSet, concurrencyHelp string) {
	fl.Float64Var(&p.Rate, "rate", 0, "messages per second (0 = as fast as --concurrency allows)")
	fl.StringSliceVar(&p.RampRaw, "ramp", nil, "rate steps, e.g. 5,20,50,100 (messages per second)")
	fl.DurationVar(&p.RampEvery, "ramp-every", time.Minute, "time at each --ramp step")
	fl.IntVar(&p.Concurrency, "concurrency", 8, concurrencyHelp)
	fl.StringVar(&p.RateShareRaw, "rate-share", "", rateShareHelp)
}

// validate parses --ramp and checks the pace flags.
func (p *PaceFlags) validate() error {
	p.Ramp = nil
	for _, r := range p.RampRaw {
		for _, part := range strings.Split(r, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			if err != nil || v <= 0 {
				return errs.BadInputf("--ramp %q: each step must be a positive number of messages per second, e.g. --ramp 5,20,50", strings.Join(p.RampRaw, ","))
			}
			p.Ramp = append(p.Ramp, v)
		}
	}
	switch {
	case p.Rate < 0:
		return errs.BadInputf("--rate must be positive (got %g); leave it out to go as fast as --concurrency allows", p.Rate)
	case p.Rate > 0 && len(p.Ramp) > 0:
		return errs.BadInputf("--rate and --ramp both set the rate; use --ramp alone (it starts at its first step)")
	case len(p.Ramp) > 1 && p.RampEvery < time.Second:
		return errs.BadInputf("--ramp-every must be at least 1s (got %s)", p.RampEvery)
	case p.Concurrency < 1 || p.Concurrency > 256:
		return errs.BadInputf("--concurrency must be between 1 and 256 (got %d)", p.Concurrency)
	}
	sh, err := parseRateShare(p.RateShareRaw)
	if err != nil {
		return err
	}
	p.Share = sh
	return nil
}

// GuardFlags are --max-dest-backlog, --on-guard, --pause-timeout and
// --guard-interval (redrive adds --max-returns).
type GuardFlags struct {
	MaxDestBacklog int           `json:"max_dest_backlog,omitempty"`
	OnGuard        string        `json:"on_guard,omitempty"`
	PauseTimeout   time.Duration `json:"pause_timeout,omitempty"`
	GuardInterval  time.Duration `json:"guard_interval,omitempty"`
}

// AddFlags registers the guard flags; backlogHelp describes the backlog guard.
func (g *GuardFlags) AddFlags(fl *pflag.FlagSet, backlogHelp string) {
	fl.IntVar(&g.MaxDestBacklog, "max-dest-backlog", 0, backlogHelp)
	fl.StringVar(&g.OnGuard, "on-guard", redrive.GuardAbort, "what a tripped guard does: abort or pause")
	fl.DurationVar(&g.PauseTimeout, "pause-timeout", 10*time.Minute, "with --on-guard pause: abort when the guard has not cleared after this long")
	fl.DurationVar(&g.GuardInterval, "guard-interval", 10*time.Second, "how often guards are checked")
}

func (g *GuardFlags) validate() error {
	switch {
	case g.MaxDestBacklog < 0:
		return errs.BadInputf("--max-dest-backlog cannot be negative")
	case g.OnGuard != redrive.GuardAbort && g.OnGuard != redrive.GuardPause:
		return errs.BadInputf("--on-guard %q: use abort or pause", g.OnGuard)
	case g.GuardInterval < 100*time.Millisecond:
		return errs.BadInputf("--guard-interval must be at least 100ms (got %s)", g.GuardInterval)
	}
	return nil
}

// guards turns the flags into the pipeline's guard settings.
func (g *GuardFlags) guards(maxReturns float64) redrive.Guards {
	return redrive.Guards{MaxReturns: maxReturns, MaxDestBacklog: g.MaxDestBacklog, OnGuard: g.OnGuard,
		PauseTimeout: g.PauseTimeout, Every: g.GuardInterval}
}

// CanaryFlags are --canary, --verify-for, --verify-poll and --verify-drain.
type CanaryFlags struct {
	Canary      int           `json:"canary,omitempty"`
	VerifyFor   time.Duration `json:"verify_for,omitempty"`
	VerifyDrain bool          `json:"verify_drain,omitempty"`
	VerifyPoll  time.Duration `json:"verify_poll,omitempty"`
	// verifySet: --verify-for was given (else the window is derived from
	// the destination's redrive policy, see redrive.DecideWindow).
	verifySet func() bool
}

// AddFlags registers the canary flags; what says what a canary does.
func (c *CanaryFlags) AddFlags(fl *pflag.FlagSet, what string) {
	fl.IntVar(&c.Canary, "canary", 0, what)
	fl.DurationVar(&c.VerifyFor, "verify-for", 0, "how long a canary is watched; when not given it is computed by the broker as the time a poison message needs to come back (SQS: maxReceiveCount × visibility timeout; RabbitMQ: the message TTLs on its dead-letter path; Kafka: delay-named retry topics; + 30s), stated in the verdict; where it cannot be known, --canary needs it")
	c.verifySet = func() bool { return fl.Changed("verify-for") }
	fl.BoolVar(&c.VerifyDrain, "verify-drain", false, "a canary passes only if the destination also consumed it")
	fl.DurationVar(&c.VerifyPoll, "verify-poll", 5*time.Second, "how often a canary checks the DLQ depth")
}

// validate checks the canary flags against --max and --dry-run.
func (c *CanaryFlags) validate(max int, dryRun bool) error {
	switch {
	case c.Canary < 0:
		return errs.BadInputf("--canary cannot be negative")
	case dryRun && c.Canary > 0:
		return errs.BadInputf("--dry-run and --canary exclude each other; run --dry-run first, then --canary")
	case c.Canary > 0 && max > 0:
		return errs.BadInputf("--canary N already limits the run to N messages; drop --max")
	case c.Canary > 0 && c.verifySet != nil && c.verifySet() && c.VerifyFor < time.Second:
		return errs.BadInputf("--verify-for must be at least 1s (got %s)", c.VerifyFor)
	}
	return nil
}
