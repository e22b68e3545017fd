package humantime

import (
	"testing"
	"time"
)

func TestParseDays(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: " 1d12h ", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "0d", want: 0},
		{in: "-1d", bad: true},
		{in: "xd", bad: true},
		{in: "7days", bad: true},
		{in: "", bad: true},
	} {
		got, err := ParseDays(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseDays(%q) = %s, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseDays(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
