package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Threshold statuses. Only a breach fails a check; unknown (nothing to
// compare with yet) does not.
const (
	StatusOK      = "ok"
	StatusBreach  = "breach"
	StatusUnknown = "unknown"
)

// Thresholds are the limits of `dlqctl check`; unset ones are not checked.
type Thresholds struct {
	MaxVisible *int
	MaxAge     time.Duration // 0: not checked
	MaxGrowth  *GrowthLimit
}

// Result is one threshold's outcome (check -o json).
type Result struct {
	Name   string  `json:"name"`   // visible | oldest_age | growth
	Status string  `json:"status"` // ok | breach | unknown
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Unit   string  `json:"unit"` // messages | seconds | messages/WINDOW
	// Detail says how the value was obtained ("oldest of 20 sampled
	// messages", "over the last 5m3s") in words.
	Detail string `json:"detail"`
	// Sampled: the value comes from a sample of messages (an oldest age
	// can only be under-estimated).
	Sampled bool `json:"sampled,omitempty"`
	// Exact: the broker counted it exactly (RabbitMQ's ready count, a
	// Kafka group's pending records and oldest pending age); false for
	// approximate counts (SQS) and samples.
	Exact bool `json:"exact"`
}

// CheckReport is the outcome of one check run.
type CheckReport struct {
	Queue string `json:"queue"`
	// QueueURL is the queue as its broker names it, without credentials
	// (an SQS queue URL, amqp://HOST/VHOST/QUEUE, kafka://HOSTS/TOPIC).
	QueueURL  string    `json:"queue_url"`
	CheckedAt time.Time `json:"checked_at"`
	Counts    Counts    `json:"counts"`
	OK        bool      `json:"ok"`
	Results   []Result  `json:"thresholds"`
}

// Breaches returns the breached results.
func (r *CheckReport) Breaches() []Result {
	var out []Result
	for _, x := range r.Results {
		if x.Status == StatusBreach {
			out = append(out, x)
		}
	}
	return out
}

// CheckOptions configure Check.
type CheckOptions struct {
	Thresholds
	// SampleMax is how many messages to sample for the oldest age (on
	// brokers that do not know it).
	SampleMax        int
	SampleVisibility time.Duration
	// History keeps readings between runs for --max-growth (nil: none).
	History History
	// GrowthSample, when no stored reading is old enough, takes a second
	// reading after this long and scales the change to the window (0: the
	// growth threshold stays unknown until the next run).
	GrowthSample time.Duration
	Now          func() time.Time
	// OnSample is called before messages are sampled for the oldest age.
	OnSample func(max int)
	// OnWait is called before waiting GrowthSample for a second reading.
	OnWait func(d time.Duration)
}

// ReadDepth reads ep's depth the way check and watch do (dlqctl ui's
// DLQs screen); oldest asks for the oldest message's age where the broker
// knows it without reading messages.
func ReadDepth(ctx context.Context, ep broker.Endpoint, oldest bool) (broker.DepthReading, error) {
	return depthOf(ctx, ep, oldest)
}

// depthOf reads ep's depth: through its broker's DepthReader, or Depth
// alone in neutral words.
func depthOf(ctx context.Context, ep broker.Endpoint, oldest bool) (broker.DepthReading, error) {
	if r, ok := ep.(broker.DepthReader); ok {
		return r.ReadDepth(ctx, oldest)
	}
	d, err := ep.Depth(ctx)
	if err != nil {
		return broker.DepthReading{}, err
	}
	return broker.DepthReading{Depth: d, Terms: broker.DepthTerms{Ready: "ready", Held: "held", Delayed: "delayed"}}, nil
}

// Check evaluates the thresholds on the queue ep names, on any broker.
func Check(ctx context.Context, ep broker.Endpoint, opts CheckOptions) (*CheckReport, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d, err := depthOf(ctx, ep, opts.MaxAge > 0)
	if err != nil {
		return nil, err
	}
	now := Reading{At: opts.Now().UTC(), Counts: countsOf(d)}
	rep := &CheckReport{Queue: ep.Name(), QueueURL: ep.String(), CheckedAt: now.At, Counts: now.Counts, Results: []Result{}}
	if opts.MaxVisible != nil {
		r := VisibleResult(now.Counts, *opts.MaxVisible)
		if d.Note != "" {
			r.Detail = fmt.Sprintf("%d %s %s", now.Counts.Visible, d.Terms.Ready, d.Note)
		}
		rep.Results = append(rep.Results, r)
	}
	if opts.MaxAge > 0 {
		r, err := checkAge(ctx, ep, d, now.Counts, opts)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, r)
	}
	if opts.MaxGrowth != nil {
		res, err := checkGrowth(ctx, ep, now, opts)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
	}
	rep.OK = len(rep.Breaches()) == 0
	return rep, nil
}

// checkAge is --max-age: the broker's own oldest age where it knows it,
// else the oldest of a sample of messages read without consuming them.
func checkAge(ctx context.Context, ep broker.Endpoint, d broker.DepthReading, c Counts, opts CheckOptions) (Result, error) {
	if d.OldestKnown {
		r := Result{Name: "oldest_age", Status: StatusOK, Value: d.Oldest.Seconds(), Limit: opts.MaxAge.Seconds(), Unit: "seconds",
			Detail: d.OldestDetail, Exact: true}
		if d.Oldest > opts.MaxAge {
			r.Status = StatusBreach
		}
		return r, nil
	}
	oldest, sampled := time.Duration(0), 0
	if c.Visible > 0 {
		if opts.OnSample != nil {
			opts.OnSample(opts.SampleMax)
		}
		_, err := inspect.Scan(ctx, ep, inspect.ScanOptions{Max: opts.SampleMax, Visibility: opts.SampleVisibility},
			func(m *record.Record, _ any) error {
				sampled++
				oldest = max(oldest, time.Duration(m.AgeSeconds)*time.Second)
				return nil
			})
		if errors.Is(err, broker.ErrPeekUnsafe) {
			return Result{Name: "oldest_age", Status: StatusUnknown, Limit: opts.MaxAge.Seconds(), Unit: "seconds",
				Detail: "not peeked: " + err.Error()}, nil
		}
		if err != nil {
			return Result{}, err
		}
	}
	return AgeResult(oldest, sampled, c, opts.MaxAge), nil
}

func checkGrowth(ctx context.Context, ep broker.Endpoint, now Reading, opts CheckOptions) (Result, error) {
	lim := *opts.MaxGrowth
	key := ep.ID()
	var history []Reading
	if opts.History != nil {
		var err error
		if history, err = opts.History.Load(key); err != nil {
			return Result{}, fmt.Errorf("reading the previous depth of %s: %w", ep.Name(), err)
		}
	}
	rate, ok := GrowthRate(history, now, lim.Window, lim.Window/2)
	latest := now
	measured := ""
	if !ok && opts.GrowthSample > 0 {
		if opts.OnWait != nil {
			opts.OnWait(opts.GrowthSample)
		}
		t := time.NewTimer(opts.GrowthSample)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		case <-t.C:
		}
		d, err := depthOf(ctx, ep, false)
		if err != nil {
			return Result{}, err
		}
		latest = Reading{At: opts.Now().UTC(), Counts: countsOf(d)}
		rate, ok = GrowthRate([]Reading{now}, latest, lim.Window, 0)
		measured = " (measured now: no stored reading was old enough)"
	}
	if opts.History != nil {
		history = append(history, now)
		if latest != now {
			history = append(history, latest)
		}
		if err := opts.History.Save(key, Trim(history, latest.At)); err != nil {
			return Result{}, fmt.Errorf("saving the depth reading of %s: %w", ep.Name(), err)
		}
	}
	res := GrowthResult(rate, ok, lim, measured)
	res.Exact = ok && rate.Base.Counts.Exact && rate.Now.Counts.Exact
	return res, nil
}

// VisibleResult evaluates --max-visible on the ready count.
func VisibleResult(c Counts, maxVisible int) Result {
	t := c.words()
	detail := fmt.Sprintf("%d %s", c.Visible, t.Ready)
	var also []string
	if t.Held != "" {
		also = append(also, fmt.Sprintf("%d %s", c.InFlight, t.Held))
	}
	if t.Delayed != "" {
		also = append(also, fmt.Sprintf("%d %s", c.Delayed, t.Delayed))
	}
	if len(also) > 0 {
		detail += " (" + strings.Join(also, ", ") + ")"
	}
	r := Result{Name: "visible", Status: StatusOK, Value: float64(c.Visible), Limit: float64(maxVisible), Unit: "messages",
		Detail: detail, Exact: c.Exact}
	if c.Visible > maxVisible {
		r.Status = StatusBreach
	}
	return r
}

// AgeResult evaluates --max-age from the oldest message of a sample. A
// sample can only under-estimate the oldest age: a breach is certain, an ok
// is as good as the sample.
func AgeResult(oldest time.Duration, sampled int, c Counts, maxAge time.Duration) Result {
	t := c.words()
	r := Result{Name: "oldest_age", Status: StatusOK, Value: oldest.Seconds(), Limit: maxAge.Seconds(), Unit: "seconds", Sampled: true}
	switch {
	case sampled == 0 && c.Visible == 0 && c.InFlight > 0:
		r.Status = StatusUnknown
		r.Sampled = false
		r.Detail = fmt.Sprintf("no %s message to sample (%d %s)", t.Ready, c.InFlight, t.Held)
		return r
	case sampled == 0 && c.Visible == 0:
		r.Sampled = false
		r.Detail = "queue is empty"
		return r
	case sampled == 0:
		r.Status = StatusUnknown
		r.Detail = fmt.Sprintf("no message could be sampled (%d %s)", c.Visible, t.Ready)
		return r
	}
	from := ""
	if t.AgeFrom != "" {
		from = ", " + t.AgeFrom
	}
	approx := "~"
	if c.Exact {
		approx = ""
	}
	switch {
	case sampled >= c.Visible:
		r.Detail = fmt.Sprintf("oldest of all %d %s messages%s", sampled, t.Ready, from)
	case t.HeadFirst:
		r.Detail = fmt.Sprintf("oldest of the %d messages at the head of the queue (of %s%d %s)%s", sampled, approx, c.Visible, t.Ready, from)
	default:
		r.Detail = fmt.Sprintf("oldest of %d sampled messages (of %s%d %s)%s; sampled, the true oldest may be older", sampled, approx, c.Visible, t.Ready, from)
	}
	if oldest > maxAge {
		r.Status = StatusBreach
	}
	return r
}

// GrowthResult evaluates --max-growth from a rate; note is appended to
// the detail.
func GrowthResult(rate Rate, ok bool, lim GrowthLimit, note string) Result {
	r := Result{Name: "growth", Status: StatusOK, Limit: float64(lim.N), Unit: "messages/" + shortDur(lim.Window)}
	if !ok {
		r.Status = StatusUnknown
		r.Detail = "no earlier reading to compare with; this reading was saved and the next run will compare"
		return r
	}
	r.Value = rate.PerWindow
	r.Detail = fmt.Sprintf("depth %d → %d over %s, scaled to %s%s", rate.Base.Depth(), rate.Now.Depth(), shortDur(rate.Over.Round(time.Second)), shortDur(lim.Window), note)
	if rate.PerWindow > float64(lim.N) {
		r.Status = StatusBreach
	}
	return r
}
