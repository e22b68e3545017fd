package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// recordJSONSeeds are lines the lazy record reader must read exactly as
// encoding/json does (or fall back to it): real records and the odd ones.
var recordJSONSeeds = []string{
	`{"message_id":"m-1","queue":"arn:aws:sqs:us-east-1:1:q","body":"{\"a\":1}","body_sha256":"x","size_bytes":12,"attributes":{"t":{"type":"String","value":"v"}},"system":{"receive_count":3,"sent_at":"2026-11-30T03:15:00.000Z"},"age_seconds":60,"expires_at":"2026-12-14T03:15:00.000Z","envelope":{"event_id":"e","event_version":3},"failure":{"format":"generic","reason":"r","source":{"note":"n"}},"payload":{"a":[1,2,{"b":null}]},"redrive":{"run":"r","orig":"o","n":1,"at":"2026-11-30T03:15:00.000Z"},"class":"c","action":"a","rule":"r","error_fingerprint":"f"}`,
	`{}`, ` { } `, `{"body":null,"message_id":null,"size_bytes":null}`, `[]`, `null`, `"x"`, `{"body":"x"} x`, `{"body":"x",}`,
	`{"Body":"case"}`, `{"payload_encoding":"base64/json","body":"x"}`, `{"payload_encoding":5}`, `{"Payload_Encoding":"json"}`, `{"MESSAGE_ID":"m"}`, `{"body":"a","body":"b"}`, `{"attributes":{"a":{"type":"String"}},"attributes":{"b":{"type":"String"}}}`,
	`{"size_bytes":1.5}`, `{"size_bytes":"12"}`, `{"size_bytes":1e3}`, `{"size_bytes":99999999999999999999}`, `{"age_seconds":-0}`,
	`{"body":"\u00e9\ud83d\ude00 \ud800 \udc00x \ud800\u0041 \"q\" \\ \/ \b\f\n\r\t"}`, "{\"body\":\"\xff\xfe bad utf8 \xc3\"}", "{\"body\":\"a\x01b\"}",
	`{"body":"\u12"}`, `{"body":"\x"}`, `{"payload":[1,2,]}`, `{"payload":{"a":1,}}`, `{"payload":01}`, `{"payload":-}`, `{"payload":1.}`, `{"payload":1e}`,
	`{"payload":tru}`, `{"payload":[[[[{"a":[true,false,null,-1.5e+10,"s"]}]]]]}`, `{"unknown":{"x":[1,{"y":"z"}]},"body":"b"}`,
	`{"system":{"sent_at":"not a time"}}`, `{"system":{"Sent_At":"2026-11-30T03:15:00Z","receive_count":null,"x":1}}`, `{"system":5}`, `{"attributes":{"a":null,"b":{"Type":"x"}}}`, `{"attributes":{"a\n":{"type":"String","value":"\u00e9","x":[1]}}}`, `{"attributes":[]}`, `{"failure":{"source":{"note":5}}}`, `{"expires_at":"2026-11-30T03:15:00Z"}`, `{"envelope":5}`, `{"failure":{"attempt_count":"x"}}`, `{"failure":{"attempt_count":"x","source":{}}}`, `{"redrive":{"n":"x"}}`,
	`{"body":"k","system":{"receive_count":0,"kafka":{"topic":"t.DLT","partition":1,"offset":7,"key":"cust-7","headers":[{"key":"tenant","value":"a"},{"key":"tenant","value":"b"},{"key":"sig","base64":"AP8="}]}}}`,
	`{"body":"r","system":{"amqp":{"exchange":"x","routing_key":"k","deaths":[{"queue":"q","reason":"rejected","count":2}]}}}`,
	`{"system":{"kafka":5}}`, `{"system":{"Kafka":{"topic":"t"}}}`, `{"system":{"kafka":null,"amqp":null}}`,
	`{"b\u006fdy":"escaped key"}`, `{"body" : "spaced" , "queue" : "q" }`, "{\"body\":\"x\"\n}", `{"message_id":"m","body":"ſ"}`, `{"meſſage_id":"m"}`,
}

// derivedRecord is a record as encoding/json reads it when the fields
// Decode derives again are only validated, not decoded.
type derivedRecord struct {
	record.Record
	Envelope json.RawMessage `json:"envelope"`
	Failure  json.RawMessage `json:"failure"`
	Payload  json.RawMessage `json:"payload"`
	Encoding json.RawMessage `json:"payload_encoding"`
	Redrive  json.RawMessage `json:"redrive"`
}

// checkUnmarshalRecord: the lazy record reader gives exactly what
// json.Unmarshal gives for the record's own fields, and for failure when
// it carries failure context from logs (failure.source), the fields
// Decode derives again left out; when it refuses a line, its error is
// json.Unmarshal's.
func checkUnmarshalRecord(t *testing.T, line []byte) {
	t.Helper()
	var full, got record.Record
	fullErr := json.Unmarshal(line, &full)
	gotErr := unmarshalRecord(line, &got)
	if !fastRecord(line, &record.Record{}) {
		// Left to encoding/json: the very same result.
		if (fullErr == nil) != (gotErr == nil) || fullErr != nil && fullErr.Error() != gotErr.Error() {
			t.Fatalf("%q: error %v, encoding/json: %v", line, gotErr, fullErr)
		}
		if !reflect.DeepEqual(full, got) {
			t.Fatalf("%q:\n got %#v\nwant %#v", line, got, full)
		}
		return
	}
	if gotErr != nil {
		t.Fatalf("%q: fast path read it, yet %v", line, gotErr)
	}
	var want derivedRecord
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("%q: read although encoding/json says %v", line, err)
	}
	// The reader decodes failure when it may hold a "source" key (any key
	// ending in source", as a cheap test); Decode keeps only a failure
	// with a source, so the others cost only the decoding.
	if bytes.Contains(want.Failure, []byte(`source"`)) {
		if err := json.Unmarshal(want.Failure, &want.Record.Failure); err != nil {
			t.Fatalf("%q: read although its failure does not decode: %v", line, err)
		}
	}
	if !reflect.DeepEqual(want.Record, got) {
		t.Fatalf("%q:\n got %#v\nwant %#v", line, got, want.Record)
	}
}

// FuzzUnmarshalRecord: see checkUnmarshalRecord.
func FuzzUnmarshalRecord(f *testing.F) {
	for _, s := range recordJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUnmarshalRecord)
}

// FuzzSkipValue: the validating skipper accepts exactly what
// encoding/json accepts as one JSON value.
func FuzzSkipValue(f *testing.F) {
	for _, s := range recordJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end, ok := skipValue(b, skipWS(b, 0))
		got := ok && skipWS(b, end) == len(b)
		if got != json.Valid(b) {
			t.Fatalf("%q: skipValue %v, json.Valid %v", b, got, json.Valid(b))
		}
	})
}

// TestUnmarshalRecordLines: the seeds and every line of the NDJSON
// fixtures read the same both ways.
func TestUnmarshalRecordLines(t *testing.T) {
	lines := append([]string{}, recordJSONSeeds...)
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	for _, fn := range files {
		fh, err := os.Open(fn)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		fh.Close()
	}
	for _, l := range lines {
		checkUnmarshalRecord(t, []byte(l))
	}
}

// FuzzParseValue: parseValue gives what json.Unmarshal gives for an any
// target, and refuses what it refuses.
func FuzzParseValue(f *testing.F) {
	for _, s := range recordJSONSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`[1e400]`, `{"a":1,"a":2}`, `[-0, 0.5e-3, 1E+2, 123456789012345678901234567890]`, `"\ud83d\ude00"`, " [ ] ", `{"a":{}}x`, `[` + strings.Repeat("[", 10001) + strings.Repeat("]", 10002)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		wantErr := json.Unmarshal(b, &want)
		got, ok := parseValue(b)
		if ok != (wantErr == nil) {
			t.Fatalf("%q: parseValue ok=%v, encoding/json: %v", b, ok, wantErr)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}

// TestSpecialMaskFindsTheFirstSpecialByte: the lowest bit specialMask
// sets is the high bit of the first byte that ends a plain run of a JSON
// string ('"', '\\', < 0x20), in every position, next to every other byte
// value (the borrows of the word tricks must never flag a byte below it or
// miss it), and it sets none when there is no such byte: scanString jumps
// to the byte it names.
func TestSpecialMaskFindsTheFirstSpecialByte(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	var w [8]byte
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{0x00, 0x1f, 0x20, '"', '\\', 'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff} {
				for _, other := range []int{-1, (pos + 3) % 8, (pos + 5) % 8} {
					for k := range w {
						w[k] = fill
					}
					w[pos] = byte(c)
					if other >= 0 {
						w[other] = byte(255 - c)
					}
					first := 8
					for k := range w {
						if special(w[k]) {
							first = k
							break
						}
					}
					got := specialMask(binary.LittleEndian.Uint64(w[:]))
					if first == 8 && got != 0 || first < 8 && bits.TrailingZeros64(got) != 8*first+7 {
						t.Fatalf("bytes % x: mask %#x, want the lowest bit at byte %d", w, got, first)
					}
					if got&^0x8080808080808080 != 0 {
						t.Fatalf("bytes % x: mask %#x has bits outside the high bits", w, got)
					}
				}
			}
		}
	}
}

// FuzzScanStringFlags: scanString accepts exactly the string tokens
// encoding/json accepts, says strEscaped exactly when the token has a
// backslash, and never leaves strNonASCII unset for a token with a byte
// >= 0x80 (the readers then skip the UTF-8 check).
func FuzzScanStringFlags(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"abcdefghijklmnop"`, `"é"`, `"abcdefg\u00e9"`, "\"abcdefgh\xff\"", `"a\"b"`, `"\\"`, "\"abc\x01\"", `"abc`, "\"0123456\"\xc3\xa9", `"x"é`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		end, flags, ok := scanString(b, 0)
		tokenEnd := end
		if !ok {
			tokenEnd = len(b)
		}
		if want := json.Valid(b[:tokenEnd]); ok != want || ok && !json.Valid(b[:end]) {
			t.Fatalf("%q: scanString ok %v (end %d), encoding/json says %v", b, ok, end, want)
		}
		if !ok {
			return
		}
		tok := b[1 : end-1]
		if esc := bytes.IndexByte(tok, '\\') >= 0; esc != (flags&strEscaped != 0) {
			t.Fatalf("%q: escaped %v, flags %b", b, esc, flags)
		}
		for _, c := range tok {
			if c >= 0x80 && flags&strNonASCII == 0 {
				t.Fatalf("%q: byte %#x, yet strNonASCII is not set", b, c)
			}
		}
	})
}
