package logs

import (
	"strings"
)

// MaxPatternLen is the longest filterPattern FilterLogEvents accepts
// (API reference: length constraints 0–1024).
const MaxPatternLen = 1024

// DefaultBatch is how many message ids one FilterLogEvents call looks for
// (one OR pattern). 64 ids of 8 characters fit in the 1024-character
// pattern limit with room to spare: 1,000 messages cost 16 calls per log
// group.
const DefaultBatch = 64

// Term is the search term for an id. For an SQS message id (or a Lambda
// request id) — a UUID — it is the first group of 8 hex digits: a whole
// term on its own in every log line that prints the id (the '-' after it
// ends a term in CloudWatch's matching, and a substring match finds it
// too), and short enough that 64 fit in one pattern. The events found are
// matched against the full id afterwards, so the rare event of another id
// that shares the 8 digits costs bandwidth, never a wrong answer. Ids of
// other shapes are searched whole.
func Term(id string) string {
	if i := strings.IndexByte(id, '-'); i >= 8 && isAlnum(id[:i]) {
		return id[:i]
	}
	return id
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// quote renders a term as a quoted CloudWatch term (quotes and backslashes
// escaped).
func quote(term string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(term) + `"`
}

// Pattern is the filter pattern matching events that contain any of the
// terms: `?"t1" ?"t2" …` (the OR syntax), or `"t1"` for a single term.
func Pattern(terms []string) string {
	if len(terms) == 1 {
		return quote(terms[0])
	}
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('?')
		b.WriteString(quote(t))
	}
	return b.String()
}

// Batches splits ids into groups of at most n whose OR pattern fits in
// MaxPatternLen; ids sharing a term share a slot. Order is kept.
func Batches(ids []string, n int) [][]string {
	if n <= 0 {
		n = DefaultBatch
	}
	var out [][]string
	var cur []string
	terms := map[string]bool{}
	length := 0
	for _, id := range ids {
		t := Term(id)
		add := 0
		if !terms[t] {
			add = len(quote(t)) + 2 // "?" and the separating space
		}
		if len(cur) > 0 && (len(terms) >= n && !terms[t] || length+add > MaxPatternLen) {
			out = append(out, cur)
			cur, terms, length = nil, map[string]bool{}, 0
			add = len(quote(t)) + 2
		}
		cur = append(cur, id)
		if !terms[t] {
			terms[t] = true
			length += add
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// terms returns the distinct terms of ids, in order.
func termsOf(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if t := Term(id); !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
