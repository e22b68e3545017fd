package redrive

import (
	"sort"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/internal/jsonenc"
)

// idRun is a run of consecutive message ids of the form PREFIX + N, N a
// decimal without sign or leading zero (Kafka's TOPIC-PARTITION@OFFSET):
// From through To. The journal records a batch of such ids as a few runs
// (one per partition) instead of a line per message.
type idRun struct {
	Prefix string `json:"p"`
	From   int64  `json:"from"`
	To     int64  `json:"to"`
}

// splitRunID splits an id into the prefix ending in its last '@' and the
// number after it; ok is false unless the id is exactly prefix +
// strconv.FormatInt(n, 10), so a run always gives back the ids it holds.
func splitRunID(id string) (prefix string, n int64, ok bool) {
	at := strings.LastIndexByte(id, '@')
	if at < 0 || at == len(id)-1 {
		return "", 0, false
	}
	digits := id[at+1:]
	if len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return "", 0, false
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return "", 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return id[:at+1], n, true
}

// runID is the id of number n of a run with prefix p.
func runID(p string, n int64) string { return p + strconv.FormatInt(n, 10) }

// appendRuns appends ids to runs, extending the last run of a prefix when
// the id follows it; ids that are not of the form are returned in rest.
func appendRuns(runs []idRun, rest []string, id string) ([]idRun, []string) {
	p, n, ok := splitRunID(id)
	if !ok {
		return runs, append(rest, id)
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Prefix == p {
			if runs[i].To+1 == n {
				runs[i].To = n
				return runs, rest
			}
			break
		}
	}
	return append(runs, idRun{Prefix: p, From: n, To: n}), rest
}

// appendRunsJSON appends `"runs":[{"p":…,"from":…,"to":…},…]`.
func appendRunsJSON(b []byte, runs []idRun) []byte {
	b = append(b, `"runs":[`...)
	for i, r := range runs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"p":`...)
		b = jsonenc.String(b, r.Prefix)
		b = append(b, `,"from":`...)
		b = jsonenc.Int(b, r.From)
		b = append(b, `,"to":`...)
		b = jsonenc.Int(b, r.To)
		b = append(b, '}')
	}
	return append(b, ']')
}

// intervals is a set of int64 as sorted, disjoint, non-adjacent closed
// intervals: a partition's offsets sent by a run are one or a few.
type intervals [][2]int64

// add inserts [from, to] and returns how many numbers were not in the set.
func (s *intervals) add(from, to int64) int64 {
	if from > to {
		return 0
	}
	v := *s
	// Fast path: after (or adjacent to) the last interval.
	if n := len(v); n == 0 || v[n-1][1] < from-1 {
		*s = append(v, [2]int64{from, to})
		return to - from + 1
	} else if v[n-1][0] <= from {
		if to <= v[n-1][1] {
			return 0
		}
		added := to - max(v[n-1][1], from-1)
		v[n-1][1] = to
		return added
	}
	// General case: merge every interval touching [from-1, to+1].
	i := sort.Search(len(v), func(k int) bool { return v[k][1] >= from-1 })
	k := i
	lo, hi := from, to
	covered := int64(0)
	for k < len(v) && v[k][0] <= to+1 {
		if c := min(v[k][1], to) - max(v[k][0], from) + 1; c > 0 {
			covered += c // adjacent intervals merge without overlapping
		}
		lo, hi = min(lo, v[k][0]), max(hi, v[k][1])
		k++
	}
	out := append(v[:i:i], [2]int64{lo, hi})
	*s = append(out, v[k:]...)
	return to - from + 1 - covered
}

// remove deletes [from, to] and returns how many numbers were in the set.
func (s *intervals) remove(from, to int64) int64 {
	v := *s
	i := sort.Search(len(v), func(k int) bool { return v[k][1] >= from })
	var removed int64
	var out [][2]int64
	out = append(out, v[:i]...)
	for ; i < len(v); i++ {
		iv := v[i]
		if iv[0] > to {
			break
		}
		removed += min(iv[1], to) - max(iv[0], from) + 1
		if iv[0] < from {
			out = append(out, [2]int64{iv[0], from - 1})
		}
		if iv[1] > to {
			out = append(out, [2]int64{to + 1, iv[1]})
		}
	}
	if removed == 0 {
		return 0
	}
	*s = append(out, v[i:]...)
	return removed
}

// has reports whether n is in the set.
func (s intervals) has(n int64) bool {
	i := sort.Search(len(s), func(k int) bool { return s[k][1] >= n })
	return i < len(s) && s[i][0] <= n
}
