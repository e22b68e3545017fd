package inspect

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"sync/atomic"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Reading a record line fast.
//
// An offline record line (NDJSON from `sample -o ndjson`, an archive part)
// carries, besides what a message is (id, body, attributes, system
// attributes), what an earlier decoding derived from it: envelope, failure
// and the original payload, which for wrapped formats is the body again as
// a JSON tree. ReadRecords decodes every record afresh (Decode replaces
// envelope, failure, payload and redrive), so building those from the line
// is wasted work: with encoding/json into record.Record, turning the payload
// into a map[string]any tree, then parsing the body into another one, cost
// more than half of `classify --from`.
//
// unmarshalRecord is a lazy reader for the record contract: it walks the
// line's top-level object once, validating every value as encoding/json
// does, reads the message's own fields directly, and only validates what
// Decode derives again (envelope, payload, payload_encoding, redrive, and
// failure unless it carries context from the consumer's logs). Anything out of the ordinary — a field of an
// unexpected JSON type, a key that matches a record field only
// case-insensitively, a repeated key, invalid JSON — goes to
// json.Unmarshal, so the result (and every error message) is exactly what
// encoding/json gives; FuzzUnmarshalRecord checks that.
//
// Chosen by measurement: records per CPU-second reading 3,000 real-format
// record lines (internal/benchdata, ~1.7 KB each) on one core of the
// shared 2-core benchmark machine (CPU time of -benchtime 21x minus 1x, so
// contention barely moves it; BenchmarkUnmarshalRecord for the first and
// last rows, the others with the same harness):
//
//	encoding/json into record.Record (the reader before)             ~45,000
//	github.com/go-json-experiment/json (v2) into record.Record        ~77,000
//	  the same, derived fields skipped (jsontext.Value)             ~103,000
//	github.com/goccy/go-json into record.Record                      ~133,000
//	  the same, derived fields skipped                              ~176,000
//	unmarshalRecord (this file)                                     ~140,000
//
// goccy/go-json is ~25% faster still but accepts and rejects other inputs
// than encoding/json (what counts as broken JSON decides classes) and
// would be a new dependency; the v2 API rejects duplicate names and
// invalid UTF-8 unless told otherwise and is slower here. The lazy reader
// keeps encoding/json's results and errors with the standard library
// only. (Parsing bodies, see parseValue: encoding/json 1.0×, v2 0.9×,
// goccy 2.2×, parseValue 2.0×.)
func unmarshalRecord(line []byte, rec *record.Record) error {
	if fastRecord(line, rec) {
		return nil
	}
	*rec = record.Record{}
	return json.Unmarshal(line, rec)
}

// recordFields are the record's JSON names (record.Record's tags); a key
// equal to one of them only case-insensitively is left to encoding/json.
var recordFields = []string{"message_id", "queue", "body", "body_sha256", "size_bytes", "attributes", "system",
	"age_seconds", "expires_at", "envelope", "failure", "payload", "payload_encoding", "redrive", "class", "action", "rule", "confidence", "error_fingerprint"}

// fastRecord reads line into rec and reports whether it could; false
// means json.Unmarshal must decide (rec is then in an unspecified state).
func fastRecord(b []byte, rec *record.Record) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	var seen uint32
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		kEnd, kFlags, ok := scanString(b, i)
		if !ok || kFlags&strEscaped != 0 {
			return false
		}
		key := b[i+1 : kEnd-1]
		i = skipWS(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		field := -1
		for n, name := range recordFields {
			if string(key) == name {
				field = n
				break
			}
		}
		vStart := i
		var vEnd int
		var vFlags uint8
		// endsSource: a string in the value ends in "source" (the value
		// holds `source"`), noted while it is validated.
		var endsSource bool
		if i < len(b) && b[i] == '"' {
			vEnd, vFlags, ok = scanString(b, i)
			endsSource = ok && field == fieldFailure && endsInSource(b[vStart:vEnd])
		} else if field == fieldFailure {
			vEnd, ok = skipValueNote(b, i, &endsSource)
		} else {
			vEnd, ok = skipValue(b, i)
		}
		if !ok {
			return false
		}
		val := b[vStart:vEnd]
		if field < 0 {
			for _, name := range recordFields {
				if bytes.EqualFold(key, []byte(name)) {
					return false
				}
			}
		} else {
			if seen&(1<<field) != 0 {
				return false
			}
			seen |= 1 << field
			if !setField(rec, field, val, vFlags, endsSource) {
				return false
			}
		}
		i = skipWS(b, vEnd)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

// fieldFailure is the index of "failure" in recordFields.
var fieldFailure = slices.Index(recordFields, "failure")

// setField decodes val (a valid JSON value; flags from scanString when it
// is a string) into record field n. endsSource says whether val contains
// `source"` (some string token in it ends in "source").
func setField(rec *record.Record, n int, val []byte, flags uint8, endsSource bool) bool {
	null := string(val) == "null"
	switch recordFields[n] {
	case "message_id":
		return null || scannedString(val, flags, &rec.MessageID)
	case "queue":
		return null || recordStrings.read(val, &rec.Queue)
	case "body":
		return null || scannedString(val, flags, &rec.Body)
	case "body_sha256":
		return null || scannedString(val, flags, &rec.BodySHA256)
	case "class":
		return null || scannedString(val, flags, &rec.Class)
	case "action":
		return null || scannedString(val, flags, &rec.Action)
	case "rule":
		return null || scannedString(val, flags, &rec.Rule)
	case "error_fingerprint":
		return null || scannedString(val, flags, &rec.ErrorFingerprint)
	case "size_bytes":
		if null {
			return true
		}
		v, err := strconv.ParseInt(string(val), 10, strconv.IntSize)
		rec.SizeBytes = int(v)
		return err == nil
	case "confidence":
		if null {
			return true
		}
		v, err := strconv.ParseFloat(string(val), 64)
		rec.Confidence = v
		return err == nil
	case "age_seconds":
		if null {
			return true
		}
		v, err := strconv.ParseInt(string(val), 10, 64)
		rec.AgeSeconds = v
		return err == nil
	case "payload", "payload_encoding", "envelope", "redrive":
		// Decode derives these from the body and attributes again: they
		// are validated as JSON (skipValue) but not decoded.
		return true
	case "failure":
		// Derived again too, except failure context found in the
		// consumer's logs (failure.source, see --logs), which Decode
		// keeps.
		// (Any string ending in "source", `source"` in val, is noted
		// while val is validated; a key merely ending in "source" only
		// costs the decoding.)
		if !endsSource {
			return true
		}
		return json.Unmarshal(val, &rec.Failure) == nil
	case "attributes":
		return fastAttributes(val, rec)
	case "system":
		return fastSystem(val, &rec.System)
	case "expires_at":
		return rec.ExpiresAt.UnmarshalJSON(val) == nil
	}
	return false
}

// eachMember calls fn with each key (its token) and value of the valid
// JSON object obj, in order, until fn returns false.
func eachMember(obj []byte, fn func(key, val []byte) bool) bool {
	i := skipWS(obj, 1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for {
		kEnd, _, _ := scanString(obj, i)
		key := obj[i:kEnd]
		i = skipWS(obj, kEnd) + 1 // ':'
		i = skipWS(obj, i)
		vEnd, _ := skipValue(obj, i)
		if !fn(key, obj[i:vEnd]) {
			return false
		}
		i = skipWS(obj, vEnd)
		if obj[i] == '}' {
			return true
		}
		i = skipWS(obj, i+1) // ','
	}
}

// plainKey returns the text of a key token without escapes, or false.
func plainKey(tok []byte) ([]byte, bool) {
	k := tok[1 : len(tok)-1]
	return k, bytes.IndexByte(k, '\\') < 0
}

func isObject(val []byte) bool { return len(val) > 0 && val[0] == '{' }

// fastAttributes reads the attributes object ({"name": {"type", "value",
// "base64"}}) as encoding/json reads it into map[string]record.Attribute.
func fastAttributes(val []byte, rec *record.Record) bool {
	if string(val) == "null" {
		rec.Attributes = nil
		return true
	}
	if !isObject(val) {
		return false
	}
	if rec.Attributes == nil {
		rec.Attributes = make(map[string]record.Attribute, 4)
	}
	return eachMember(val, func(ktok, v []byte) bool {
		var name string
		if !recordStrings.read(ktok, &name) {
			return false
		}
		var a record.Attribute
		if string(v) != "null" {
			if !isObject(v) {
				return false
			}
			ok := eachMember(v, func(ftok, fv []byte) bool {
				k, plain := plainKey(ftok)
				if !plain {
					return false
				}
				var dst *string
				switch string(k) {
				case "type":
					return string(fv) == "null" || recordStrings.read(fv, &a.Type)
				case "value":
					dst = &a.Value
				case "base64":
					dst = &a.Base64
				default:
					if bytes.EqualFold(k, []byte("type")) || bytes.EqualFold(k, []byte("value")) || bytes.EqualFold(k, []byte("base64")) {
						return false
					}
					return true
				}
				return string(fv) == "null" || fastString(fv, dst)
			})
			if !ok {
				return false
			}
		}
		rec.Attributes[name] = a
		return true
	})
}

var systemFields = []string{"receive_count", "sent_at", "first_received_at", "source_queue_arn", "message_group_id", "deduplication_id", "sequence_number", "amqp", "kafka"}

// fastSystem reads the system attributes as encoding/json reads them into
// record.System.
func fastSystem(val []byte, s *record.System) bool {
	if string(val) == "null" {
		return true
	}
	if !isObject(val) {
		return false
	}
	return eachMember(val, func(ktok, v []byte) bool {
		k, plain := plainKey(ktok)
		if !plain {
			return false
		}
		null := string(v) == "null"
		switch string(k) {
		case "receive_count":
			if null {
				return true
			}
			n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
			s.ReceiveCount = int(n)
			return err == nil
		case "sent_at":
			return s.SentAt.UnmarshalJSON(v) == nil
		case "first_received_at":
			return s.FirstReceivedAt.UnmarshalJSON(v) == nil
		case "source_queue_arn":
			return null || recordStrings.read(v, &s.SourceQueueARN)
		case "message_group_id":
			return null || fastString(v, &s.MessageGroupID)
		case "deduplication_id":
			return null || fastString(v, &s.DeduplicationID)
		case "sequence_number":
			return null || fastString(v, &s.SequenceNumber)
		case "amqp":
			// A broker's own facts (a RabbitMQ delivery's, a Kafka record's
			// key and ordered headers) are read as encoding/json reads them.
			return json.Unmarshal(v, &s.AMQP) == nil
		case "kafka":
			return json.Unmarshal(v, &s.Kafka) == nil
		}
		for _, f := range systemFields {
			if bytes.EqualFold(k, []byte(f)) {
				return false
			}
		}
		return true
	})
}

// stringCache remembers recently read plain strings by a hash of their
// text: a file of records read from one queue repeats its queue on every
// line, and source queues, attribute names and types repeat from record
// to record; reusing one spares a copy and an allocation. Each slot is an
// atomic pointer, so the decoding goroutines share it; a collision only
// replaces the slot (enough slots that the few hundred strings of a
// typical file rarely meet).
type stringCache struct{ slots [4096]atomic.Pointer[string] }

// recordStrings holds queues, source queue ARNs, attribute names and
// types.
var recordStrings stringCache

// read is fastString with a cached string reused when its text is the
// token's.
func (c *stringCache) read(val []byte, dst *string) bool {
	if len(val) < 2 || val[0] != '"' {
		return false
	}
	text := val[1 : len(val)-1]
	if len(text) > 64 || bytes.IndexByte(text, '\\') >= 0 {
		return fastString(val, dst)
	}
	slot := &c.slots[stringHash(text)&uint64(len(c.slots)-1)]
	// A cached string is valid UTF-8 (fastString makes it so), so a text
	// equal to it is too and reads as itself.
	if p := slot.Load(); p != nil && *p == string(text) {
		*dst = *p
		return true
	}
	if !fastString(val, dst) {
		return false
	}
	s := *dst
	slot.Store(&s)
	return true
}

// stringHash is a quick hash of text for stringCache: its length, first
// and last eight bytes (queues and ARNs differ at the end, names anywhere
// in their few bytes).
func stringHash(text []byte) uint64 {
	h := uint64(len(text)) * 0x9E3779B97F4A7C15
	if len(text) >= 8 {
		h ^= binary.LittleEndian.Uint64(text)
		h = (h ^ h>>29) * 0xBF58476D1CE4E5B9
		h ^= binary.LittleEndian.Uint64(text[len(text)-8:])
	} else {
		for _, c := range text {
			h = h<<8 | uint64(c)
		}
	}
	h = (h ^ h>>31) * 0x94D049BB133111EB
	return h ^ h>>29
}

// scannedString is fastString for a token scanString read: its flags say
// whether it needs unescaping or a UTF-8 check.
func scannedString(val []byte, flags uint8, dst *string) bool {
	if len(val) < 2 || val[0] != '"' {
		return false
	}
	s := val[1 : len(val)-1]
	switch {
	case flags&strEscaped != 0:
		*dst = unquote(s)
	case flags&strNonASCII == 0 || utf8.Valid(s):
		*dst = string(s)
	default:
		*dst = unquote(s)
	}
	return true
}

// fastString sets *dst from a JSON string token without escapes and with
// valid UTF-8 (what encoding/json would give); escaped strings go through
// json.Unmarshal. It returns false when val is not a string.
func fastString(val []byte, dst *string) bool {
	if len(val) < 2 || val[0] != '"' {
		return false
	}
	s := val[1 : len(val)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		*dst = string(s)
		return true
	}
	*dst = unquote(s)
	return true
}

// unquote decodes the contents of a valid JSON string token as
// encoding/json does: escapes resolved, a \u escape of a lone or broken
// UTF-16 surrogate and each byte of invalid UTF-8 become U+FFFD.
func unquote(s []byte) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		// Copy the run up to the next escape at once when it is valid
		// UTF-8 (almost always).
		// (Runs are short in escaped JSON: a loop beats IndexByte's call.)
		if j := i; s[j] != '\\' {
			var high byte
			for j < len(s) && s[j] != '\\' {
				high |= s[j]
				j++
			}
			if high < utf8.RuneSelf {
				out = append(out, s[i:j]...)
			} else {
				out = appendUTF8(out, s[i:j])
			}
			i = j
			continue
		}
		// An escape.
		switch s[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 = hex4(s[i+2 : i+6])
				}
				if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
					r = d
					i += 6
				} else {
					r = unicode.ReplacementChar
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, s[i+1])
		}
		i += 2
	}
	if len(out) == 0 {
		return ""
	}
	// out is not used again: the string can share its bytes.
	return unsafe.String(&out[0], len(out))
}

// appendUTF8 appends run (text without escapes) with each byte of invalid
// UTF-8 replaced by U+FFFD.
func appendUTF8(out, run []byte) []byte {
	if utf8.Valid(run) {
		return append(out, run...)
	}
	for i := 0; i < len(run); {
		r, n := utf8.DecodeRune(run[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, unicode.ReplacementChar)
		} else {
			out = append(out, run[i:i+n]...)
		}
		i += n
	}
	return out
}

// hex4 decodes 4 hex digits (validated by scanString).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Flags scanString returns about a string token.
const (
	strEscaped  = 1 << iota // it has escapes
	strNonASCII             // it may have bytes >= 0x80 (never set for pure ASCII)
)

// scanString validates the JSON string starting at b[i] == '"' and returns
// the index after its closing quote and its flags.
func scanString(b []byte, i int) (end int, flags uint8, ok bool) {
	i++
	// acc gathers the bytes read (whole words: possibly a few after the
	// string, which can only make strNonASCII set needlessly).
	var acc uint64
	for {
		// The common run: plain bytes, eight at a time; a word holding a
		// byte that ends the run says exactly where (specialMask), so the
		// run is never rescanned byte by byte.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			acc |= w
			if m := specialMask(w); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
			acc |= uint64(b[i])
			i++
		}
		if i >= len(b) {
			return 0, 0, false
		}
	special:
		switch c := b[i]; {
		case c == '"':
			if acc&0x8080808080808080 != 0 {
				flags |= strNonASCII
			}
			return i + 1, flags, true
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return 0, 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHexDigit(b[i+2]) || !isHexDigit(b[i+3]) || !isHexDigit(b[i+4]) || !isHexDigit(b[i+5]) {
					return 0, 0, false
				}
				i += 6
			default:
				return 0, 0, false
			}
		default: // a control byte (< 0x20)
			return 0, 0, false
		}
	}
}

// specialMask returns, for the 8 bytes of x (little-endian: byte k is bits
// 8k..8k+7), a word whose lowest set bit is bit 8k+7 for the first byte k
// that ends a plain run of a JSON string: '"', '\\' or a control byte
// (< 0x20); 0 when there is none. ((v-0x01…)&^v&0x80… flags the zero
// bytes of v exactly up to the first one; above it a borrow may flag more,
// which the lowest set bit never sees.)
func specialMask(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (lo * '"')
	backslash := x ^ (lo * '\\')
	return ((quote-lo)&^quote | (backslash-lo)&^backslash | (x-lo*0x20)&^x) & hi
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// maxNesting is encoding/json's nesting limit: deeper values are left to
// it (it rejects them).
const maxNesting = 10000

// skipValue validates the JSON value starting at b[i] (RFC 8259, as
// encoding/json's scanner: invalid UTF-8 in strings is accepted) and
// returns the index after it.
func skipValue(b []byte, i int) (int, bool) { return skipValueNote(b, i, nil) }

// endsInSource reports whether the string token tok ends in "source"
// (tok holds `source"`: in valid JSON a quote after an "e" is always a
// closing one, so that is the only way a value can).
func endsInSource(tok []byte) bool {
	return len(tok) >= 8 && string(tok[len(tok)-7:]) == `source"`
}

// skipValueNote is skipValue that, when endsSource is not nil, sets
// *endsSource if a string (key or value) in the value ends in "source".
func skipValueNote(b []byte, i int, endsSource *bool) (int, bool) {
	// stack of open containers: '{' or '['; afterKey tells whether an
	// object is waiting for a value after its key.
	var stackBuf [32]byte
	stack := stackBuf[:0]
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, false
		}
		// A value.
		switch c := b[i]; {
		case c == '{':
			if len(stack) >= maxNesting {
				return 0, false
			}
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			stack = append(stack, '{')
			var ok bool
			if i, ok = skipKey(b, i, endsSource); !ok {
				return 0, false
			}
			continue
		case c == '[':
			if len(stack) >= maxNesting {
				return 0, false
			}
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			stack = append(stack, '[')
			continue
		case c == '"':
			end, _, ok := scanString(b, i)
			if !ok {
				return 0, false
			}
			if endsSource != nil && endsInSource(b[i:end]) {
				*endsSource = true
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end, ok := scanNumber(b, i)
			if !ok {
				return 0, false
			}
			i = end
		case c == 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return 0, false
			}
			i += 4
		case c == 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return 0, false
			}
			i += 5
		case c == 'n':
			if !bytes.HasPrefix(b[i:], []byte("null")) {
				return 0, false
			}
			i += 4
		default:
			return 0, false
		}
		// After a value: close containers or go on to the next element.
		for {
			if len(stack) == 0 {
				return i, true
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i = skipWS(b, i+1)
				if top == '{' {
					var ok bool
					if i, ok = skipKey(b, i, endsSource); !ok {
						return 0, false
					}
				}
				break
			}
			if top == '{' && b[i] == '}' || top == '[' && b[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return 0, false
		}
	}
}

// skipKey validates `"key" :` at b[i] and returns the index after the
// colon (noting a key ending in "source", see skipValueNote).
func skipKey(b []byte, i int, endsSource *bool) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	end, _, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	if endsSource != nil && endsInSource(b[i:end]) {
		*endsSource = true
	}
	i = skipWS(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// scanNumber validates a JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, true
}
