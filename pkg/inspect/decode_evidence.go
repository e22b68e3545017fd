package inspect

import (
	"bytes"
	"slices"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Failure evidence beyond the list of generic keys: keys whose words name
// an error, exception, fault, failure, reason, traceback, stack or cause
// (any case and separators: "rbs2-error-details", "lastFailureMessage",
// "exc_traceback"), in nested objects too, and values that read like an
// exception, a traceback or a stack trace wherever they are.

// failureNouns are the words that make a key a failure key.
var failureNouns = map[string]bool{"error": true, "errors": true, "err": true, "exception": true, "exceptions": true,
	"exc": true, "fault": true, "faults": true, "failure": true, "failures": true, "reason": true, "reasons": true,
	"traceback": true, "backtrace": true, "stacktrace": true, "stack": true, "cause": true, "causes": true}

// notEvidenceWords make a failure-ish key something else: a count, a
// setting, an id, a time ("errorCount", "maxExceptions", "errorQueue",
// "failureThreshold", "errorId", "failedAt").
var notEvidenceWords = map[string]bool{"count": true, "counter": true, "counts": true, "threshold": true, "limit": true,
	"max": true, "min": true, "total": true, "rate": true, "ratio": true, "percent": true, "enabled": true, "disabled": true,
	"flag": true, "policy": true, "strategy": true, "handler": true, "handling": true, "queue": true, "topic": true,
	"url": true, "uri": true, "endpoint": true, "id": true, "ids": true, "at": true, "time": true, "timestamp": true,
	"date": true, "ts": true, "on": true, "if": true, "retry": true, "retries": true, "ignore": true, "ignored": true,
	"allowed": true, "mode": true, "level": true, "channel": true, "exchange": true, "routing": true, "key": true,
	"injection": true, "rate_limit": true, "budget": true, "window": true, "config": true, "settings": true}

// keyWords splits a key into lower-case words: camelCase, snake_case,
// kebab-case, dots, colons.
func keyWords(k string) []string {
	return tokens(lowerWords(k), nil)
}

// lowerWords lower-cases k and puts a space between words.
func lowerWords(k string) string {
	var b strings.Builder
	b.Grow(len(k) + 4)
	var prev byte
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'A' && c <= 'Z':
			lowerNext := i+1 < len(k) && k[i+1] >= 'a' && k[i+1] <= 'z'
			if prev >= 'a' && prev <= 'z' || (lowerNext && prev >= 'A' && prev <= 'Z') {
				b.WriteByte(' ')
			}
			b.WriteByte(c + ('a' - 'A'))
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteByte(c)
		default:
			b.WriteByte(' ')
		}
		prev = c
	}
	return b.String()
}

// tokens splits space-separated text into words of letters and digits.
func tokens(c string, out []string) []string {
	start := -1
	for i := 0; i <= len(c); i++ {
		alnum := i < len(c) && (c[i] >= 'a' && c[i] <= 'z' || c[i] >= '0' && c[i] <= '9')
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			out = append(out, c[start:i])
			start = -1
		}
	}
	return out
}

// mayNameFailure is a quick test on a normalised key (lower case, no
// separators) before splitting it into words.
func mayNameFailure(n []byte) bool {
	for i := 0; i < len(n); i++ {
		r := n[i:]
		switch n[i] {
		case 'e':
			if bytes.HasPrefix(r, []byte("err")) || bytes.HasPrefix(r, []byte("exc")) {
				return true
			}
		case 'f':
			if bytes.HasPrefix(r, []byte("fault")) || bytes.HasPrefix(r, []byte("fail")) {
				return true
			}
		case 'r':
			if bytes.HasPrefix(r, []byte("reason")) {
				return true
			}
		case 't':
			if bytes.HasPrefix(r, []byte("trace")) {
				return true
			}
		case 's':
			if bytes.HasPrefix(r, []byte("stack")) {
				return true
			}
		case 'c':
			if bytes.HasPrefix(r, []byte("cause")) {
				return true
			}
		}
	}
	return false
}

// wordKind returns the evidence kind of a key by its words ("" when the
// key names no failure context).
func wordKind(k string) string {
	words := keyWords(k)
	noun := false
	for _, w := range words {
		if notEvidenceWords[w] {
			return ""
		}
		if failureNouns[w] {
			noun = true
		}
	}
	if !noun {
		return ""
	}
	kind := record.EvidenceMessage
	for _, w := range words {
		switch w {
		case "traceback", "backtrace", "stacktrace", "stack", "trace":
			return "stack"
		case "type", "class", "name", "kind", "fqcn":
			kind = record.EvidenceType
		case "code", "errno":
			if kind == record.EvidenceMessage {
				kind = record.EvidenceCode
			}
		case "cause", "causes":
			if kind == record.EvidenceMessage {
				kind = record.EvidenceCause
			}
		}
	}
	return kind
}

// payloadKeys hold the message's own data: failure-looking keys and
// values inside them describe the business event (a refund's "reason"),
// not why the message failed, so they are not searched for keys and only
// give weak evidence by value.
var payloadKeys = map[string]bool{"payload": true, "data": true, "args": true,
	"arguments": true, "kwargs": true, "body": true, "message": true, "msg": true, "record": true, "records": true,
	"items": true, "event": true, "events": true, "request": true, "requestpayload": true, "originalpayload": true,
	"original": true, "input": true, "params": true, "parameters": true, "command": true, "content": true,
	"order": true, "entity": true, "object": true, "value": true, "values": true, "attributes": true, "properties": true,
	"result": true, "response": true, "responsepayload": true, "document": true, "doc": true, "state": true, "job": true}

// metaKeys hold metadata about the message's delivery and processing,
// where failure keys are failure context ({"headers": {"x-error": …}}).
func isPayloadKey(buf []byte, k string) bool {
	if len(k) > 40 {
		return true
	}
	return payloadKeys[string(failureKeyNorm(buf, k))]
}

// isPayloadKeyIn is isPayloadKey for key k of object m: an EventBridge
// event's "detail" is its data, another object's "detail" describes it.
func isPayloadKeyIn(buf []byte, m map[string]any, k string) bool {
	if k == "detail" {
		_, eb := m["detail-type"]
		return eb
	}
	return isPayloadKey(buf, k)
}

// metaKeys hold metadata about the message's delivery and processing
// ({"headers": {"x-error": …}}, {"meta": {"lastFailure": …}}): failure keys
// in them are failure context. Other nested objects of a body are the
// message's own entities ({"device": {"lastError": …}} is data).
var metaKeys = map[string]bool{"headers": true, "header": true, "meta": true, "metadata": true, "metainfo": true,
	"context": true, "ctx": true, "envelope": true, "dlq": true, "deadletter": true, "deadletterinfo": true,
	"processing": true, "processinginfo": true, "delivery": true, "deliveryinfo": true, "diagnostics": true,
	"diagnostic": true, "debug": true, "status": true, "statusinfo": true, "outcome": true, "lastattempt": true,
	"attempt": true, "retry": true, "retryinfo": true, "redrive": true, "consumer": true, "handler": true,
	"worker": true, "system": true, "sys": true, "properties": true, "props": true, "annotations": true,
	"extensions": true, "options": true, "opts": true, "info": true, "audit": true, "execution": true}

func isMetaKey(buf []byte, k string) bool {
	return len(k) <= 40 && metaKeys[string(failureKeyNorm(buf, k))]
}

// nestedFailureKeys reads failure keys in the nested metadata objects of
// m (at the body's top level only those named as metadata, see metaKeys;
// inside them any but payload containers), up to depth 3, and failure
// keys of JSON objects held in strings. It reports whether any was found.
func nestedFailureKeys(d *Decoding, path string, m map[string]any, depth int, meta bool) bool {
	if depth >= 3 {
		return false
	}
	var buf [64]byte
	found := false
	var keys []string
	for k, v := range m {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				continue
			}
		case string:
			if len(t) < 8 || t[0] != '{' {
				continue
			}
		default:
			continue
		}
		if genericKind(buf[:], k) != "" || isPayloadKeyIn(buf[:], m, k) || !meta && !isMetaKey(buf[:], k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var obj map[string]any
		switch t := m[k].(type) {
		case map[string]any:
			obj = t
		case string:
			if !mayHoldFailure(t) {
				continue
			}
			p, ok := parseJSON(t)
			if !ok {
				continue
			}
			obj, _ = p.(map[string]any)
		}
		if obj == nil {
			continue
		}
		if errorObjectShape(obj) {
			// A serialised error object in the metadata: read by its shape.
			shapeEvidence(d, path+"."+k, obj, false)
			found = true
			continue
		}
		if genericObject(d, path+"."+k, obj, 0) {
			found = true
		}
		if nestedFailureKeys(d, path+"."+k, obj, depth+1, true) {
			found = true
		}
	}
	return found
}

// mayHoldFailure is a quick test for text that could name a failure.
func mayHoldFailure(s string) bool {
	return strings.Contains(s, "rror") || strings.Contains(s, "xception") || strings.Contains(s, "ault") ||
		strings.Contains(s, "ailure") || strings.Contains(s, "eason") || strings.Contains(s, "race")
}

// looksLikeFailureText reports whether a value reads like an exception, a
// traceback or a stack trace: a traceback header, Go panic, Elixir "**
// (Type)", a line "pkg.SomeException: message", or several frames.
func looksLikeFailureText(s string) bool {
	if len(s) < 12 {
		return false
	}
	if strings.Contains(s, "Traceback (most recent call last)") || strings.HasPrefix(s, "panic: ") ||
		strings.HasPrefix(s, "** (") || strings.HasPrefix(s, "PHP Fatal error") {
		return true
	}
	first := s
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		first = s[:i]
		if frames(s) >= 2 {
			return true
		}
	}
	first = headLine(strings.TrimSpace(first))
	typ, _ := splitTypeMessage(first)
	if typ == "" {
		typ = strings.TrimSpace(first)
		if !isTypeName(typ) {
			return false
		}
	}
	return exceptionTypeName(typ)
}

// exceptionTypeName reports whether typ names an exception or error type:
// ends in Exception, Error, Fault, Timeout, or is an Errno:: constant.
func exceptionTypeName(typ string) bool {
	last := typ
	if i := strings.LastIndexAny(last, ".:\\"); i >= 0 {
		last = last[i+1:]
	}
	for _, suf := range [...]string{"Exception", "Error", "Fault", "Timeout", "Failure", "Rejection"} {
		if strings.HasSuffix(last, suf) {
			return true
		}
	}
	return strings.HasPrefix(typ, "Errno::") || strings.Contains(typ, "errors.") || strings.Contains(typ, "exceptions.")
}

// frames counts stack frame lines (up to 2).
func frames(s string) int {
	n := 0
	for len(s) > 0 && n < 2 {
		i := strings.IndexByte(s, '\n')
		l := s
		if i >= 0 {
			l, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if isFrame(strings.TrimSpace(l)) {
			n++
		}
	}
	return n
}

// valueHit is a failure-looking value found while scanning.
type valueHit struct {
	path string
	text string
	weak bool
	obj  map[string]any // an error object recognised by its shape
	log  bool           // text is what a log line with an error level says
}

// scanValues looks for values that read like an exception, a traceback
// or a stack trace, serialised error objects and log lines with an error
// level (decode_shape.go) anywhere in the body (and string attributes):
// only when nothing else gave failure context. Values inside payload
// containers are weak hints; elsewhere they count as failure text.
func scanValues(d *Decoding) {
	var hits []valueHit
	if d.Parsed != nil && anyFailureText(d.Parsed, 0) {
		// Rare: walk again, now building paths.
		var buf [64]byte
		var walk func(v any, path []string, inPayload, failed bool, depth int)
		walk = func(v any, path []string, inPayload, failed bool, depth int) {
			if depth > 6 || len(hits) >= 8 {
				return
			}
			switch t := v.(type) {
			case string:
				if msg, ok := logLineMessage(t); ok {
					// A log line with an error level: the consumer's
					// own log, unless it sits in the message's data (a
					// log-shipping payload) or in a body that does not
					// say it failed.
					hits = append(hits, valueHit{path: strings.Join(path, "."), text: msg, weak: inPayload || !failed, log: true})
				} else if len(t) >= 12 && strings.IndexByte(t, ':') >= 0 && looksLikeFailureText(t) {
					// A stack trace or traceback is sure; a one-line
					// "Type: message" is sure only next to a status that
					// says it failed ({"status": "failed", "detail": …}).
					sure := failed || strings.Contains(t, "\n") || strings.HasPrefix(t, "panic: ") || strings.HasPrefix(t, "** (")
					hits = append(hits, valueHit{path: strings.Join(path, "."), text: t, weak: inPayload || !sure})
				}
			case map[string]any:
				if depth > 0 && errorObjectShape(t) {
					// A serialised error object: failure context unless it
					// sits in the message's own data.
					hits = append(hits, valueHit{path: strings.Join(path, "."), obj: t, weak: inPayload})
					return
				}
				failed := failedStatus(t)
				for k, e := range t {
					payload := inPayload || isPayloadKeyIn(buf[:], t, k)
					if depth == 0 && !payload {
						// The body's own nested objects are entities
						// unless named as metadata.
						switch e.(type) {
						case map[string]any, []any:
							payload = !isMetaKey(buf[:], k)
						}
					}
					if depth == 0 && payload && !isPayloadKeyIn(buf[:], t, k) {
						if em, ok := e.(map[string]any); ok && errorObjectShape(em) {
							payload = false // an error object is no entity of the domain
						}
					}
					walk(e, append(path[:len(path):len(path)], k), payload, failed, depth+1)
				}
			case []any:
				for i, e := range t {
					if i == 20 {
						break
					}
					walk(e, path, inPayload, failed, depth+1)
				}
			}
		}
		walk(d.Parsed, []string{"body"}, d.bodyHandled, false, 0)
	}
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if a.IsBinary() || d.used[name] || name == record.MarkerAttribute {
			continue
		}
		switch v := a.Value; {
		case len(v) < 12:
		case v[0] == '{':
			// JSON.stringify(err) in a header
			if p, ok := parseJSON(v); ok {
				if m, ok := p.(map[string]any); ok && errorObjectShape(m) {
					hits = append(hits, valueHit{path: "attributes." + name, obj: m})
				}
			}
		case looksLikeFailureText(v):
			hits = append(hits, valueHit{path: "attributes." + name, text: v})
		default:
			if msg, ok := logLineMessage(v); ok {
				hits = append(hits, valueHit{path: "attributes." + name, text: msg, log: true})
			}
		}
	}
	if len(hits) == 0 {
		return
	}
	slices.SortStableFunc(hits, func(a, b valueHit) int { return strings.Compare(a.path, b.path) })
	for _, h := range hits {
		if h.obj != nil {
			shapeEvidence(d, h.path, h.obj, h.weak)
			continue
		}
		d.textEvidence(h.path, record.EvidenceMessage, h.text, h.weak)
	}
}

// failedStatus reports whether an object says it failed: a status,
// state, result, outcome or level of failed, failure, error, fatal, …
func failedStatus(m map[string]any) bool {
	for _, k := range [...]string{"status", "state", "result", "outcome", "level", "severity", "Status", "State", "Result", "Outcome", "Level"} {
		v, ok := m[k].(string)
		if !ok {
			continue
		}
		switch strings.ToLower(v) {
		case "failed", "failure", "fail", "error", "errored", "fatal", "critical", "dead", "poisoned", "aborted", "crashed", "exception":
			return true
		}
	}
	return false
}

// anyFailureText reports whether some string in v reads like a failure
// (the allocation-free first pass of scanValues).
func anyFailureText(v any, depth int) bool {
	if depth > 6 {
		return false
	}
	switch t := v.(type) {
	case string:
		if len(t) < 12 {
			return false
		}
		if _, ok := logLineMessage(t); ok {
			return true
		}
		return strings.IndexByte(t, ':') >= 0 && looksLikeFailureText(t)
	case map[string]any:
		if depth > 0 && errorObjectShape(t) {
			return true
		}
		for _, e := range t {
			if anyFailureText(e, depth+1) {
				return true
			}
		}
	case []any:
		for i, e := range t {
			if i == 20 {
				break
			}
			if anyFailureText(e, depth+1) {
				return true
			}
		}
	}
	return false
}
