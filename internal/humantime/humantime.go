// Package humantime formats durations the way dlqctl prints them to people
// ("45s", "12m", "3h20m", "4d6h"), and parses the durations with a day
// count that flags take ("7d", "1d12h"). It is a leaf: broker packages and
// domain packages both use it.
package humantime

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration formats d with at most two units, rounded down.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		h := int(d / time.Hour)
		m := int((d % time.Hour) / time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	default:
		days := int(d / (24 * time.Hour))
		h := int((d % (24 * time.Hour)) / time.Hour)
		if h == 0 {
			return fmt.Sprintf("%dd", days)
		}
		return fmt.Sprintf("%dd%dh", days, h)
	}
}

// ParseDays parses a Go duration with an optional leading day count
// ("7d", "1d12h", "90m").
func ParseDays(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration; write it like 7d, 36h or 90m", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write it like 7d, 36h or 90m", s)
	}
	return days + v, nil
}
