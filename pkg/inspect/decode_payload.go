package inspect

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Payload encodings: what a message body is (record field
// payload_encoding). Layers are written outermost first, separated by
// '/': "base64/gzip/json" is base64 text that decodes to gzip data that
// decompresses to JSON.
const (
	EncodingJSON          = "json"
	EncodingNDJSON        = "ndjson"         // several JSON values, one a line
	EncodingMalformedJSON = "malformed-json" // starts like JSON and does not parse (cut short, edited by hand)
	EncodingXML           = "xml"
	EncodingMalformedXML  = "malformed-xml"
	EncodingHTML          = "html" // an HTML page (a proxy's error page, say)
	EncodingCSV           = "csv"  // delimited text: comma, semicolon, tab or pipe separated fields
	EncodingText          = "text" // any other UTF-8 text
	EncodingEmpty         = "empty"
	EncodingBinary        = "binary"   // bytes that are not text
	EncodingAvro          = "avro"     // an Avro object container ("Obj\x01"), or binary declared Avro
	EncodingProtobuf      = "protobuf" // binary that parses as Protobuf wire format (or is declared Protobuf)
	EncodingBase64        = "base64"   // a layer: base64 text
	EncodingGzip          = "gzip"     // a layer: gzip data
	EncodingZlib          = "zlib"     // a layer: zlib (deflate) data, as kombu's "zlib" compression writes
)

// PayloadInfo is what DetectPayload found out about a body.
type PayloadInfo struct {
	// Encoding is the payload_encoding (e.g. "json", "base64/gzip/json").
	Encoding string `json:"encoding"`
	// Description says what the body is, in words, for --explain.
	Description string `json:"description"`
	// Declared is the content type a message attribute declares ("" when
	// none does).
	Declared string `json:"declared_content_type,omitempty"`
	// Inner is the decoded JSON under base64/gzip/zlib layers (nil when
	// there are no layers or they do not end in JSON).
	Inner any `json:"-"`
	// xmlFailure are the texts of XML elements and attributes named as
	// failure context (<faultstring>, <error>, error="…").
	xmlFailure []xmlText
}

// xmlText is the text of one failure-named XML element or attribute.
type xmlText struct{ name, kind, text string }

// Innermost returns the last layer of an encoding: "json" for
// "base64/gzip/json".
func Innermost(enc string) string {
	if i := strings.LastIndexByte(enc, '/'); i >= 0 {
		return enc[i+1:]
	}
	return enc
}

// maxInflate caps how much a compressed body is inflated to look at it.
const maxInflate = 8 << 20

// DetectPayload says what rec's body is. parsed is the parsed body when
// it is JSON (as Decode returns it), so a JSON body costs nothing more.
func DetectPayload(rec *record.Record, parsed any) PayloadInfo {
	declared := declaredContentType(rec.Attributes)
	if parsed != nil {
		return PayloadInfo{Encoding: EncodingJSON, Description: "JSON", Declared: declared}
	}
	// Decode already tried the body as JSON: do not parse it again to
	// learn that it is broken (DescribePayload says how, for --explain).
	p := detectText(rec.Body, declared, depthParsed)
	p.Declared = declared
	if bin := binaryAttrNames(rec.Attributes); bin != "" {
		p.Description += "; the message also carries Binary attributes (" + bin + ")"
	}
	return p
}

// depthParsed is detectText's depth for a body Decode already failed to
// parse as JSON (below 0: the layers are counted from 0 after it).
const depthParsed = -1

// detectText looks at a body as text.
func detectText(s, declared string, depth int) PayloadInfo {
	if depth < 0 {
		if ts := strings.TrimSpace(s); ts == "" || !jsonStart(ts) {
			depth = 0
		}
	}
	t := strings.TrimSpace(strings.TrimPrefix(s, "\ufeff"))
	switch {
	case t == "":
		return PayloadInfo{Encoding: EncodingEmpty, Description: "an empty body"}
	case !utf8.ValidString(s):
		b := []byte(s)
		if depth < 4 && (len(b) >= 3 && b[0] == 0x1f && b[1] == 0x8b || isZlib(b)) {
			return detectBytes(b, declared, depth+1)
		}
		return detectBinary(b, declared, "bytes that are not UTF-8 text")
	case jsonStart(t) && depth == depthParsed && len(t) > 0 && t == strings.TrimSpace(s):
		if n := ndjsonLines(t); n > 1 {
			return PayloadInfo{Encoding: EncodingNDJSON, Description: fmt.Sprintf("newline-delimited JSON (%d values)", n)}
		}
		return PayloadInfo{Encoding: EncodingMalformedJSON, Description: "text that starts like JSON and does not parse"}
	case jsonStart(t):
		if v, ok := parseText(t); ok {
			return PayloadInfo{Encoding: EncodingJSON, Description: "JSON", Inner: v}
		}
		// Not JSON: encoding/json says why.
		var v any
		err := json.Unmarshal([]byte(t), &v)
		if n := ndjsonLines(t); n > 1 {
			return PayloadInfo{Encoding: EncodingNDJSON, Description: fmt.Sprintf("newline-delimited JSON (%d values)", n)}
		}
		return PayloadInfo{Encoding: EncodingMalformedJSON, Description: malformedJSONWhy(t, err)}
	case t[0] == '<' && isHTML(t):
		return PayloadInfo{Encoding: EncodingHTML, Description: "an HTML page" + htmlTitle(t)}
	case t[0] == '<':
		return detectXML(t)
	}
	if depth < 3 {
		if b, ok := base64Body(t); ok {
			inner := detectBytes(b, declared, depth+1)
			if inner.Encoding != EncodingBinary || strongBase64(t) {
				inner.Encoding = EncodingBase64 + "/" + inner.Encoding
				inner.Description = fmt.Sprintf("base64 text (%d bytes decoded) of %s", len(b), inner.Description)
				return inner
			}
		}
	}
	if n, delim := delimited(t); n > 0 {
		return PayloadInfo{Encoding: EncodingCSV, Description: fmt.Sprintf("delimited text (%d %s-separated fields)", n, delimName(delim))}
	}
	return PayloadInfo{Encoding: EncodingText, Description: "plain text"}
}

// detectBytes looks at decoded or inflated bytes.
func detectBytes(b []byte, declared string, depth int) PayloadInfo {
	switch {
	case len(b) >= 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8:
		return inflated(b, EncodingGzip, "gzip data", declared, depth)
	case isZlib(b):
		return inflated(b, EncodingZlib, "zlib (deflate) data", declared, depth)
	case utf8.Valid(b) && printable(b):
		return detectText(string(b), declared, depth)
	}
	return detectBinary(b, declared, "bytes that are not text")
}

// Decompressors are reused: each holds a 32 KiB window that a new one
// allocates and clears.
var (
	gzipReaders sync.Pool // *gzip.Reader
	zlibReaders sync.Pool // zlib's io.ReadCloser, a zlib.Resetter
)

// openInflater returns a reader of the layer's decompressed b and a
// function that releases it.
func openInflater(layer string, b []byte) (io.Reader, func(), error) {
	src := bytes.NewReader(b)
	if layer == EncodingGzip {
		if zr, ok := gzipReaders.Get().(*gzip.Reader); ok {
			if err := zr.Reset(src); err != nil {
				return nil, nil, err
			}
			return zr, func() { zr.Close(); gzipReaders.Put(zr) }, nil
		}
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { zr.Close(); gzipReaders.Put(zr) }, nil
	}
	if zr, ok := zlibReaders.Get().(io.ReadCloser); ok {
		if err := zr.(zlib.Resetter).Reset(src, nil); err != nil {
			return nil, nil, err
		}
		return zr, func() { zr.Close(); zlibReaders.Put(zr) }, nil
	}
	zr, err := zlib.NewReader(src)
	if err != nil {
		return nil, nil, err
	}
	return zr, func() { zr.Close(); zlibReaders.Put(zr) }, nil
}

func inflated(b []byte, layer, what, declared string, depth int) PayloadInfo {
	r, release, err := openInflater(layer, b)
	if err != nil {
		return PayloadInfo{Encoding: layer, Description: what + " that does not decompress (" + err.Error() + ")"}
	}
	defer release()
	out, err := io.ReadAll(io.LimitReader(r, maxInflate+1))
	switch {
	case len(out) > maxInflate:
		return PayloadInfo{Encoding: layer, Description: fmt.Sprintf("%s inflating to over %d MiB (not inspected)", what, maxInflate>>20)}
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return PayloadInfo{Encoding: layer, Description: what + " that does not decompress (" + err.Error() + ")"}
	case err != nil:
		return PayloadInfo{Encoding: layer, Description: what + " cut short (the compressed stream ends early)"}
	}
	var inner PayloadInfo
	if depth < 4 {
		inner = detectBytes(out, declared, depth+1)
	} else {
		inner = PayloadInfo{Encoding: EncodingBinary, Description: "nested too deep to inspect"}
	}
	inner.Encoding = layer + "/" + inner.Encoding
	inner.Description = fmt.Sprintf("%s (%d bytes inflated) of %s", what, len(out), inner.Description)
	return inner
}

// detectBinary names binary data: declared by a content-type attribute,
// an Avro container, Protobuf wire format, or just bytes.
func detectBinary(b []byte, declared, what string) PayloadInfo {
	d := strings.ToLower(declared)
	switch {
	case bytes.HasPrefix(b, []byte("Obj\x01")):
		return PayloadInfo{Encoding: EncodingAvro, Description: "an Avro object container file (magic Obj\\x01)"}
	case strings.Contains(d, "avro"):
		return PayloadInfo{Encoding: EncodingAvro, Description: fmt.Sprintf("binary Avro (declared %q)", declared)}
	case strings.Contains(d, "protobuf") || strings.Contains(d, "proto"):
		return PayloadInfo{Encoding: EncodingProtobuf, Description: fmt.Sprintf("binary Protobuf (declared %q)", declared)}
	}
	if len(b) > 5 && b[0] == 0 {
		id := binary.BigEndian.Uint32(b[1:5])
		return PayloadInfo{Encoding: EncodingBinary, Description: fmt.Sprintf("%s in Confluent Schema Registry framing (schema id %d; Avro, Protobuf or JSON Schema)", what, id)}
	}
	if n := protobufFields(b); n >= 2 {
		return PayloadInfo{Encoding: EncodingProtobuf, Description: fmt.Sprintf("%s that parse as Protobuf wire format (%d fields)", what, n)}
	}
	return PayloadInfo{Encoding: EncodingBinary, Description: fmt.Sprintf("%s (%d bytes)", what, len(b))}
}

// jsonStart reports whether t (trimmed, not empty) starts like a JSON
// object or array: "{", or "[" followed by what a JSON array holds. A log
// line such as "[2026-03-01 10:00:00] ERROR …" does not.
func jsonStart(t string) bool {
	if t[0] == '{' {
		return true
	}
	if t[0] != '[' {
		return false
	}
	r := strings.TrimLeft(t[1:], " \t\r\n")
	if r == "" {
		return true // "[" alone: an array cut short
	}
	switch c := r[0]; {
	case c == '{' || c == '[' || c == '"' || c == ']':
		return true
	case c == '-' || c >= '0' && c <= '9':
		i := 1
		for i < len(r) && (r[i] >= '0' && r[i] <= '9' || r[i] == '.' || r[i] == 'e' || r[i] == 'E' || r[i] == '+' || r[i] == '-') {
			i++
		}
		rest := strings.TrimLeft(r[i:], " \t\r\n")
		return rest == "" || rest[0] == ',' || rest[0] == ']'
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if strings.HasPrefix(r, lit) {
				rest := strings.TrimLeft(r[len(lit):], " \t\r\n")
				return rest == "" || rest[0] == ',' || rest[0] == ']'
			}
		}
	}
	return false
}

func isHTML(t string) bool {
	h := strings.ToLower(t[:min(len(t), 15)])
	return strings.HasPrefix(h, "<!doctype html") || strings.HasPrefix(h, "<html")
}

// htmlTitle returns " (title …)" from an HTML page's <title>, or "".
func htmlTitle(t string) string {
	l := strings.ToLower(t)
	i := strings.Index(l, "<title>")
	if i < 0 {
		return ""
	}
	j := strings.Index(l[i:], "</title>")
	if j < 0 || j > 200 {
		return ""
	}
	return " (title " + strings.TrimSpace(t[i+7:i+j]) + ")"
}

// ndjsonLines returns how many lines of t are JSON values when every
// non-empty line is one (0 otherwise).
func ndjsonLines(t string) int {
	if !strings.Contains(t, "\n") {
		return 0
	}
	n := 0
	for _, l := range strings.Split(t, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if !json.Valid([]byte(l)) {
			return 0
		}
		n++
	}
	return n
}

// LooksLikeBrokenJSON reports whether body starts like JSON and does not
// parse.
func LooksLikeBrokenJSON(body string) bool {
	t := strings.TrimSpace(body)
	return t != "" && jsonStart(t) && !json.Valid([]byte(t)) && ndjsonLines(t) < 2
}

func malformedJSONWhy(t string, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if strings.Contains(se.Error(), "unexpected end of JSON input") {
			return fmt.Sprintf("JSON cut short (%d bytes, ends before the value closes)", len(t))
		}
		return fmt.Sprintf("text that starts like JSON and does not parse (%s at byte %d)", se.Error(), se.Offset)
	}
	return "text that starts like JSON and does not parse (" + err.Error() + ")"
}

func detectXML(t string) PayloadInfo {
	dec := xml.NewDecoder(strings.NewReader(t))
	dec.Strict = true
	root, depth, roots := "", 0, 0
	var buf [64]byte
	var fails []xmlText
	// stack of element names and their failure kinds ("" when not one)
	type elem struct{ name, kind string }
	var stack []elem
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return PayloadInfo{Encoding: EncodingMalformedXML, Description: "text that starts like XML and is not well-formed (" + err.Error() + ")", xmlFailure: fails}
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if root == "" {
					root = e.Name.Local
				}
			}
			depth++
			kind := genericKind(buf[:], e.Name.Local)
			if kind == record.EvidenceStatus {
				kind = ""
			}
			stack = append(stack, elem{e.Name.Local, kind})
			for _, a := range e.Attr {
				if k := genericKind(buf[:], a.Name.Local); k != "" && k != record.EvidenceStatus && len(fails) < 8 {
					fails = append(fails, xmlText{e.Name.Local + "@" + a.Name.Local, k, a.Value})
				}
			}
			text.Reset()
		case xml.CharData:
			if text.Len() < maxEvidence {
				text.Write(e)
			}
		case xml.EndElement:
			depth--
			if n := len(stack); n > 0 {
				// the element itself, or its parent (SOAP 1.2 <Reason><Text>)
				name, kind := stack[n-1].name, stack[n-1].kind
				if kind == "" && n > 1 {
					name, kind = stack[n-2].name+"/"+name, stack[n-2].kind
				}
				if txt := strings.TrimSpace(text.String()); kind != "" && txt != "" && len(fails) < 8 {
					fails = append(fails, xmlText{name, kind, txt})
				}
				stack = stack[:n-1]
			}
			text.Reset()
		}
	}
	switch {
	case roots == 0:
		return PayloadInfo{Encoding: EncodingMalformedXML, Description: "text that starts like XML and has no element"}
	case depth != 0:
		return PayloadInfo{Encoding: EncodingMalformedXML, Description: "XML cut short (an element is not closed)", xmlFailure: fails}
	}
	return PayloadInfo{Encoding: EncodingXML, Description: fmt.Sprintf("an XML document (root element <%s>)", root), xmlFailure: fails}
}

// xmlEvidence records the failure-named elements of an XML body.
func xmlEvidence(d *Decoding) {
	for _, x := range d.Payload.xmlFailure {
		switch x.kind {
		case "attempts":
			d.Attempts(x.text)
		case "failedat":
			d.FailedAt(x.text)
		case "consumer":
			d.ConsumerVersion(x.text)
		case record.EvidenceCode, record.EvidenceClass:
			d.Evidence("body<"+x.name+">", x.kind, x.text)
		default:
			d.TextEvidence("body<"+x.name+">", x.kind, x.text)
		}
	}
}

// base64Body decodes t when it is base64 text (standard or URL-safe
// alphabet, padded or not, MIME line breaks allowed). Hex strings and
// short words are not taken for base64.
func base64Body(t string) ([]byte, bool) {
	if len(t) < 8 {
		return nil, false
	}
	hexOnly, url, std := true, false, false
	pad := 0
	clean := t
	if strings.ContainsAny(t, "\r\n") {
		clean = strings.NewReplacer("\r", "", "\n", "").Replace(t)
	}
	for i := 0; i < len(clean); i++ {
		c := clean[i]
		switch {
		case c == '=':
			pad++
			continue
		case pad > 0:
			return nil, false // '=' only at the end
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		case c >= 'g' && c <= 'z', c >= 'G' && c <= 'Z':
			hexOnly = false
		case c == '+' || c == '/':
			std = true
			hexOnly = false
		case c == '-' || c == '_':
			url = true
			hexOnly = false
		default:
			return nil, false
		}
	}
	if hexOnly || pad > 2 || (url && std) {
		return nil, false
	}
	enc := base64.StdEncoding
	if url {
		enc = base64.URLEncoding
	}
	if pad == 0 && len(clean)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	b, err := enc.DecodeString(clean)
	if err != nil || len(b) == 0 {
		return nil, false
	}
	return b, true
}

// strongBase64 reports whether t looks like base64 of binary data even
// though what it decodes to is not recognised: long enough, padded to
// whole quanta, and mixing letter cases and digits the way encoded bytes
// do (an identifier such as "OrderCreatedHandlerFailed" does not).
func strongBase64(t string) bool {
	if len(t) < 16 || len(t)%4 != 0 {
		return false
	}
	var upper, lower, digit int
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= 'a' && c <= 'z':
			lower++
		case c >= '0' && c <= '9', c == '+', c == '/':
			digit++
		}
	}
	return upper > 0 && lower > 0 && digit > 0
}

func isZlib(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

// printable reports whether b is text: no control characters other than
// tab, CR and LF.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// delimited reports whether t is delimited text: every line (of the first
// ten) splits into the same number (≥ 2, or ≥ 3 on a single line) of
// short fields on one of , ; TAB |. It returns the field count and the
// delimiter.
func delimited(t string) (int, byte) {
	lines := strings.SplitN(t, "\n", 11)
	if len(lines) > 10 {
		lines = lines[:10]
	}
	for _, delim := range [...]byte{',', ';', '\t', '|'} {
		fields := -1
		ok := true
		for _, l := range lines {
			l = strings.TrimRight(l, "\r")
			if strings.TrimSpace(l) == "" {
				continue
			}
			n := strings.Count(l, string(delim)) + 1
			if fields >= 0 && n != fields || n < 2 {
				ok = false
				break
			}
			fields = n
			for _, f := range strings.Split(l, string(delim)) {
				if len(f) > 200 || strings.Count(strings.TrimSpace(f), " ") > 3 {
					ok = false
					break
				}
			}
			if !ok {
				break
			}
		}
		if ok && fields >= 2 && (len(lines) > 1 || fields >= 3) {
			return fields, delim
		}
	}
	return 0, 0
}

func delimName(d byte) string {
	switch d {
	case ',':
		return "comma"
	case ';':
		return "semicolon"
	case '\t':
		return "tab"
	}
	return "pipe"
}

// protobufFields parses b as Protobuf wire format and returns the number
// of top-level fields, or 0 when b is not (every byte must be consumed,
// field numbers and wire types valid).
func protobufFields(b []byte) int {
	n := 0
	for len(b) > 0 {
		key, k := binary.Uvarint(b)
		if k <= 0 {
			return 0
		}
		b = b[k:]
		field, wire := key>>3, key&7
		if field == 0 || field > 1<<16 {
			return 0
		}
		switch wire {
		case 0:
			_, k := binary.Uvarint(b)
			if k <= 0 {
				return 0
			}
			b = b[k:]
		case 1:
			if len(b) < 8 {
				return 0
			}
			b = b[8:]
		case 2:
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return 0
			}
			b = b[k+int(l):]
		case 5:
			if len(b) < 4 {
				return 0
			}
			b = b[4:]
		default:
			return 0
		}
		n++
	}
	return n
}

// declaredContentType returns the content type a String message attribute
// declares (contentType, Content-Type, content_type, …), or "".
func declaredContentType(attrs map[string]record.Attribute) string {
	var buf [64]byte
	best, val := "", ""
	for name, a := range attrs { // no sort: the smallest matching name wins
		if a.IsBinary() || len(name) > 40 || len(name) < 11 {
			continue
		}
		if n := failureKeyNorm(buf[:], name); !bytes.HasSuffix(n, []byte("contenttype")) {
			continue
		}
		if best == "" || name < best {
			best, val = name, strings.TrimSpace(a.Value)
		}
	}
	return val
}

func binaryAttrNames(attrs map[string]record.Attribute) string {
	any := false
	for _, a := range attrs {
		if a.IsBinary() {
			any = true
			break
		}
	}
	if !any {
		return ""
	}
	var names []string
	for _, name := range sortedKeys(attrs) {
		if attrs[name].IsBinary() {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// DescribePayload says what rec's body is, for --explain: its encoding
// (detected again when the record does not carry it) and a description.
func DescribePayload(rec *record.Record) PayloadInfo {
	parsed, _ := parseJSON(rec.Body)
	if parsed != nil {
		return DetectPayload(rec, parsed)
	}
	declared := declaredContentType(rec.Attributes)
	p := detectText(rec.Body, declared, 0) // parses again to say how it is broken
	p.Declared = declared
	if bin := binaryAttrNames(rec.Attributes); bin != "" {
		p.Description += "; the message also carries Binary attributes (" + bin + ")"
	}
	return p
}
