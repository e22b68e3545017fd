package inspect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Failure evidence recognised by its shape, not by the name of the key
// that holds it: a serialised error object (node-postgres, pgx, mysql2,
// JDBC SQLException, undici/axios, AWS SDK errors, OpenTelemetry
// exception attributes) and a log line with an error level. The shapes are
// checked during the one walk scanValues makes over a body that gave no
// failure context by its keys.

// typeKeys, codeKeys, messageKeys, statusKeys and stackKeys are the parts
// of a serialised error object, in the spellings of the common runtimes.
var (
	typeKeys    = [...]string{"name", "Name", "type", "Type", "__type", "ClassName", "className", "exceptionType", "errorType", "exception.type", "error.type", "$type"}
	codeKeys    = [...]string{"code", "Code", "errorCode", "ErrorCode", "error_code", "errno", "Errno", "sqlState", "SQLState", "sqlstate", "SqlState", "pgcode", "pgCode", "sqlcode"}
	messageKeys = [...]string{"message", "Message", "msg", "sqlMessage", "errorMessage", "exception.message", "error.message", "detail", "Detail", "hint", "description"}
	statusKeys  = [...]string{"status", "statusCode", "StatusCode", "httpStatusCode", "httpStatus", "status_code"}
	stackKeys   = [...]string{"stack", "stackTrace", "StackTrace", "stacktrace", "exception.stacktrace", "backtrace", "traceback"}
)

// errorObjectShape reports whether m reads like a serialised error object
// rather than the message's own data.
func errorObjectShape(m map[string]any) bool {
	if len(m) < 2 || len(m) > 40 {
		return false
	}
	if _, ok := m["$fault"]; ok { // AWS SDK for JavaScript v3
		return true
	}
	if _, ok := m["$metadata"]; ok {
		if _, ok := m["name"].(string); ok {
			return true
		}
	}
	for _, k := range [...]string{"sqlState", "SQLState", "sqlstate", "SqlState"} {
		if s, ok := m[k].(string); ok && sqlStateLike(s) {
			return true
		}
	}
	if _, ok := m["exception.type"]; ok { // OpenTelemetry exception attributes
		return true
	}
	if _, ok := m["exception.message"]; ok {
		return true
	}
	if b, ok := m["isAxiosError"].(bool); ok && b {
		return true
	}
	msg := firstString(m, messageKeys[:])
	if sev, _ := m["severity"].(string); (sev == "ERROR" || sev == "FATAL" || sev == "PANIC") && msg != "" {
		if c, ok := m["code"].(string); ok && sqlStateLike(c) { // node-postgres, pgx PgError
			return true
		}
	}
	typ := firstString(m, typeKeys[:])
	if typ != "" && exceptionTypeName(typ) && (msg != "" || firstString(m, stackKeys[:]) != "") {
		return true
	}
	if c, ok := m["code"].(string); ok && errnoName(c) && (msg != "" || m["syscall"] != nil || m["errno"] != nil) {
		return true
	}
	if st := firstString(m, stackKeys[:]); st != "" && msg != "" && frames(st) >= 2 {
		return true
	}
	return rpcStatus(m) >= 0
}

// rpcStatus returns the code of a google.rpc.Status object ({"code": 14,
// "message": "…", "details": […]}: Google APIs' error bodies, Cloud Tasks'
// responseStatus), or -1 when m is not one.
func rpcStatus(m map[string]any) int {
	if len(m) > 3 {
		return -1
	}
	c, ok := m["code"].(float64)
	msg, _ := m["message"].(string)
	if !ok || msg == "" || c < 1 || c > 16 || c != float64(int(c)) {
		return -1
	}
	for k := range m {
		if k != "code" && k != "message" && k != "details" {
			return -1
		}
	}
	return int(c)
}

func firstString(m map[string]any, keys []string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// sqlStateLike reports whether s is a SQLSTATE: five digits or capitals,
// its class (first two) digits.
func sqlStateLike(s string) bool {
	if len(s) != 5 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' && (s[1] < 'A' || s[1] > 'Z') {
		return false
	}
	for i := 2; i < 5; i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// errnoName reports whether s is an error code name: ECONNRESET,
// UND_ERR_SOCKET, ER_DUP_ENTRY, ERR_NETWORK (capitals, digits and '_',
// starting with E or UND_).
func errnoName(s string) bool {
	if len(s) < 4 || len(s) > 48 || !(s[0] == 'E' || strings.HasPrefix(s, "UND_")) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// shapeEvidence records the parts of error object m found at path: its
// type, codes (a SQLSTATE as "SQLSTATE X", a MySQL errno as "errno N" so
// the families read them in context), message, HTTP status, stack and
// the root of its cause chain.
func shapeEvidence(d *Decoding, path string, m map[string]any, weak bool) {
	add := func(field, kind, text string) {
		if weak {
			d.WeakEvidence(field, kind, text)
		} else {
			d.Evidence(field, kind, text)
		}
	}
	for _, k := range typeKeys {
		if s, ok := m[k].(string); ok && s != "" && s != "error" && s != "Error" && !strings.ContainsAny(s, " \n") {
			add(path+"."+k, record.EvidenceType, s)
			break
		}
	}
	codeParts(path, m, add)
	if md, ok := m["$metadata"].(map[string]any); ok {
		if n, ok := md["httpStatusCode"].(float64); ok {
			add(path+".$metadata.httpStatusCode", record.EvidenceStatus, strconv.Itoa(int(n)))
		}
	}
	for _, k := range statusKeys {
		switch v := m[k].(type) {
		case float64:
			if v >= 100 && v < 600 {
				add(path+"."+k, record.EvidenceStatus, strconv.Itoa(int(v)))
			}
		case string:
			if len(v) == 3 && isDigitsStr(v) {
				add(path+"."+k, record.EvidenceStatus, v)
			}
		}
	}
	if r, ok := m["response"].(map[string]any); ok { // axios: error.response.status
		if n, ok := r["status"].(float64); ok {
			add(path+".response.status", record.EvidenceStatus, strconv.Itoa(int(n)))
		}
	}
	if c := rpcStatus(m); c > 0 {
		// The status message describes what happened: it can override
		// the code's usual meaning, as a gRPC desc does.
		add(path+".code", record.EvidenceCode, grpcCodeText[c])
		add(path+".message", record.EvidenceRootCause, m["message"].(string))
		return
	}
	for _, k := range messageKeys {
		if s, ok := m[k].(string); ok && s != "" {
			d.textEvidence(path+"."+k, record.EvidenceMessage, s, weak)
		}
	}
	for _, k := range stackKeys {
		if s, ok := m[k].(string); ok && strings.Contains(s, "\n") {
			d.textEvidence(path+"."+k, "stack", s, weak)
			break
		}
	}
	if root := innermostCause(m); root != "" {
		add(path+".cause", record.EvidenceRootCause, root)
	}
	for _, p := range groupParts(m) {
		add(path+".errors", record.EvidenceRootCause, p)
	}
}

// codeParts adds the codes of error object m: its code keys, and any key
// naming an errno or a SQLSTATE ("mysql_errno", "sql_state").
func codeParts(path string, m map[string]any, add func(field, kind, text string)) {
	_, mysql := m["sqlMessage"]
	keys := codeKeys[:]
	for k := range m {
		lk := strings.ToLower(k)
		if (strings.Contains(lk, "errno") || strings.Contains(lk, "sqlstate") || strings.Contains(lk, "sql_state")) && !slices.Contains(keys, k) {
			if len(keys) == len(codeKeys) {
				keys = append([]string(nil), codeKeys[:]...)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) > len(codeKeys) {
		slices.Sort(keys[len(codeKeys):])
	}
	for _, k := range keys {
		lk := strings.ToLower(k)
		errnoKey := strings.Contains(lk, "errno")
		switch v := m[k].(type) {
		case string:
			switch {
			case v == "":
			case sqlStateLike(v) && (k != "code" && k != "Code" && !errnoKey || m["severity"] != nil || m["routine"] != nil || m["constraint"] != nil || m["schema"] != nil || m["table"] != nil):
				add(path+"."+k, record.EvidenceCode, "SQLSTATE "+v)
			case isDigitsStr(v) && len(v) == 4 && (mysql || errnoKey):
				add(path+"."+k, record.EvidenceCode, "errno "+v)
			case !isDigitsStr(v) && !strings.ContainsAny(v, " \n") && len(v) <= 64:
				add(path+"."+k, record.EvidenceCode, v)
			}
		case float64:
			if n := int(v); n >= 1000 && n < 10000 && (mysql || errnoKey) {
				add(path+"."+k, record.EvidenceCode, "errno "+strconv.Itoa(n))
			}
		}
	}
}

// groupParts returns the innermost causes of the parts of an aggregate
// error object: Node AggregateError's errors, .NET's InnerExceptions,
// Python ExceptionGroup's exceptions.
func groupParts(m map[string]any) []string {
	var out []string
	for _, k := range [...]string{"errors", "InnerExceptions", "innerExceptions", "exceptions"} {
		arr, ok := m[k].([]any)
		if !ok {
			continue
		}
		for i, e := range arr {
			if i == 8 {
				break
			}
			switch t := e.(type) {
			case map[string]any:
				p := innermostCause(t)
				if p == "" {
					typ := str(t, "name", "type", "ClassName", "code")
					msg := str(t, "message", "Message", "msg")
					switch {
					case typ != "" && msg != "":
						p = typ + ": " + msg
					default:
						p = typ + msg
					}
				}
				out = appendPart(out, p)
			case string:
				out = appendPart(out, t)
			}
		}
	}
	return out
}

func isDigitsStr(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// logLineMessage returns what a log line with an error level says (the
// text after the level, or a logfmt line's msg and err), and whether s is
// one: "2026-03-01T10:00:00Z ERROR [worker] …", "[ERROR] …", "level=error
// msg=… err=…", glog "E0301 10:00:00.000000 1 f.go:12] …".
func logLineMessage(s string) (string, bool) {
	if len(s) < 12 {
		return "", false
	}
	line := s
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	head := line
	if len(head) > 80 {
		head = head[:80]
	}
	// Most strings name no level: a few fast searches reject them.
	if !strings.Contains(head, "ERROR") && !strings.Contains(head, "FATAL") && !strings.Contains(head, "CRITICAL") &&
		!strings.Contains(head, "error") && !strings.Contains(line, "level=") && !strings.Contains(line, "lvl=") &&
		!(line[0] == 'E' && len(line) > 14) {
		return "", false
	}
	if strings.Contains(line, "level=error") || strings.Contains(line, "level=fatal") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "lvl=eror") {
		var parts []string
		for _, k := range [...]string{"msg=", "error=", "err="} {
			if v := logfmtValue(line, k); v != "" {
				parts = append(parts, v)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, ": "), true
		}
		return line, true
	}
	if len(line) > 14 && line[0] == 'E' && isDigitsStr(line[1:5]) && line[5] == ' ' {
		if i := strings.Index(line, "] "); i > 0 {
			return strings.TrimSpace(line[i+2:]), true
		}
	}
	for _, lvl := range [...]string{"[ERROR]", "[FATAL]", "[CRITICAL]", " ERROR ", " FATAL ", " CRITICAL ", " ERROR: ", "ERROR: ", "FATAL: ", " [error] ", " error: "} {
		i := strings.Index(head, lvl)
		if i < 0 || (i > 0 && lvl[0] != ' ' && head[i-1] != ' ') {
			continue
		}
		rest := strings.TrimSpace(line[i+len(lvl):])
		// a logger name or thread in brackets after the level
		for strings.HasPrefix(rest, "[") {
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				break
			}
			rest = strings.TrimLeft(rest[j+1:], " :-")
		}
		if len(rest) < 8 {
			return "", false
		}
		if s != line {
			rest += s[len(line):] // a trace printed after the line
		}
		return rest, true
	}
	return "", false
}

// logfmtValue returns the value of key k= in a logfmt line ("" when absent).
func logfmtValue(line, k string) string {
	i := strings.Index(line, k)
	for i > 0 && line[i-1] != ' ' {
		j := strings.Index(line[i+1:], k)
		if j < 0 {
			return ""
		}
		i += 1 + j
	}
	if i < 0 {
		return ""
	}
	v := line[i+len(k):]
	if strings.HasPrefix(v, `"`) {
		if uq, err := strconv.QuotedPrefix(v); err == nil {
			if s, err := strconv.Unquote(uq); err == nil {
				return s
			}
		}
		return strings.Trim(v, `"`)
	}
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}
