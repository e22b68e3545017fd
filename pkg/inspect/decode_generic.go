package inspect

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Generic failure keys: what producers and consumers that follow no
// particular framework attach to a dead-lettered message, as message
// attributes or as top-level fields of the body. Keys are matched case- and
// separator-insensitively ("dlq_reason", "DLQ-Reason", "dlqReason" alike);
// "x-" and "dlq" prefixes are read through ("x-error-message" is
// "error-message", "dlq_exception" is "exception"). Values may be text, a
// JSON object ({"type": …, "message": …, "stack": …}) or JSON in a string.
var genericKeys = map[string]string{
	// exception / error types and codes
	"errortype": record.EvidenceType, "exceptiontype": record.EvidenceType, "failuretype": record.EvidenceType,
	"exceptionclass": record.EvidenceType, "exceptionclassname": record.EvidenceType, "exceptionname": record.EvidenceType,
	"errorname": record.EvidenceType, "faulttype": record.EvidenceType, "exceptionfqcn": record.EvidenceType,
	"errortypename": record.EvidenceType, "errorkind": record.EvidenceType,
	"errorcode": record.EvidenceCode, "errcode": record.EvidenceCode, "failurecode": record.EvidenceCode,
	"faultcode": record.EvidenceCode, "reasoncode": record.EvidenceCode,
	// messages
	"error": record.EvidenceMessage, "err": record.EvidenceMessage, "errors": record.EvidenceMessage,
	"lasterror": record.EvidenceMessage, "lasterrormessage": record.EvidenceMessage, "exception": record.EvidenceMessage,
	"exceptionmessage": record.EvidenceMessage, "errormessage": record.EvidenceMessage, "errormsg": record.EvidenceMessage,
	"errmsg": record.EvidenceMessage, "errordetail": record.EvidenceMessage, "errordetails": record.EvidenceMessage,
	"errordescription": record.EvidenceMessage, "failurereason": record.EvidenceMessage, "failuremessage": record.EvidenceMessage,
	"failure": record.EvidenceMessage, "reason": record.EvidenceMessage, "fault": record.EvidenceMessage,
	"faultmessage": record.EvidenceMessage, "faultstring": record.EvidenceMessage, "deadletterreason": record.EvidenceMessage,
	"deadlettererrordescription": record.EvidenceMessage, "rejectreason": record.EvidenceMessage,
	"rejectionreason": record.EvidenceMessage, "cause": record.EvidenceCause, "rootcause": record.EvidenceCause,
	// the same keys in German, French, Spanish and Portuguese
	"fehler": record.EvidenceMessage, "fehlermeldung": record.EvidenceMessage, "erreur": record.EvidenceMessage,
	"messageerreur": record.EvidenceMessage, "erro": record.EvidenceMessage, "mensagemerro": record.EvidenceMessage,
	"mensajeerror": record.EvidenceMessage, "falha": record.EvidenceMessage, "fallo": record.EvidenceMessage,
	"motivofalha": record.EvidenceMessage, "motivoerror": record.EvidenceMessage,
	// stack traces: only their root-cause lines are evidence
	"stacktrace": "stack", "stack": "stack", "exceptionstacktrace": "stack", "errorstack": "stack", "trace": "stack",
	// the consumer's own label for the failure
	"errorclass": record.EvidenceClass, "errorcategory": record.EvidenceClass, "failureclass": record.EvidenceClass,
	"failurecategory": record.EvidenceClass,
	// HTTP status of the failed call
	"statuscode": record.EvidenceStatus, "httpstatus": record.EvidenceStatus, "httpstatuscode": record.EvidenceStatus,
	"responsestatus": record.EvidenceStatus, "status": record.EvidenceStatus,
	// context
	"attemptcount": "attempts", "attempts": "attempts", "retrycount": "attempts", "retries": "attempts",
	"deliveryattempts": "attempts", "deliverycount": "attempts", "attemptsmade": "attempts", "attemptnumber": "attempts",
	"numattempts": "attempts", "tries": "attempts",
	"consumerversion": "consumer", "failedat": "failedat", "failuretime": "failedat", "timeoffailure": "failedat",
}

// failureKeyNorm lower-cases k and drops separators; it returns "" for keys that
// cannot be failure keys (too long).
func failureKeyNorm(buf []byte, k string) []byte {
	buf = buf[:0]
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'A' && c <= 'Z':
			buf = append(buf, c+('a'-'A'))
		case c == '_' || c == '-' || c == '.' || c == ' ' || c == ':':
		default:
			buf = append(buf, c)
		}
	}
	return buf
}

// genericKind returns the kind of failure key k ("" when it is none).
// status keys only count next to other failure keys (see genericObject).
// Keys repeat from body to body: the kinds of keys seen before come from
// keyKinds.
func genericKind(buf []byte, k string) string {
	if len(k) > 160 {
		return ""
	}
	slot := &keyKinds[stringHash(unsafe.Slice(unsafe.StringData(k), len(k)))&uint64(len(keyKinds)-1)]
	if e := slot.Load(); e != nil && e.key == k {
		return e.kind
	}
	kind := keyKind(buf, k)
	// The key is a copy: k may be part of a body.
	slot.Store(&keyKindEntry{key: strings.Clone(k), kind: kind})
	return kind
}

// keyKinds remembers the kinds of keys by a hash of the key, shared by the
// decoding goroutines (atomic pointers; a collision replaces the slot).
// Kinds are constants, never part of a key.
var keyKinds [4096]atomic.Pointer[keyKindEntry]

type keyKindEntry struct{ key, kind string }

// keyKind is genericKind without the memo.
func keyKind(buf []byte, k string) string {
	n := failureKeyNorm(buf, k)
	if len(k) > 48 {
		// Long keys (Symfony's "X-Message-Stamp-…ErrorDetailsStamp")
		// only by their words.
		if mayNameFailure(n) {
			return wordKind(k)
		}
		return ""
	}
	if kind, ok := genericKeys[string(n)]; ok {
		return kind
	}
	for _, p := range [...]string{"x", "dlq", "deadletter", "last", "consumer"} {
		if len(n) > len(p)+2 && string(n[:len(p)]) == p {
			if kind, ok := genericKeys[string(n[len(p):])]; ok {
				return kind
			}
		}
	}
	if mayNameFailure(n) {
		return wordKind(k)
	}
	return ""
}

func genericAttrs(d *Decoding) {
	var buf [64]byte
	var status []string
	found := false
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if a.IsBinary() || name == record.MarkerAttribute || d.used[name] {
			continue
		}
		kind := genericKind(buf[:], name)
		if kind == "" {
			// An attribute holding a JSON object of headers (Symfony's
			// X-Symfony-Messenger, a JSON "headers" attribute).
			if v := a.Value; len(v) > 8 && v[0] == '{' && mayHoldFailure(v) {
				if p, ok := parseJSON(v); ok {
					if m, ok := p.(map[string]any); ok {
						if genericObject(d, "attributes."+name, m, 0) {
							found = true
						}
						if nestedFailureKeys(d, "attributes."+name, m, 0, true) {
							found = true
						}
					}
				}
			}
			continue
		}
		if kind == record.EvidenceStatus {
			status = append(status, name)
			continue
		}
		found = true
		genericValue(d, "attributes."+name, kind, parseMaybeJSON(a.Value), 0)
	}
	if found {
		for _, name := range status {
			d.Evidence("attributes."+name, record.EvidenceStatus, d.Rec.Attributes[name].Value)
		}
	}
}

func genericBody(d *Decoding) {
	genericObject(d, "body", d.Obj, 0)
	nestedFailureKeys(d, "body", d.Obj, 0, false)
}

// genericObject reads the failure keys of one JSON object (the body's top
// level, or a nested error object).
func genericObject(d *Decoding, path string, m map[string]any, depth int) bool {
	var buf [64]byte
	found := false
	var status []string
	var kb [8]string
	for _, k := range failureKeys(kb[:0], m, buf[:]) {
		v := m[k]
		kind := genericKind(buf[:], k)
		switch kind {
		case "":
			continue
		case record.EvidenceStatus:
			status = append(status, k)
			continue
		}
		if genericValue(d, path+"."+k, kind, v, depth) {
			found = true
		}
	}
	if found || depth > 0 {
		for _, k := range status {
			if s := scalarText(m[k]); s != "" {
				d.Evidence(path+"."+k, record.EvidenceStatus, s)
			}
		}
	}
	return found
}

// genericValue records one failure value; objects are read as nested error
// objects ({"type", "message", "code", "stack", "cause"}).
func genericValue(d *Decoding, field, kind string, v any, depth int) bool {
	switch t := v.(type) {
	case nil, bool:
		return false
	case string:
		if t == "" {
			return false
		}
		if looksLikeJSON(t) && depth < 3 {
			if p, ok := parseJSON(t); ok {
				return genericValue(d, field, kind, p, depth+1)
			}
		}
		switch kind {
		case "stack":
			if !strings.Contains(t, "\n") && !looksLikeFailureText(t) {
				return false // a trace id, not a stack trace
			}
			d.TextEvidence(field, "stack", t)
		case "attempts":
			d.Attempts(t)
			return false
		case "consumer":
			d.ConsumerVersion(t)
			return false
		case "failedat":
			d.FailedAt(t)
			return false
		case record.EvidenceType, record.EvidenceMessage, record.EvidenceCause:
			d.TextEvidence(field, kind, t)
		default:
			d.Evidence(field, kind, t)
		}
		return true
	case float64:
		s := scalarText(t)
		switch kind {
		case "attempts":
			d.Attempts(s)
			return false
		case record.EvidenceCode, record.EvidenceStatus:
			d.Evidence(field, kind, s)
			return true
		}
		return false
	case map[string]any:
		if depth >= 3 {
			return false
		}
		found := false
		// Codes a driver or SDK puts in its error object: a SQLSTATE, a
		// MySQL errno, an errno name (node-postgres, mysql2, pgx, JDBC).
		codeParts(field, t, func(f, kind, text string) { d.Evidence(f, kind, text); found = true })
		for _, p := range groupParts(t) {
			d.Evidence(field+".errors", record.EvidenceRootCause, p)
			found = true
		}
		if root := innermostCause(t); root != "" {
			// The chain's innermost cause (Node's cause, .NET's
			// InnerException) is the root cause.
			d.Evidence(field+".cause", record.EvidenceRootCause, root)
			found = true
		}
		// A nested error object: its own failure keys, plus the usual
		// names of an error's parts (any case: "Code", "Message").
		for _, k := range sortedKeys(t) {
			val := t[k]
			kind, ok := errorParts[strings.ToLower(k)]
			if !ok {
				continue
			}
			if s := scalarText(val); s != "" {
				d.Evidence(field+"."+k, kind, s)
				found = true
			}
		}
		if genericObject(d, field, t, depth+1) {
			found = true
		}
		if !found {
			// An object under a failure key whose parts have names of
			// their own ({"pgcode": …, "pgerror": …}): its texts are the
			// failure's words.
			for _, k := range sortedKeys(t) {
				if s, ok := t[k].(string); ok && len(s) >= 8 && !strings.HasPrefix(s, "http") {
					d.TextEvidence(field+"."+k, record.EvidenceMessage, s)
					found = true
				}
			}
		}
		return found
	case []any:
		found := false
		for i, e := range t {
			if i == 5 {
				break
			}
			if genericValue(d, field, kind, e, depth+1) {
				found = true
			}
		}
		return found
	}
	return false
}

// errorParts are the parts of a nested error object.
var errorParts = map[string]string{
	"type": record.EvidenceType, "name": record.EvidenceType, "class": record.EvidenceType, "kind": record.EvidenceType,
	"code": record.EvidenceCode, "message": record.EvidenceMessage, "msg": record.EvidenceMessage,
	"description": record.EvidenceMessage, "detail": record.EvidenceMessage, "title": record.EvidenceMessage,
}

// splitTypeMessage splits "pkg.SomeError: message" into its exception type
// and message; it returns "" for the type when the text does not start
// with an identifier-like type followed by ": ".
func splitTypeMessage(s string) (typ, msg string) {
	i := strings.Index(s, ": ")
	if i <= 0 || i > 120 {
		return "", s
	}
	head := s[:i]
	// .NET writes an HRESULT or error number after the type:
	// "SqlException (0x80131904)", "Win32Exception (258)".
	if j := strings.LastIndex(head, " ("); j > 0 && strings.HasSuffix(head, ")") {
		n := head[j+2 : len(head)-1]
		if strings.HasPrefix(n, "0x") || isDigitsStr(n) {
			head = head[:j]
		}
	}
	upper := false
	for j := 0; j < len(head); j++ {
		c := head[j]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '$', c == '+':
		default:
			return "", s
		}
	}
	if !upper || !strings.ContainsAny(head, "abcdefghijklmnopqrstuvwxyz") {
		return "", s
	}
	return head, strings.TrimSpace(s[i+2:])
}

// isTypeName reports whether s is a bare exception type name
// ("SocketTimeoutException", "System.FormatException", "ValueError").
func isTypeName(s string) bool {
	if len(s) > 120 || !(strings.HasSuffix(s, "Exception") || strings.HasSuffix(s, "Error") || strings.HasSuffix(s, "Fault")) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '$') {
			return false
		}
	}
	return true
}
