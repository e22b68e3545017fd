package inspect

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Job envelopes: background-job frameworks that put their own message on
// the queue. What the job is (task or class name, id, arguments) is the
// envelope and payload; what they record about earlier failures (retry
// counts, Sidekiq's error_class/error_message, Faktory's failure) is
// failure context. Celery's messages come base64-encoded over SQS; the
// body's layers are decoded before formats run (see DetectPayload), so
// these decoders see the JSON either way.
func init() {
	RegisterFormat(Format{
		Name:     "celery",
		Title:    "Celery task message (kombu envelope: base64 body, headers task/id/retries/argsrepr for protocol 2, or a protocol 1 body)",
		Priority: 40,
		Decode:   decodeCelery,
	})
	RegisterFormat(Format{
		Name:     "dramatiq",
		Title:    "Dramatiq message (actor_name, message_id, args, kwargs, options.retries, options.traceback)",
		Priority: 46,
		Decode:   decodeDramatiq,
	})
	RegisterFormat(Format{
		Name:     "rebus",
		Title:    "Rebus transport message ({\"headers\": {\"rbs2-…\"}, \"body\": base64}; rbs2-error-details on failure)",
		Priority: 41,
		Decode:   decodeRebus,
	})
	RegisterFormat(Format{
		Name:     "laravel",
		Title:    "Laravel queue job (displayName, job, uuid, attempts, maxTries, data.commandName)",
		Priority: 42,
		Decode:   decodeLaravel,
	})
	RegisterFormat(Format{
		Name:     "sidekiq",
		Title:    "Sidekiq/Resque-style job (class, args, jid, retry_count, error_class, error_message, failed_at; ActiveJob wrapper)",
		Priority: 43,
		Decode:   decodeSidekiq,
	})
	RegisterFormat(Format{
		Name:     "faktory",
		Title:    "Faktory job (jid, jobtype, args, failure: errtype, message, retry_count)",
		Priority: 44,
		Decode:   decodeFaktory,
	})
	RegisterFormat(Format{
		Name:     "activejob",
		Title:    "Rails ActiveJob payload (job_class, job_id, arguments, executions, exception_executions)",
		Priority: 45,
		Decode:   decodeActiveJob,
	})
}

// --- Celery / kombu

// decodeCelery reads a kombu message ({"body", "headers", "properties",
// "content-type", "content-encoding"}) carrying a Celery task: protocol 2
// has the task in headers (task, id, retries, argsrepr, kwargsrepr, root_id,
// origin) and the body [args, kwargs, embed]; protocol 1 has it all in the
// body {task, id, args, kwargs, retries}.
func decodeCelery(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	headers, _ := m["headers"].(map[string]any)
	props, _ := m["properties"].(map[string]any)
	body, hasBody := m["body"]
	ctype := str(m, "content-type", "content_type")
	if !hasBody || headers == nil || props == nil && ctype == "" {
		return false
	}
	raw, _ := body.(string)
	if str(props, "body_encoding") == "base64" {
		if b, err := base64.StdEncoding.DecodeString(raw); err == nil {
			raw = string(b)
		}
	}
	if str(headers, "compression") != "" {
		raw = decompress(raw)
	}
	var task any
	if strings.Contains(ctype, "json") || ctype == "" {
		task, _ = parseText(raw)
	}
	name, id := str(headers, "task"), str(headers, "id")
	p := map[string]any{}
	retries := headers["retries"]
	switch t := task.(type) {
	case []any: // protocol 2: [args, kwargs, embed]
		if len(t) > 0 {
			p["args"] = t[0]
		}
		if len(t) > 1 {
			p["kwargs"] = t[1]
		}
	case map[string]any: // protocol 1
		if name == "" {
			name, id = str(t, "task"), str(t, "id")
		}
		p["args"], p["kwargs"] = t["args"], t["kwargs"]
		if retries == nil {
			retries = t["retries"]
		}
	}
	if name == "" {
		return false // a kombu message, not a Celery task
	}
	p["task"], p["id"] = name, id
	for _, k := range []string{"argsrepr", "kwargsrepr", "eta", "expires", "group", "root_id", "parent_id"} {
		if v, ok := headers[k]; ok && v != nil {
			p[k] = v
		}
	}
	if task == nil && raw != "" {
		p["body_content_type"] = ctype // pickle, msgpack, yaml: not decoded
	}
	d.BodyHandled()
	if n, ok := retries.(float64); ok && n > 0 {
		d.Attempts(strconv.Itoa(int(n) + 1))
	}
	// Failure keys an application put in the headers (exc, error, …) or
	// a protocol 1 body.
	genericObject(d, "body.headers", headers, 0)
	if t, ok := task.(map[string]any); ok {
		genericObject(d, "payload", t, 0)
	}
	d.SetEnvelope(&record.Envelope{
		EventID: id, EventType: name, Producer: str(headers, "origin"),
		CorrelationID: firstNonEmpty(str(headers, "root_id"), str(props, "correlation_id")),
	})
	d.payload, d.wrapped = p, true
	return true
}

// decompress inflates a kombu-compressed body, zlib or gzip by its magic
// bytes (kombu's "application/x-gzip" is zlib); other methods (bzip2,
// lzma, zstd) are left as they are.
func decompress(raw string) string {
	var r io.ReadCloser
	var err error
	b := []byte(raw)
	switch {
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b:
		r, err = gzip.NewReader(bytes.NewReader(b))
	case isZlib(b):
		r, err = zlib.NewReader(bytes.NewReader(b))
	default:
		return raw
	}
	if err != nil {
		return raw
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxInflate))
	if err != nil && len(out) == 0 {
		return raw
	}
	return string(out)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// --- Dramatiq

// decodeDramatiq reads a Dramatiq message: {"queue_name", "actor_name",
// "args", "kwargs", "options": {"retries", "max_retries", "traceback",
// …}, "message_id", "message_timestamp"}. The Retries middleware keeps
// the last exception's traceback in options.traceback.
func decodeDramatiq(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	actor := str(m, "actor_name")
	if actor == "" || str(m, "message_id") == "" {
		return false
	}
	if _, ok := m["args"]; !ok {
		return false
	}
	d.BodyHandled()
	if o, ok := m["options"].(map[string]any); ok {
		if n, ok := o["retries"].(float64); ok && n > 0 {
			d.Attempts(strconv.Itoa(int(n) + 1))
		}
		if tb := str(o, "traceback"); tb != "" {
			d.TextEvidence("body.options.traceback", "stack", tb)
		}
		genericObject(d, "body.options", o, 0)
	}
	d.SetEnvelope(&record.Envelope{EventID: str(m, "message_id"), EventType: actor, OccurredAt: epochOrText(m["message_timestamp"])})
	d.SetPayload(map[string]any{"args": m["args"], "kwargs": m["kwargs"]})
	return true
}

// --- Rebus

// decodeRebus reads a Rebus transport message: {"headers": {"rbs2-msg-id",
// "rbs2-msg-type", "rbs2-error-details", "rbs2-source-queue", …}, "body":
// base64}, or rbs2-* message attributes.
func decodeRebus(d *Decoding) bool {
	if d.Obj["headers"] == nil && d.Obj["Headers"] == nil && !d.HasAttrPrefix("rbs2-") {
		return false // neither rbs2- headers nor a transport message
	}
	headers := map[string]string{}
	where := "attributes."
	for name, a := range d.Rec.Attributes {
		if !a.IsBinary() && strings.HasPrefix(name, "rbs2-") {
			headers[name] = a.Value
			d.Use(name)
		}
	}
	var body any
	if d.Obj != nil {
		h, _ := d.Obj["headers"].(map[string]any)
		if h == nil {
			h, _ = d.Obj["Headers"].(map[string]any)
		}
		rebus := false
		for k := range h {
			if strings.HasPrefix(k, "rbs2-") {
				rebus = true
				break
			}
		}
		if rebus {
			if len(headers) == 0 {
				where = "body.headers."
			}
			for k, v := range h {
				if s := scalarText(v); s != "" {
					if _, dup := headers[k]; !dup {
						headers[k] = s
					}
				}
			}
			d.BodyHandled()
			b, _ := d.Obj["body"].(string)
			if b == "" {
				b, _ = d.Obj["Body"].(string)
			}
			if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
				body = parseMaybeJSON(string(raw))
			} else if b != "" {
				body = parseMaybeJSON(b)
			}
		}
	}
	if len(headers) == 0 {
		return false
	}
	if det := headers["rbs2-error-details"]; det != "" {
		d.TextEvidence(where+"rbs2-error-details", record.EvidenceMessage, det)
	}
	e := &record.Envelope{
		EventID:       headers["rbs2-msg-id"],
		EventType:     enclosedType(headers["rbs2-msg-type"]),
		CorrelationID: headers["rbs2-corr-id"],
		Producer:      headers["rbs2-sender-address"],
		OccurredAt:    headers["rbs2-senttime"],
	}
	if body != nil {
		d.SetPayload(body)
		mergeEnvelope(e, EnvelopeOf(body))
	}
	d.SetEnvelope(e)
	return true
}

// --- Laravel

// decodeLaravel reads a Laravel queue job payload: {"uuid", "displayName",
// "job": "Illuminate\\Queue\\CallQueuedHandler@call", "maxTries",
// "maxExceptions", "failOnTimeout", "backoff", "timeout", "retryUntil",
// "data": {"commandName", "command"}, "attempts"}.
func decodeLaravel(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	name, _ := m["displayName"].(string)
	job, _ := m["job"].(string)
	if name == "" || job == "" {
		return false
	}
	if _, ok := m["data"]; !ok {
		if _, ok := m["uuid"]; !ok {
			return false
		}
	}
	if n, ok := m["attempts"].(float64); ok && n > 0 {
		d.Attempts(strconv.Itoa(int(n)))
	}
	if data, ok := m["data"].(map[string]any); ok {
		if cn := str(data, "commandName"); cn != "" {
			name = cn
		}
		d.SetPayload(data)
	}
	d.SetEnvelope(&record.Envelope{EventID: firstNonEmpty(str(m, "uuid"), str(m, "id")), EventType: name})
	// Failure keys next to the job's own (an app's "exception") are read
	// by the generic body scan; data is the job's payload.
	return true
}

// --- Sidekiq / Resque / ActiveJob

// decodeSidekiq reads a Sidekiq job hash: {"class", "args", "jid", "queue",
// "retry", "created_at", "enqueued_at"} and, once it failed,
// "error_class", "error_message", "failed_at", "retry_count",
// "retried_at", "error_backtrace" (frames, compressed since Sidekiq 6).
// Resque jobs are {"class", "args"}. ActiveJob's Sidekiq wrapper names
// the real job in "wrapped" and args[0].
func decodeSidekiq(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	class, _ := m["class"].(string)
	args, isArgs := m["args"].([]any)
	if class == "" || !isArgs {
		return false
	}
	_, jid := m["jid"].(string)
	_, q := m["queue"].(string)
	if !jid && !q && len(m) > 3 {
		return false // some other {class, args, …} object
	}
	d.BodyHandled()
	name := class
	if w, _ := m["wrapped"].(string); w != "" {
		name = w
	}
	var payload any = args
	if len(args) == 1 {
		if aj, ok := args[0].(map[string]any); ok && str(aj, "job_class") != "" {
			name = str(aj, "job_class")
			payload = aj["arguments"]
			if n, ok := aj["executions"].(float64); ok && n > 0 {
				d.Attempts(strconv.Itoa(int(n)))
			}
		}
	}
	d.Evidence("body.error_class", record.EvidenceType, str(m, "error_class"))
	if msg := str(m, "error_message"); msg != "" {
		d.TextEvidence("body.error_message", record.EvidenceMessage, msg)
	}
	if n, ok := m["retry_count"].(float64); ok {
		d.Attempts(strconv.Itoa(int(n) + 1))
	}
	d.FailedAt(epochOrText(m["failed_at"]))
	// Other failure keys an app added next to Sidekiq's own.
	for _, k := range []string{"error", "exception", "last_error"} {
		if v, ok := m[k]; ok {
			genericValue(d, "body."+k, record.EvidenceMessage, v, 0)
		}
	}
	d.SetEnvelope(&record.Envelope{EventID: str(m, "jid"), EventType: name, OccurredAt: epochOrText(m["created_at"])})
	d.SetPayload(payload)
	return true
}

// decodeFaktory reads a Faktory job: {"jid", "jobtype", "args", "queue",
// "retry", "created_at", "failure": {"retry_count", "failed_at",
// "next_at", "message", "errtype", "backtrace"}}.
func decodeFaktory(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	jobtype, _ := m["jobtype"].(string)
	_, isArgs := m["args"].([]any)
	if jobtype == "" || !isArgs || str(m, "jid") == "" {
		return false
	}
	d.BodyHandled()
	if f, ok := m["failure"].(map[string]any); ok {
		d.Evidence("body.failure.errtype", record.EvidenceType, str(f, "errtype"))
		if msg := str(f, "message"); msg != "" {
			d.TextEvidence("body.failure.message", record.EvidenceMessage, msg)
		}
		if n, ok := f["retry_count"].(float64); ok {
			d.Attempts(strconv.Itoa(int(n) + 1))
		}
		d.FailedAt(str(f, "failed_at"))
	}
	d.SetEnvelope(&record.Envelope{EventID: str(m, "jid"), EventType: jobtype, OccurredAt: str(m, "created_at")})
	d.SetPayload(m["args"])
	return true
}

// decodeActiveJob reads an ActiveJob payload as Rails' SQS adapters
// (Shoryuken, aws-sdk-rails) send it: {"job_class", "job_id",
// "provider_job_id", "queue_name", "arguments", "executions",
// "exception_executions", "enqueued_at"}.
func decodeActiveJob(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	class := str(m, "job_class")
	if class == "" || str(m, "job_id") == "" {
		return false
	}
	if _, ok := m["arguments"]; !ok {
		return false
	}
	if n, ok := m["executions"].(float64); ok && n > 0 {
		d.Attempts(strconv.Itoa(int(n)))
	}
	// retry_on counts executions per exception list: {"[Net::OpenTimeout]": 3}.
	// Other failure keys next to the job's own are read by the generic scan.
	if ee, ok := m["exception_executions"].(map[string]any); ok {
		for _, k := range sortedKeys(ee) {
			if n, _ := ee[k].(float64); n <= 0 {
				continue
			}
			for _, typ := range strings.Split(strings.Trim(k, "[]"), ",") {
				d.Evidence("body.exception_executions", record.EvidenceType, strings.TrimSpace(typ))
			}
		}
	}
	d.SetEnvelope(&record.Envelope{EventID: str(m, "job_id"), EventType: class, OccurredAt: str(m, "enqueued_at")})
	d.SetPayload(m["arguments"])
	return true
}

// epochOrText renders a Unix time in seconds (Sidekiq's floats) as RFC
// 3339, or returns text as is.
func epochOrText(v any) string {
	switch t := v.(type) {
	case float64:
		if t > 1e12 { // milliseconds
			t /= 1000
		}
		if t <= 0 || t > 1e11 {
			return ""
		}
		sec, frac := math.Modf(t)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(record.TimeFormat)
	case string:
		return t
	}
	return ""
}
