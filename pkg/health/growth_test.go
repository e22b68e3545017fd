package health

import (
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func rd(at time.Time, visible int) Reading {
	return Reading{At: at, Counts: Counts{Visible: visible}}
}

func TestGrowthRatePicksReadingClosestToWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hist := []Reading{rd(t0, 100), rd(t0.Add(5*time.Minute), 110), rd(t0.Add(8*time.Minute), 130)}
	now := rd(t0.Add(10*time.Minute), 160)
	// Closest to 5m before now is the 5m reading (110): +50 over 5m.
	r, ok := GrowthRate(hist, now, 5*time.Minute, 150*time.Second)
	if !ok || r.Base.Depth() != 110 || r.PerWindow != 50 {
		t.Fatalf("rate = %+v, %v", r, ok)
	}
	// A cron run a few seconds early still compares with the last run.
	r, ok = GrowthRate([]Reading{rd(t0, 10)}, rd(t0.Add(4*time.Minute+58*time.Second), 40), 5*time.Minute, 150*time.Second)
	if !ok || r.PerWindow < 30 || r.PerWindow > 31 {
		t.Fatalf("early run rate = %+v, %v", r, ok)
	}
	// Too recent a reading is not a base: growth stays unknown.
	if _, ok := GrowthRate([]Reading{rd(t0, 10)}, rd(t0.Add(time.Minute), 40), 5*time.Minute, 150*time.Second); ok {
		t.Fatal("a 1-minute-old reading was used for a 5-minute rate")
	}
	// Draining shows as negative growth and never breaches.
	r, _ = GrowthRate([]Reading{rd(t0, 100)}, rd(t0.Add(time.Minute), 40), time.Minute, 0)
	if res := GrowthResult(r, true, GrowthLimit{N: 0, Window: time.Minute}, ""); r.PerWindow != -60 || res.Status != StatusOK {
		t.Fatalf("draining: rate %+v result %+v", r, res)
	}
}

func TestParseGrowthLimit(t *testing.T) {
	for in, want := range map[string]GrowthLimit{
		"50/5m": {50, 5 * time.Minute}, "10/1h": {10, time.Hour}, "7": {7, 5 * time.Minute}, "3/m": {3, time.Minute}, " 0 / 30s ": {0, 30 * time.Second},
	} {
		got, err := ParseGrowthLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseGrowthLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-5/5m", "5/5", "5/0s", "5/xm"} {
		_, err := ParseGrowthLimit(in)
		if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "50/5m") {
			t.Errorf("ParseGrowthLimit(%q) = %v; want a usage error showing the format", in, err)
		}
	}
	if s := (GrowthLimit{50, 5 * time.Minute}).String(); s != "50/5m" {
		t.Errorf("String = %q", s)
	}
}

func TestResults(t *testing.T) {
	if r := VisibleResult(Counts{Visible: 11, InFlight: 2}, 10); r.Status != StatusBreach || r.Value != 11 {
		t.Errorf("11 > 10 visible: %+v", r)
	}
	if r := VisibleResult(Counts{Visible: 10}, 10); r.Status != StatusOK {
		t.Errorf("10 visible at max 10: %+v", r)
	}
	r := AgeResult(2*time.Hour, 20, Counts{Visible: 500}, time.Hour)
	if r.Status != StatusBreach || !r.Sampled || !strings.Contains(r.Detail, "20 sampled") || !strings.Contains(r.Detail, "sampled, the true oldest may be older") {
		t.Errorf("age breach: %+v", r)
	}
	if r := AgeResult(0, 0, Counts{InFlight: 3}, time.Hour); r.Status != StatusUnknown {
		t.Errorf("nothing visible to sample should be unknown: %+v", r)
	}
	if r := AgeResult(0, 0, Counts{}, time.Hour); r.Status != StatusOK || r.Detail != "queue is empty" {
		t.Errorf("empty queue: %+v", r)
	}
	if r := GrowthResult(Rate{}, false, GrowthLimit{5, time.Minute}, ""); r.Status != StatusUnknown || !strings.Contains(r.Detail, "next run") {
		t.Errorf("no base: %+v", r)
	}
}

func TestFileHistoryRoundTripAndTrim(t *testing.T) {
	h := FileHistory{Dir: t.TempDir()}
	key := "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
	if rs, err := h.Load(key); err != nil || rs != nil {
		t.Fatalf("empty history: %v %v", rs, err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := []Reading{rd(t0, 1), rd(t0.Add(26*time.Hour), 2), rd(t0.Add(27*time.Hour), 3)}
	if err := h.Save(key, Trim(rs, t0.Add(27*time.Hour))); err != nil {
		t.Fatal(err)
	}
	got, err := h.Load(key)
	if err != nil || len(got) != 2 || got[0].Counts.Visible != 2 {
		t.Fatalf("loaded %+v, %v; want the two readings within 25h", got, err)
	}
	if other, _ := h.Load("arn:aws:sqs:us-east-1:123456789012:" + "payments-dlq"); other != nil {
		t.Fatalf("queues share a history file: %+v", other)
	}
}
