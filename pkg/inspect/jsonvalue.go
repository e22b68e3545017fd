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
