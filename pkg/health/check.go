package health

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
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
	Detail  string `json:"detail"`
	Sampled bool   `json:"sampled,omitempty"`
}

// CheckReport is the outcome of one check run.
type CheckReport struct {
	Queue     string     `json:"queue"`
	QueueURL  string     `json:"queue_url"`
	CheckedAt time.Time  `json:"checked_at"`
	Counts    sqs.Counts `json:"counts"`
	OK        bool       `json:"ok"`
	Results   []Result   `json:"thresholds"`
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
	// SampleMax is how many messages to sample for the oldest age.
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
	OnSample func(q *sqs.Queue, max int)
	// OnWait is called before waiting GrowthSample for a second reading.
	OnWait func(d time.Duration)
}

// Check evaluates the thresholds on q, whose attributes must be fresh.
func Check(ctx context.Context, c *sqs.Client, q *sqs.Queue, opts CheckOptions) (*CheckReport, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	now := Reading{At: opts.Now().UTC(), Counts: q.Counts()}
	rep := &CheckReport{Queue: q.Name, QueueURL: q.URL, CheckedAt: now.At, Counts: now.Counts, Results: []Result{}}

	if opts.MaxVisible != nil {
		rep.Results = append(rep.Results, VisibleResult(now.Counts, *opts.MaxVisible))
	}
	if opts.MaxAge > 0 {
		oldest, sampled := time.Duration(0), 0
		if now.Counts.Visible > 0 {
			if opts.OnSample != nil {
				opts.OnSample(q, opts.SampleMax)
			}
			_, err := inspect.Scan(ctx, sqs.NewEndpoint(c, q), inspect.ScanOptions{Max: opts.SampleMax, Visibility: opts.SampleVisibility},
				func(m *record.Record, _ any) error {
					sampled++
					oldest = max(oldest, time.Duration(m.AgeSeconds)*time.Second)
					return nil
				})
			if err != nil {
				return nil, err
			}
		}
		rep.Results = append(rep.Results, AgeResult(oldest, sampled, now.Counts, opts.MaxAge))
	}
	if opts.MaxGrowth != nil {
		res, err := checkGrowth(ctx, c, q, now, opts)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
	}
	rep.OK = len(rep.Breaches()) == 0
	return rep, nil
}

func checkGrowth(ctx context.Context, c *sqs.Client, q *sqs.Queue, now Reading, opts CheckOptions) (Result, error) {
	lim := *opts.MaxGrowth
	var history []Reading
	if opts.History != nil {
		var err error
		if history, err = opts.History.Load(q.ARN); err != nil {
			return Result{}, fmt.Errorf("reading the previous depth of %s: %w", q.Name, err)
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
		if err := c.Refresh(ctx, q); err != nil {
			return Result{}, sqs.WrapAWSError(err)
		}
		latest = Reading{At: opts.Now().UTC(), Counts: q.Counts()}
		rate, ok = GrowthRate([]Reading{now}, latest, lim.Window, 0)
		measured = " (measured now: no stored reading was old enough)"
	}
	if opts.History != nil {
		history = append(history, now)
		if latest != now {
			history = append(history, latest)
		}
		if err := opts.History.Save(q.ARN, Trim(history, latest.At)); err != nil {
			return Result{}, fmt.Errorf("saving the depth reading of %s: %w", q.Name, err)
		}
	}
	return GrowthResult(rate, ok, lim, measured), nil
}

// VisibleResult evaluates --max-visible.
func VisibleResult(c sqs.Counts, maxVisible int) Result {
	r := Result{Name: "visible", Status: StatusOK, Value: float64(c.Visible), Limit: float64(maxVisible), Unit: "messages",
		Detail: fmt.Sprintf("%d visible (%d in flight, %d delayed)", c.Visible, c.InFlight, c.Delayed)}
	if c.Visible > maxVisible {
		r.Status = StatusBreach
	}
	return r
}

// AgeResult evaluates --max-age from the oldest message of a sample. A
// sample can only under-estimate the oldest age: a breach is certain, an ok
// is as good as the sample.
func AgeResult(oldest time.Duration, sampled int, c sqs.Counts, maxAge time.Duration) Result {
	r := Result{Name: "oldest_age", Status: StatusOK, Value: oldest.Seconds(), Limit: maxAge.Seconds(), Unit: "seconds", Sampled: true}
	switch {
	case sampled == 0 && c.Visible == 0 && c.InFlight > 0:
		r.Status = StatusUnknown
		r.Sampled = false
		r.Detail = fmt.Sprintf("no visible message to sample (%d in flight)", c.InFlight)
		return r
	case sampled == 0 && c.Visible == 0:
		r.Sampled = false
		r.Detail = "queue is empty"
		return r
	case sampled == 0:
		r.Status = StatusUnknown
		r.Detail = fmt.Sprintf("no message could be sampled (%d visible)", c.Visible)
		return r
	}
	r.Detail = fmt.Sprintf("oldest of %d sampled messages (of ~%d visible); sampled, the true oldest may be older", sampled, c.Visible)
	if sampled >= c.Visible {
		r.Detail = fmt.Sprintf("oldest of %d sampled messages (all visible ones)", sampled)
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
