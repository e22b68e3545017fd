package inspect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// NoFailure is the error fingerprint of a message without failure context.
const NoFailure = "(no failure context)"

// maxFingerprint caps the length of an error fingerprint.
const maxFingerprint = 200

// ErrorFingerprint is the normalised failure of rec: its type and reason
// with the parts that vary between occurrences of the same error replaced
// (see NormalizeError), so "timeout after 831ms for order o-17" and
// "timeout after 912ms for order o-99" group together.
func ErrorFingerprint(rec *record.Record) string {
	f := rec.Failure
	if !f.HasContext() {
		return NoFailure
	}
	if f.Type == "" && f.Reason == "" {
		// Only a condition, status, cause or label: e.g. a Lambda
		// destination record "condition: EventAgeExceeded".
		for _, e := range f.Evidence {
			if e.Kind != record.EvidenceClass {
				return NormalizeError(e.Kind + ": " + e.Text)
			}
		}
		return NoFailure // a label alone says nothing about the failure
	}
	switch {
	case f.Type == "":
		return NormalizeError(f.Reason)
	case f.Reason == "":
		return NormalizeError(f.Type)
	}
	return NormalizeError(f.Type + ": " + f.Reason)
}

// NormalizeError replaces the variable parts of an error text: quoted
// values become <str>, URLs <url>, UUIDs <uuid>, timestamps <time>, long
// hex ids <hex>, and every run of digits <n> (so "o-17" becomes "o-<n>" and
// "10.0.3.17:51234" becomes "<n>.<n>.<n>.<n>:<n>") except HTTP error
// statuses ("HTTP 503", "429 Too Many Requests"). Whitespace is
// collapsed and the result capped at 200 bytes. It is a single pass with no
// regular expressions.
func NormalizeError(s string) string {
	var b strings.Builder
	b.Grow(min(len(s), maxFingerprint) + 16)
	space := false
	for i := 0; i < len(s) && b.Len() < maxFingerprint; {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = b.Len() > 0
			i++
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		switch {
		case c == '"' || c == '\'' || c == '`':
			if j := strings.IndexByte(s[i+1:], c); j >= 0 && j <= 256 && (c != '\'' || quoteStart(s, i)) {
				b.WriteString("<str>")
				i += j + 2
				continue
			}
		case (c == 'h' || c == 'H') && hasURLPrefix(s[i:]):
			j := i
			for j < len(s) && !isSpace(s[j]) && s[j] != '"' && s[j] != '\'' && s[j] != ')' && s[j] != ',' {
				j++
			}
			b.WriteString("<url>")
			i = j
			continue
		case isHex(c) && (i == 0 || !isWord(s[i-1])):
			if n := uuidLen(s[i:]); n > 0 {
				b.WriteString("<uuid>")
				i += n
				continue
			}
			if n := timestampLen(s[i:]); n > 0 {
				b.WriteString("<time>")
				i += n
				continue
			}
			if n := hexIDLen(s[i:]); n > 0 {
				b.WriteString("<hex>")
				i += n
				continue
			}
		}
		if isDigit(c) {
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if httpStatusAt(s, i, j) {
				b.WriteString(s[i:j])
			} else {
				b.WriteString("<n>")
			}
			i = j
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// httpStatusAt reports whether s[i:j] is an HTTP error status worth keeping
// in a fingerprint (503 and 429 are different errors): a standalone number
// 400-599 after "HTTP", "status", "code" or "returned", or before a status
// text ("503 Service Unavailable", "429 Too Many Requests").
func httpStatusAt(s string, i, j int) bool {
	if j-i != 3 || s[i] < '4' || s[i] > '5' || (i > 0 && isWord(s[i-1])) || (j < len(s) && isWord(s[j])) {
		return false
	}
	if j+1 < len(s) && s[j] == ' ' && s[j+1] >= 'A' && s[j+1] <= 'Z' {
		return true
	}
	k := i
	for k > 0 && (s[k-1] == ' ' || s[k-1] == ':' || s[k-1] == '=') {
		k--
	}
	w := k
	for w > 0 && isWord(s[w-1]) {
		w--
	}
	switch strings.ToLower(s[w:k]) {
	case "http", "status", "code", "statuscode", "returned", "status_code":
		return true
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
func isWord(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
}

// quoteStart tells a quote from an apostrophe ("can't"): a single quote
// opens a quoted value only after a non-word byte.
func quoteStart(s string, i int) bool { return i == 0 || !isWord(s[i-1]) }

func hasURLPrefix(s string) bool {
	l := strings.ToLower(s[:min(len(s), 8)])
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// uuidLen returns 36 when s starts with a UUID (8-4-4-4-12 hex digits).
func uuidLen(s string) int {
	if len(s) < 36 {
		return 0
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return 0
			}
		default:
			if !isHex(s[i]) {
				return 0
			}
		}
	}
	if len(s) > 36 && isWord(s[36]) {
		return 0
	}
	return 36
}

// timestampLen returns the length of an RFC 3339-like timestamp at the
// start of s (2026-01-02, 2026-01-02T03:04:05.123Z, 2026-01-02 03:04:05+01:00).
func timestampLen(s string) int {
	digits := func(at, n int) bool {
		if at+n > len(s) {
			return false
		}
		for k := at; k < at+n; k++ {
			if !isDigit(s[k]) {
				return false
			}
		}
		return true
	}
	if !digits(0, 4) || len(s) < 10 || s[4] != '-' || !digits(5, 2) || s[7] != '-' || !digits(8, 2) {
		return 0
	}
	i := 10
	if i+8 <= len(s) && (s[i] == 'T' || s[i] == ' ') && digits(i+1, 2) && s[i+3] == ':' && digits(i+4, 2) {
		i += 6
		if i+3 <= len(s) && s[i] == ':' && digits(i+1, 2) {
			i += 3
		}
		if i < len(s) && (s[i] == '.' || s[i] == ',') && i+1 < len(s) && isDigit(s[i+1]) {
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
			}
		}
		switch {
		case i < len(s) && (s[i] == 'Z' || s[i] == 'z'):
			i++
		case i+3 <= len(s) && (s[i] == '+' || s[i] == '-') && digits(i+1, 2):
			i += 3
			if i+3 <= len(s) && s[i] == ':' && digits(i+1, 2) {
				i += 3
			} else if digits(i, 2) {
				i += 2
			}
		}
	}
	return i
}

// hexIDLen returns the length of a hex id at the start of s: "0x" followed
// by hex digits, or 8 or more hex digits mixing letters and digits
// (commit hashes, request ids). Pure words like "deadbeef" stay.
func hexIDLen(s string) int {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHex(s[2]) {
		j := 2
		for j < len(s) && isHex(s[j]) {
			j++
		}
		return j
	}
	j, letters, digits := 0, 0, 0
	for j < len(s) && isHex(s[j]) {
		if isDigit(s[j]) {
			digits++
		} else {
			letters++
		}
		j++
	}
	if j < 8 || letters == 0 || digits == 0 || (j < len(s) && isWord(s[j])) {
		return 0
	}
	return j
}

// NotJSON is the shape fingerprint of a body that is not JSON.
const NotJSON = "not-json"

// ShapeFingerprint describes the structure of a parsed JSON body: every
// key path with its value type, independent of key order and values.
// Arrays contribute the union of their elements' shapes. The result is a
// readable outline (keys of the first two levels) plus a hash of the full
// structure, e.g. `{eventId,eventType,payload{…}}#4f1c2a9e`; nil (a body
// that is not JSON) gives "not-json".
func ShapeFingerprint(parsed any) string {
	if parsed == nil {
		return NotJSON
	}
	var outline strings.Builder
	writeShape(&outline, parsed, 2)
	h := shapeHash(parsed)
	outline.WriteByte('#')
	outline.WriteString(strconv.FormatUint(uint64(uint32(h^h>>32)), 16))
	return outline.String()
}

// FNV-1a, 64 bit.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

func fnvUint(h, x uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= x & 0xff
		h *= fnvPrime64
		x >>= 8
	}
	return h
}

// shapeHash hashes the full canonical structure of v (sorted key paths with
// value types; arrays as the set of their elements' shapes) without
// building it as a string: the shape key runs once per record.
func shapeHash(v any) uint64 {
	switch t := v.(type) {
	case map[string]any:
		var buf [32]string
		keys := buf[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		h := fnvString(fnvOffset64, "{")
		for _, k := range keys {
			h = fnvUint(h, uint64(len(k)))
			h = fnvString(h, k)
			h = fnvUint(h, shapeHash(t[k]))
		}
		return fnvString(h, "}")
	case []any:
		var buf [16]uint64
		elems := buf[:0]
		for _, e := range t {
			if x := shapeHash(e); !slices.Contains(elems, x) {
				elems = append(elems, x)
			}
		}
		slices.Sort(elems)
		h := fnvString(fnvOffset64, "[")
		for _, x := range elems {
			h = fnvUint(h, x)
		}
		return fnvString(h, "]")
	case string:
		return fnvString(fnvOffset64, "s")
	case float64, int, int64:
		return fnvString(fnvOffset64, "n")
	case bool:
		return fnvString(fnvOffset64, "b")
	case nil:
		return fnvString(fnvOffset64, "null")
	}
	return fnvString(fnvOffset64, "?")
}

// writeShape writes the readable outline of v: keys of objects (value
// types only inside arrays), nested structure down to depth, then "…".
func writeShape(b *strings.Builder, v any, depth int) {
	switch t := v.(type) {
	case map[string]any:
		if depth == 0 {
			b.WriteString("{…}")
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k)
			child := t[k]
			switch child.(type) {
			case map[string]any, []any:
				writeShape(b, child, depth-1)
			}
		}
		b.WriteByte('}')
	case []any:
		if depth == 0 {
			b.WriteString("[…]")
			return
		}
		// The union of element shapes, each once, sorted.
		var elems []string
		seen := map[string]bool{}
		for _, e := range t {
			var eb strings.Builder
			writeShape(&eb, e, depth-1)
			if s := eb.String(); !seen[s] {
				seen[s] = true
				elems = append(elems, s)
			}
		}
		slices.Sort(elems)
		b.WriteByte('[')
		b.WriteString(strings.Join(elems, "|"))
		b.WriteByte(']')
	case string:
		b.WriteString("s")
	case float64, int, int64:
		b.WriteString("n")
	case bool:
		b.WriteString("b")
	case nil:
		b.WriteString("null")
	default:
		b.WriteString("?")
	}
}
