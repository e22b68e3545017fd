package logs

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Event is one CloudWatch Logs event.
type Event struct {
	Group     string
	Stream    string
	Timestamp time.Time
	Message   string
	ID        string
}

func (e Event) line() record.LogLine {
	msg := e.Message
	if len(msg) > maxLine {
		msg = msg[:maxLine] + "…"
	}
	return record.LogLine{LogGroup: e.Group, LogStream: e.Stream, Timestamp: e.Timestamp, Message: strings.TrimRight(msg, "\n")}
}

const (
	maxLine      = 4000 // characters of a log line kept in failure.source.lines
	maxUsedLines = 8    // log lines kept per message
)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// lambdaLine splits a Lambda runtime text line: Node.js and Java write
// "<time>\t<requestId>\t<LEVEL>\t<message>", Python "[LEVEL]\t<time>\t<requestId>\t<message>".
// ok is false for other lines.
func lambdaLine(msg string) (reqID, level, rest string, ok bool) {
	f := strings.SplitN(msg, "\t", 4)
	if len(f) < 3 {
		return "", "", "", false
	}
	if strings.HasPrefix(f[0], "[") && strings.HasSuffix(f[0], "]") && uuidRE.MatchString(f[2]) {
		rest := ""
		if len(f) == 4 {
			rest = f[3]
		}
		return f[2], strings.Trim(f[0], "[]"), rest, true
	}
	if uuidRE.MatchString(f[1]) {
		if len(f) == 3 { // "<time>\t<requestId>\tTask timed out after …" has no level
			return f[1], "", f[2], true
		}
		return f[1], f[2], f[3], true
	}
	return "", "", "", false
}

var reportRE = regexp.MustCompile(`^(START|END|REPORT) RequestId: ([0-9a-fA-F-]{36})`)

// requestIDOf returns the Lambda request id an event belongs to: the
// runtime's tab-separated prefix, a START/END/REPORT line, or a structured
// log's function_request_id (Powertools) / requestId / aws_request_id.
func requestIDOf(e Event) string {
	if id, _, _, ok := lambdaLine(e.Message); ok {
		return id
	}
	if m := reportRE.FindStringSubmatch(e.Message); m != nil {
		return m[2]
	}
	if obj := jsonObject(e.Message); obj != nil {
		for _, k := range []string{"function_request_id", "requestId", "request_id", "aws_request_id", "awsRequestId", "AWSRequestId"} {
			if s, ok := obj[k].(string); ok && uuidRE.MatchString(s) {
				return s
			}
		}
	}
	return ""
}

func jsonObject(msg string) map[string]any {
	t := strings.TrimSpace(msg)
	if !strings.HasPrefix(t, "{") {
		// Lambda text lines carry JSON after their prefix ("… ERROR\tInvoke Error \t{…}")
		return nil
	}
	var obj map[string]any
	if json.Unmarshal([]byte(t), &obj) != nil {
		return nil
	}
	return obj
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if strings.TrimSpace(v) != "" {
				return v
			}
		case []any: // stackTrace arrays
			var parts []string
			for _, x := range v {
				if s, ok := x.(string); ok {
					parts = append(parts, s)
				}
			}
			if len(parts) > 0 {
				return strings.Join(parts, "\n")
			}
		}
	}
	return ""
}

var errorLevels = map[string]bool{"ERROR": true, "FATAL": true, "CRITICAL": true, "SEVERE": true, "PANIC": true, "ALERT": true, "EMERG": true, "EMERGENCY": true}

// isErrorEvent reports whether an event reports a failure: an error level
// (structured or in the text), an exception, or a Lambda runtime error line
// (Invoke Error, Task timed out, a REPORT with Status error/timeout).
func isErrorEvent(e Event) bool {
	msg := e.Message
	if obj := jsonObject(msg); obj != nil {
		if errorLevels[strings.ToUpper(str(obj, "level", "levelname", "severity", "log.level", "lvl"))] {
			return true
		}
		return str(obj, "exception", "exception_name", "error_type", "errorType", "errorMessage", "stack_trace", "stackTrace") != "" ||
			obj["error"] != nil || obj["err"] != nil
	}
	if _, level, _, ok := lambdaLine(msg); ok && errorLevels[strings.ToUpper(level)] {
		return true
	}
	if strings.Contains(msg, "Task timed out after") || strings.Contains(msg, "Invoke Error") {
		return true
	}
	if m := reportRE.FindStringSubmatch(msg); m != nil {
		return strings.Contains(msg, "Status: error") || strings.Contains(msg, "Status: timeout")
	}
	head := msg
	if i := strings.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	for _, tok := range levelTokens(head) {
		if errorLevels[tok] {
			return true
		}
	}
	return exceptionLine(msg) != ""
}

// levelTokens returns the upper-cased words of a text line's prefix where
// log levels sit ("2024-… ERROR 1 --- […]", "[ERROR] …", "level=error").
func levelTokens(line string) []string {
	if len(line) > 160 {
		line = line[:160]
	}
	var out []string
	for _, w := range strings.FieldsFunc(line, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '[' || r == ']' || r == ':' || r == '|' || r == ','
	}) {
		w = strings.TrimPrefix(strings.TrimPrefix(w, "level="), "severity=")
		out = append(out, strings.ToUpper(strings.Trim(w, `"`)))
	}
	return out
}

var excRE = regexp.MustCompile(`^(?:Caused by: |Exception in thread "[^"]*" )?([A-Za-z_$][\w$]*(?:\.[\w$]+)*(?:Exception|Error|Fault|Throwable))(?::\s+(.*))?$`)

// exceptionLine returns the first line of msg that is an exception
// ("com.fasterxml…JsonParseException: Unexpected character", "ValueError: …").
func exceptionLine(msg string) string {
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if excRE.MatchString(l) {
			return l
		}
	}
	return ""
}

var logfmtRE = regexp.MustCompile(`\b(err|error|exception|cause|reason|msg|message)=("(?:[^"\\]|\\.)*"|\S+)`)

// extract builds the failure from an invocation's or message's error
// events (in time order). requestID is set when the events were found by
// following a Lambda request id.
func extract(errEvents []Event, requestID string) *record.Failure {
	// A REPORT line only summarises the invocation (Status, Error Type):
	// the lines that say what failed come first.
	errEvents = slices.Clone(errEvents)
	slices.SortStableFunc(errEvents, func(a, b Event) int {
		ra, rb := strings.HasPrefix(a.Message, "REPORT RequestId: "), strings.HasPrefix(b.Message, "REPORT RequestId: ")
		switch {
		case ra == rb:
			return 0
		case rb:
			return -1
		}
		return 1
	})
	f := inspect.BuildFailure(inspect.FormatLogs, func(d *inspect.Decoding) {
		for _, e := range errEvents {
			evidenceOf(d, e)
		}
	})
	if len(errEvents) > 0 {
		first := errEvents[0]
		src := &record.FailureSource{LogGroup: first.Group, LogStream: first.Stream, Timestamp: first.Timestamp, RequestID: requestID}
		for i, e := range errEvents {
			if i == maxUsedLines {
				break
			}
			src.Lines = append(src.Lines, e.line())
		}
		f.Source = src
		f.FailedAt = first.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return f
}

// evidenceOf reads the failure texts of one error event.
func evidenceOf(d *inspect.Decoding, e Event) {
	msg := strings.TrimSpace(e.Message)
	if obj := jsonObject(msg); obj != nil {
		jsonEvidence(d, obj)
		return
	}
	if m := reportRE.FindStringSubmatch(msg); m != nil && m[1] == "REPORT" {
		reportEvidence(d, msg)
		return
	}
	body := msg
	if _, _, rest, ok := lambdaLine(msg); ok {
		body = strings.TrimSpace(rest)
	}
	// Node.js: "Invoke Error \t{"errorType":…,"errorMessage":…,"stack":[…]}"
	if i := strings.Index(body, "Invoke Error"); i >= 0 {
		if obj := jsonObject(strings.TrimSpace(body[i+len("Invoke Error"):])); obj != nil {
			jsonEvidence(d, obj)
			return
		}
	}
	if i := strings.Index(body, "Task timed out after"); i >= 0 {
		d.Evidence("logs.line", record.EvidenceMessage, firstLine(body[i:]))
		return
	}
	// Python's runtime: "[ERROR] ValueError: invalid literal …\nTraceback …"
	body = strings.TrimSpace(strings.TrimPrefix(body, "[ERROR]"))
	first := firstLine(body)
	if typ, m := inspect.SplitTypeMessage(first); typ != "" {
		d.Evidence("logs.line", record.EvidenceType, typ)
		d.Evidence("logs.line", record.EvidenceMessage, m)
		stackEvidence(d, "logs.stack", body)
		return
	}
	// logfmt (Go slog, logrus): err="…" carries the failure, msg="…" what failed.
	if ms := logfmtRE.FindAllStringSubmatch(first, -1); len(ms) > 0 {
		var msgText string
		for _, m := range ms {
			v := unquote(m[2])
			switch m[1] {
			case "msg", "message":
				msgText = v
			default:
				textEvidence(d, "logs."+m[1], v)
			}
		}
		if msgText != "" {
			d.Evidence("logs.msg", record.EvidenceMessage, msgText)
		}
		stackEvidence(d, "logs.stack", body)
		return
	}
	// Plain text (Java logback/log4j, Go log): the text after the level is
	// the message; exception lines in a multi-line event are the cause.
	stackEvidence(d, "logs.stack", body)
	d.Evidence("logs.line", record.EvidenceMessage, afterLevel(first))
}

// stackEvidence reads exception lines of a multi-line event: the first
// exception is the type and message, later ones ("Caused by: …") causes.
func stackEvidence(d *inspect.Decoding, field, body string) {
	n := 0
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		m := excRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if n == 0 && !strings.HasPrefix(l, "Caused by:") {
			d.Evidence(field, record.EvidenceType, m[1])
			d.Evidence(field, record.EvidenceMessage, m[2])
		} else {
			d.Evidence(field, record.EvidenceCause, strings.TrimPrefix(l, "Caused by: "))
		}
		if n++; n == 4 {
			return
		}
	}
	if n == 0 && strings.HasPrefix(strings.TrimSpace(body), "Traceback") {
		// Python: the last line is the exception, whatever its name
		// ("psycopg2.errors.SerializationFailure: could not serialize …").
		lines := strings.Split(strings.TrimSpace(body), "\n")
		if typ, msg := inspect.SplitTypeMessage(strings.TrimSpace(lines[len(lines)-1])); typ != "" {
			d.Evidence(field, record.EvidenceType, typ)
			d.Evidence(field, record.EvidenceMessage, msg)
		}
	}
	d.StackEvidence(field, body)
}

// textEvidence records a free failure text: "Type: message" is split.
func textEvidence(d *inspect.Decoding, field, v string) {
	if typ, m := inspect.SplitTypeMessage(v); typ != "" {
		d.Evidence(field, record.EvidenceType, typ)
		d.Evidence(field, record.EvidenceMessage, m)
		return
	}
	d.Evidence(field, record.EvidenceMessage, v)
}

// jsonEvidence reads a structured log event: AWS Lambda Powertools
// (Python: exception, exception_name; TypeScript/Java: error{name,
// message, stack}), the Lambda runtime's error JSON (errorType,
// errorMessage, stackTrace) and common logger keys (msg, err, error_type,
// stack_trace).
func jsonEvidence(d *inspect.Decoding, obj map[string]any) {
	if t := str(obj, "exception_name", "error_type", "errorType", "exception_type", "error.kind"); t != "" {
		d.Evidence("logs.exception_name", record.EvidenceType, t)
	}
	for _, k := range []string{"error", "err", "exception"} {
		switch v := obj[k].(type) {
		case map[string]any:
			if t := str(v, "name", "type", "kind", "class", "errorType"); t != "" {
				d.Evidence("logs."+k+".name", record.EvidenceType, t)
			}
			if m := str(v, "message", "msg", "errorMessage"); m != "" {
				d.Evidence("logs."+k+".message", record.EvidenceMessage, m)
			}
			if s := str(v, "stack", "stack_trace", "stackTrace", "trace"); s != "" {
				stackEvidence(d, "logs."+k+".stack", s)
			}
		case string:
			if strings.Contains(strings.TrimSpace(v), "\n") {
				// Powertools Python: the formatted traceback; its last line
				// is the exception.
				stackEvidence(d, "logs."+k, v)
			} else {
				textEvidence(d, "logs."+k, v)
			}
		}
	}
	if m := str(obj, "errorMessage", "error_message"); m != "" {
		d.Evidence("logs.errorMessage", record.EvidenceMessage, m)
	}
	if s := str(obj, "stack_trace", "stackTrace", "stacktrace", "stack"); s != "" {
		stackEvidence(d, "logs.stack_trace", s)
	}
	if m := str(obj, "message", "msg"); m != "" {
		d.Evidence("logs.message", record.EvidenceMessage, m)
	}
}

// reportEvidence reads a Lambda REPORT line: "Status: timeout" and
// "Error Type: Runtime.ExitError".
func reportEvidence(d *inspect.Decoding, msg string) {
	for _, f := range strings.Split(msg, "\t") {
		f = strings.TrimSpace(f)
		switch {
		case strings.HasPrefix(f, "Status: timeout"):
			d.Evidence("logs.report.status", record.EvidenceCondition, "invocation timed out (REPORT Status: timeout)")
		case strings.HasPrefix(f, "Status: "):
			d.Evidence("logs.report.status", record.EvidenceCondition, f)
		case strings.HasPrefix(f, "Error Type: "):
			d.Evidence("logs.report.error_type", record.EvidenceType, strings.TrimPrefix(f, "Error Type: "))
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return strings.TrimSpace(s)
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' {
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
		return v[1 : len(v)-1]
	}
	return v
}

// afterLevel returns a text line without its timestamp and level prefix:
// "2024-05-01 12:00:00.123 ERROR 1 --- [main] c.e.Listener : Failed …" →
// "c.e.Listener : Failed …"; lines without a level are returned whole.
func afterLevel(line string) string {
	up := strings.ToUpper(line)
	for lvl := range errorLevels {
		for _, pat := range []string{" " + lvl + " ", "[" + lvl + "] ", "\t" + lvl + "\t", lvl + ": "} {
			if i := strings.Index(up, pat); i >= 0 && i < 80 {
				rest := strings.TrimSpace(line[i+len(pat):])
				// Spring Boot: "<pid> --- [thread] logger : message"
				if j := strings.Index(rest, " : "); j >= 0 && strings.Contains(rest[:j], "---") {
					rest = strings.TrimSpace(rest[j+3:])
				}
				return rest
			}
		}
	}
	return line
}
