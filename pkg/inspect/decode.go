// Package inspect reads messages: scanning a queue without consuming it,
// decoding envelopes and failure context, redaction, expressions over the
// message record, grouping and fingerprints.
package inspect

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// A Format is one known dead-letter message format: how AWS services and
// messaging frameworks write failed messages into an SQS queue. Each format
// lives in its own decode_<name>.go file and registers itself; Decode tries
// them in Priority order and the first whose Decode returns true claims the
// message. Adding a format is adding a file.
type Format struct {
	// Name is what failure.format says (e.g. "lambda-async").
	Name string
	// Title describes the format for --explain and docs.
	Title string
	// Priority orders the formats: lower runs first. Formats recognised by
	// attributes that only that platform writes come before formats
	// recognised by body shape.
	Priority int
	// Decode recognises the message and fills d (envelope, payload,
	// evidence). It returns false, leaving d untouched, when the message
	// is not in this format.
	Decode func(d *Decoding) bool
}

var formats []Format

// RegisterFormat adds a format decoder (from an init function).
func RegisterFormat(f Format) {
	formats = append(formats, f)
	slices.SortStableFunc(formats, func(a, b Format) int { return a.Priority - b.Priority })
}

// Formats returns the registered formats in the order Decode tries them.
func Formats() []Format { return slices.Clone(formats) }

// FormatTitle returns the description of the named format ("" if unknown).
func FormatTitle(name string) string {
	for _, f := range formats {
		if f.Name == name {
			return f.Title
		}
	}
	if name == FormatGeneric {
		return "generic failure keys in attributes or top-level body fields"
	}
	if name == FormatLogs {
		return "the consumer's CloudWatch Logs: log lines that mention the message id (--logs)"
	}
	return ""
}

// FormatGeneric is failure.format when no known format claimed the message
// but generic failure keys (error, reason, dlq_*, ...) were found.
const FormatGeneric = "generic"

// Decoding is one message being decoded: the inputs (record, parsed body)
// and what format decoders found.
type Decoding struct {
	Rec *record.Record
	// Parsed is the parsed body (nil when it is not JSON); Obj the body when
	// it is a JSON object.
	Parsed any
	Obj    map[string]any
	// Payload is what the body is (its payload_encoding). When the body is
	// base64, gzip or zlib around JSON, Parsed and Obj are that inner JSON
	// (Layered is true), so formats read what the body decodes to.
	Payload PayloadInfo
	Layered bool

	env     *record.Envelope
	payload any
	wrapped bool // payload is set (the body wraps the original event)
	fail    record.Failure
	// bodyHandled: the format interpreted the body's top-level fields, so
	// they are not scanned for generic failure keys.
	bodyHandled bool
	// used are the attributes the format read (not scanned again for
	// generic failure keys).
	used map[string]bool
	// attrNames caches the attribute names in sorted order (sortedAttrs),
	// in attrBuf when they fit (SQS allows 10 attributes).
	attrNames []string
	attrBuf   [10]string
}

// Use marks attributes as read by the format.
func (d *Decoding) Use(names ...string) {
	if d.used == nil {
		d.used = make(map[string]bool, len(names))
	}
	for _, n := range names {
		d.used[n] = true
	}
}

// Attr returns the string value of attribute name (exact name; binary
// attributes are skipped).
func (d *Decoding) Attr(name string) (string, bool) {
	a, ok := d.Rec.Attributes[name]
	if !ok || a.IsBinary() {
		return "", false
	}
	d.Use(name)
	return a.Value, true
}

// HasAttrPrefix reports whether some attribute name starts with prefix
// (case-insensitively).
func (d *Decoding) HasAttrPrefix(prefix string) bool {
	for name := range d.Rec.Attributes {
		if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}

// SetEnvelope sets the decoded envelope.
func (d *Decoding) SetEnvelope(e *record.Envelope) { d.env = e }

// SetPayload records the original event the body wraps, and decodes the
// envelope from it when none was set (see EnvelopeOf).
func (d *Decoding) SetPayload(p any) {
	d.payload, d.wrapped = p, true
	if d.env == nil {
		d.env = EnvelopeOf(p)
	}
}

// BodyHandled says the format interpreted the body's top-level fields.
func (d *Decoding) BodyHandled() { d.bodyHandled = true }

// Evidence records a failure text found at field. Texts are trimmed and
// capped; the first type, message, class and code also fill failure.type,
// failure.reason and failure.error_class.
func (d *Decoding) Evidence(field, kind, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if len(text) > maxEvidence {
		text = truncUTF8(text, maxEvidence)
	}
	for _, e := range d.fail.Evidence {
		if e.Kind == kind && e.Text == text {
			return
		}
	}
	d.fail.Evidence = append(d.fail.Evidence, record.Evidence{Field: field, Kind: kind, Text: text})
	f := &d.fail
	switch kind {
	case record.EvidenceType:
		if f.Type == "" {
			f.Type = text
		}
	case record.EvidenceCode:
		if f.Type == "" {
			f.Type = text
		}
	case record.EvidenceMessage:
		if f.Reason == "" {
			f.Reason = text
		}
	case record.EvidenceClass:
		if f.ErrorClass == "" {
			f.ErrorClass = text
		}
	}
}

// StackEvidence records what a stack trace says: its head exception, the
// causes it chains ("Caused by: …" in Java, "---> X: …" inner exceptions
// in .NET, chained Python tracebacks, PHP's "Next", anyhow's "Caused
// by:") and the root cause (kind root_cause). Frames are not evidence:
// they name code, not failures.
func (d *Decoding) StackEvidence(field, trace string) { d.TextEvidence(field, "stack", trace) }

// Attempts records the attempt count when it parses and none is known.
func (d *Decoding) Attempts(s string) {
	if d.fail.AttemptCount != 0 {
		return
	}
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
		d.fail.AttemptCount = n
	}
}

// FailedAt records when the failure happened, when none is known.
func (d *Decoding) FailedAt(s string) {
	if d.fail.FailedAt == "" {
		d.fail.FailedAt = strings.TrimSpace(s)
	}
}

// ConsumerVersion records the failing consumer's version.
func (d *Decoding) ConsumerVersion(s string) {
	if d.fail.ConsumerVersion == "" {
		d.fail.ConsumerVersion = strings.TrimSpace(s)
	}
}

const maxEvidence = 1000

func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

// Decode fills rec.Envelope, rec.Failure, rec.Payload and rec.Redrive from
// the body and attributes. It returns the parsed body (nil when the body is
// not JSON) so callers need not parse it again.
//
// The registered formats are tried in order; the first that recognises the
// message decodes its envelope, original payload and failure context.
// Then generic failure keys are read from the attributes (and from the
// body's top-level fields unless the format interpreted them). A message
// no format recognises and that carries no failure key — a plain message
// dead-lettered by an SQS redrive policy — has no failure: SQS records no
// reason.
func Decode(rec *record.Record) any {
	parsed, _ := parseJSON(rec.Body)
	return decodeParsed(rec, parsed)
}

// decodeParsed is Decode with the body already parsed (nil: not JSON).
func decodeParsed(rec *record.Record, parsed any) any {
	d := decodings.Get().(*Decoding)
	defer func() {
		*d = Decoding{} // keeps nothing of this record
		decodings.Put(d)
	}()
	d.Rec, d.Parsed = rec, parsed
	d.Payload = DetectPayload(rec, parsed)
	if parsed == nil && d.Payload.Inner != nil {
		d.Parsed, d.Layered = d.Payload.Inner, true
	}
	d.Obj, _ = d.Parsed.(map[string]any)
	prev := rec.Failure
	rec.Envelope, rec.Failure, rec.Redrive, rec.Payload = nil, nil, nil, nil
	rec.PayloadEncoding = d.Payload.Encoding
	format := ""
	for _, f := range formats {
		if f.Decode(d) {
			format = f.Name
			break
		}
		d.used = nil // detection reads do not count
	}
	if format == "" && d.Obj != nil {
		d.env = EnvelopeOf(d.Obj)
	}
	if d.Layered && !d.wrapped {
		// The body is encoded JSON: what it decodes to is the payload.
		d.SetPayload(d.Parsed)
	}
	genericAttrs(d)
	if d.Obj != nil && !d.bodyHandled {
		genericBody(d)
	}
	if len(d.Payload.xmlFailure) > 0 {
		xmlEvidence(d)
	}
	if !d.fail.HasContext() {
		scanValues(d)
		if d.Parsed == nil && len(d.Payload.xmlFailure) == 0 && looksLikeFailureText(rec.Body) {
			// A text body that reads like an exception or a stack trace
			// (a log line, an error report): the message's own data, so
			// a hint only.
			d.textEvidence("body", record.EvidenceMessage, rec.Body, true)
		}
	}
	if format == "" && d.fail.HasContext() {
		format = FormatGeneric
	}
	rec.Envelope = d.env
	if d.wrapped {
		rec.Payload = d.payload
	}
	if format != "" {
		f := d.fail
		unwrapReason(&f)
		f.Format = format
		rec.Failure = &f
	}
	keepExternalFailure(rec, prev)
	DecodeMarker(rec)
	return parsed
}

// decodings are reused: a Decoding is a few hundred bytes, every record
// needs one, and nothing keeps it after decodeParsed (what it found is
// copied into the record).
var decodings = sync.Pool{New: func() any { return new(Decoding) }}

// DecodeMarker decodes only the dlqctl redrive marker (rec.Redrive): what a
// redrive without a selection needs (routing and copies read the system
// attributes; loop and return detection read the marker). It returns no
// parsed body.
func DecodeMarker(rec *record.Record) any {
	rec.Redrive = nil
	if a, ok := rec.Attributes[record.MarkerAttribute]; ok {
		var m record.Marker
		if json.Unmarshal([]byte(a.Value), &m) == nil {
			rec.Redrive = &m
		}
	}
	return nil
}

// PayloadOf returns the original event of a decoded record: rec.Payload
// when the body wraps it, else the parsed body.
func PayloadOf(rec *record.Record, parsed any) any {
	if rec.Payload != nil {
		return rec.Payload
	}
	return parsed
}

func parseJSON(s string) (any, bool) {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	// parseValue reads without writing or keeping the bytes: no copy of
	// the body is needed.
	return parseValue(unsafe.Slice(unsafe.StringData(t), len(t)))
}

// parseText parses s, one JSON value of any type, as json.Unmarshal into an
// `any` would (see parseValue), without copying s.
func parseText(s string) (any, bool) {
	return parseValue(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// looksLikeJSON reports whether s starts like a JSON object or array.
func looksLikeJSON(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && (t[0] == '{' || t[0] == '[')
}

// PayloadUnparseable reports whether the decoded original payload is text
// that looks like JSON but does not parse (an SNS Message or NServiceBus
// Body cut short, say): body evidence that no consumer can read it.
func PayloadUnparseable(rec *record.Record) bool {
	s, ok := rec.Payload.(string)
	return ok && looksLikeJSON(s)
}

// str returns the first string-ish value found under any of keys.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			if s := scalarText(v); s != "" {
				return s
			}
		}
	}
	return ""
}

// scalarText renders a JSON scalar as text ("" for objects, arrays, null).
func scalarText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	}
	return ""
}

// parseMaybeJSON parses s when it holds a JSON object or array (a value
// embedded as a string); otherwise it returns s.
func parseMaybeJSON(s string) any {
	if looksLikeJSON(s) {
		if v, ok := parseJSON(s); ok {
			return v
		}
	}
	return s
}
