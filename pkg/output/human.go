package output

import (
	"time"

	"github.com/dlqctl/dlqctl/internal/humantime"
)

// Duration renders d compactly: 45s, 12m, 3h12m, 4d2h.
func Duration(d time.Duration) string { return humantime.Duration(d) }
