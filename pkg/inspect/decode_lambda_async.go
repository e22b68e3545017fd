package inspect

import (
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Lambda asynchronous invocation DLQ (a function's DeadLetterConfig): the
// body is the event the function was invoked with, untouched; Lambda adds
// the attributes RequestID (String), ErrorCode (Number: the invocation's
// HTTP status, 200 when the function itself raised) and ErrorMessage
// (String, at most 1 KB: the function error, often the runtime's JSON
// {"errorType", "errorMessage", "trace"|"stackTrace"}, possibly cut short).
func init() {
	RegisterFormat(Format{
		Name:     "lambda-async",
		Title:    "Lambda asynchronous invocation DLQ (attributes RequestID, ErrorCode, ErrorMessage; body is the event)",
		Priority: 10,
		Decode:   decodeLambdaAsync,
	})
}

func decodeLambdaAsync(d *Decoding) bool {
	_, hasID := d.Attr("RequestID")
	code, hasCode := d.Attr("ErrorCode")
	msg, hasMsg := d.Attr("ErrorMessage")
	if !hasID || !(hasCode || hasMsg) {
		return false
	}
	if code = strings.TrimSpace(code); code != "" && code != "200" {
		d.Evidence("attributes.ErrorCode", record.EvidenceStatus, code)
	}
	if hasMsg {
		runtimeError(d, "attributes.ErrorMessage", msg)
	}
	if d.Obj != nil {
		d.SetEnvelope(EnvelopeOf(d.Obj))
	}
	return true
}

// runtimeError reads a Lambda runtime error: JSON {"errorType",
// "errorMessage", "trace"/"stackTrace", "cause"}, the same JSON cut short
// at 1 KB, or plain text.
func runtimeError(d *Decoding, field, s string) {
	if v, ok := parseJSON(s); ok {
		if m, ok := v.(map[string]any); ok {
			runtimeErrorObject(d, field, m)
			return
		}
	}
	if looksLikeJSON(s) {
		// Truncated JSON: read the fields that survived.
		typ, tok := jsonStringField(s, "errorType")
		msg, mok := jsonStringField(s, "errorMessage")
		if tok || mok {
			d.Evidence(field+".errorType", record.EvidenceType, typ)
			d.Evidence(field+".errorMessage", record.EvidenceMessage, msg)
			return
		}
	}
	typ, rest := splitTypeMessage(s)
	d.Evidence(field, record.EvidenceType, typ)
	d.Evidence(field, record.EvidenceMessage, rest)
}

func runtimeErrorObject(d *Decoding, field string, m map[string]any) {
	d.Evidence(field+".errorType", record.EvidenceType, str(m, "errorType", "type", "name"))
	d.Evidence(field+".errorMessage", record.EvidenceMessage, str(m, "errorMessage", "message"))
	for _, k := range []string{"trace", "stackTrace"} {
		switch t := m[k].(type) {
		case []any:
			var b strings.Builder
			for _, l := range t {
				if s, ok := l.(string); ok {
					b.WriteString(s)
					b.WriteByte('\n')
				}
			}
			d.StackEvidence(field+"."+k, b.String())
		case string:
			d.StackEvidence(field+"."+k, t)
		}
	}
	if c, ok := m["cause"].(map[string]any); ok {
		d.Evidence(field+".cause.errorType", record.EvidenceCause, str(c, "errorType", "type"))
		d.Evidence(field+".cause.errorMessage", record.EvidenceCause, str(c, "errorMessage", "message"))
	}
}

// jsonStringField finds "key": "value" in possibly truncated JSON text and
// returns the (unescaped, possibly cut) value.
func jsonStringField(s, key string) (string, bool) {
	i := strings.Index(s, `"`+key+`"`)
	if i < 0 {
		return "", false
	}
	j := i + len(key) + 2
	for j < len(s) && (s[j] == ' ' || s[j] == ':' || s[j] == '\t' || s[j] == '\n') {
		j++
	}
	if j >= len(s) || s[j] != '"' {
		return "", false
	}
	start := j
	j++
	for j < len(s) && s[j] != '"' {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	if j < len(s) {
		if v, err := strconv.Unquote(s[start : j+1]); err == nil {
			return v, true
		}
	}
	// Cut short: unescape what is there.
	raw := s[start+1 : min(j, len(s))]
	r := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t", `\/`, "/")
	return r.Replace(raw), true
}
