package inspect

import (
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// parseValue parses b (the bytes of a Go string: never changed, see str),
// one JSON value with optional surrounding JSON
// whitespace, into what json.Unmarshal gives for an `any` target
// (map[string]any, []any, string, float64, bool, nil): the same values,
// the same inputs refused (invalid JSON, a number out of float64's range,
// nesting deeper than encoding/json allows). It reads b once — validating
// as it builds — where json.Unmarshal scans the text twice (validation,
// then decoding through reflection); bodies are parsed for every record,
// so this is most of Decode's time (see BenchmarkParseBody).
func parseValue(b []byte) (any, bool) {
	p := valueParser{b: b}
	p.i = skipWS(b, 0)
	v, ok := p.value(0)
	if !ok || skipWS(b, p.i) != len(b) {
		return nil, false
	}
	return v, true
}

type valueParser struct {
	b []byte
	i int
}

func (p *valueParser) value(depth int) (any, bool) {
	b := p.b
	if p.i >= len(b) {
		return nil, false
	}
	switch c := b[p.i]; {
	case c == '{':
		if depth >= maxNesting {
			return nil, false
		}
		p.i = skipWS(b, p.i+1)
		m := make(map[string]any)
		if p.i < len(b) && b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			if p.i >= len(b) || b[p.i] != '"' {
				return nil, false
			}
			key, ok := p.str()
			if !ok {
				return nil, false
			}
			p.i = skipWS(b, p.i)
			if p.i >= len(b) || b[p.i] != ':' {
				return nil, false
			}
			p.i = skipWS(b, p.i+1)
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[key] = v
			p.i = skipWS(b, p.i)
			if p.i >= len(b) {
				return nil, false
			}
			if b[p.i] == '}' {
				p.i++
				return m, true
			}
			if b[p.i] != ',' {
				return nil, false
			}
			p.i = skipWS(b, p.i+1)
		}
	case c == '[':
		if depth >= maxNesting {
			return nil, false
		}
		p.i = skipWS(b, p.i+1)
		if p.i < len(b) && b[p.i] == ']' {
			p.i++
			return []any{}, true
		}
		// The elements gather on the stack: one allocation of the
		// right size for most arrays, not one per doubling.
		var buf [8]any
		a := buf[:0]
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.i = skipWS(b, p.i)
			if p.i >= len(b) {
				return nil, false
			}
			if b[p.i] == ']' {
				p.i++
				return append([]any(nil), a...), true
			}
			if b[p.i] != ',' {
				return nil, false
			}
			p.i = skipWS(b, p.i+1)
		}
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		end, ok := scanNumber(b, p.i)
		if !ok {
			return nil, false
		}
		if v, ok := smallInt(b[p.i:end]); ok {
			p.i = end
			return v, true
		}
		f, err := strconv.ParseFloat(string(b[p.i:end]), 64)
		if err != nil {
			return nil, false
		}
		p.i = end
		return f, true
	case c == 't':
		if len(b)-p.i >= 4 && string(b[p.i:p.i+4]) == "true" {
			p.i += 4
			return true, true
		}
	case c == 'f':
		if len(b)-p.i >= 5 && string(b[p.i:p.i+5]) == "false" {
			p.i += 5
			return false, true
		}
	case c == 'n':
		if len(b)-p.i >= 4 && string(b[p.i:p.i+4]) == "null" {
			p.i += 4
			return nil, true
		}
	}
	return nil, false
}

// boxedInts holds float64(n) for n < len(boxedInts), already in an
// interface: counts, attempts, priorities and HTTP statuses are mostly
// small integers, and boxing a float64 allocates.
var boxedInts = func() (t [1024]any) {
	for n := range t {
		t[n] = float64(n)
	}
	return
}()

// smallInt returns the value of num (a valid JSON number token) when it is
// an integer of at most 15 digits, which a float64 holds exactly (what
// strconv.ParseFloat returns for it), boxed; false otherwise (a fraction,
// an exponent, a minus sign, more digits).
func smallInt(num []byte) (any, bool) {
	if len(num) > 15 {
		return nil, false
	}
	var n uint64
	for _, c := range num {
		if c < '0' || c > '9' {
			return nil, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n < uint64(len(boxedInts)) {
		return boxedInts[n], true
	}
	return float64(n), true
}

// str reads the string token at p.i. A string without escapes is the
// text of b itself, not a copy: b is always the bytes of a Go string (see
// parseJSON), which nothing can change. (Whoever keeps such a string past
// the record, as a group key does, keeps the whole body: Grouper clones
// the values of the groups it creates.)
func (p *valueParser) str() (string, bool) {
	end, flags, ok := scanString(p.b, p.i)
	if !ok {
		return "", false
	}
	s := p.b[p.i+1 : end-1]
	p.i = end
	if flags&strEscaped == 0 && (flags&strNonASCII == 0 || utf8.Valid(s)) {
		if len(s) == 0 {
			return "", true
		}
		return unsafe.String(&s[0], len(s)), true
	}
	return unquote(s), true
}
