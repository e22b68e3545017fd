// Package inspect reads messages: scanning a queue without consuming it,
// decoding envelopes and failure context, redaction, expressions over the
// message record, grouping and fingerprints.
package inspect

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/queue"
)

// Decode fills rec.Envelope, rec.Failure and rec.Redrive from the body and
// attributes when they can be decoded. It returns the parsed body (nil when
// the body is not JSON) so callers need not parse it again.
func Decode(rec *queue.Record) any {
	parsed, ok := parseJSON(rec.Body)
	var obj map[string]any
	if ok {
		obj, _ = parsed.(map[string]any)
	}
	rec.Envelope, rec.Failure, rec.Redrive = nil, nil, nil
	if obj != nil {
		inner := obj
		if op, found := obj["original_payload"]; found {
			switch v := op.(type) {
			case map[string]any:
				inner = v
			case string:
				if p, ok := parseJSON(v); ok {
					if m, ok := p.(map[string]any); ok {
						inner = m
					}
				}
			}
		}
		rec.Envelope = envelopeFrom(inner)
		if rec.Envelope == nil && !sameMap(inner, obj) {
			rec.Envelope = envelopeFrom(obj)
		}
		rec.Failure = failureFrom(obj)
	}
	if f := failureFromAttrs(rec.Attributes); f != nil {
		if rec.Failure == nil {
			rec.Failure = f
		} else {
			mergeFailure(rec.Failure, f)
		}
	}
	if a, ok := rec.Attributes[queue.MarkerAttribute]; ok {
		var m queue.Marker
		if json.Unmarshal([]byte(a.Value), &m) == nil {
			rec.Redrive = &m
		}
	}
	return parsed
}

func sameMap(a, b map[string]any) bool {
	return len(a) == len(b) && len(a) > 0 && func() bool {
		for k := range a {
			if _, ok := b[k]; !ok {
				return false
			}
		}
		return true
	}()
}

func parseJSON(s string) (any, bool) {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(t), &v); err != nil {
		return nil, false
	}
	return v, true
}

// str returns the first string-ish value found under any of keys.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			switch t := v.(type) {
			case string:
				return t
			case float64:
				return strconv.FormatFloat(t, 'f', -1, 64)
			case bool:
				return strconv.FormatBool(t)
			}
		}
	}
	return ""
}

func envelopeFrom(m map[string]any) *queue.Envelope {
	e := &queue.Envelope{
		EventID:        str(m, "eventId", "event_id", "id"),
		EventType:      str(m, "eventType", "event_type", "detail-type", "detailType"),
		Producer:       str(m, "producer", "source"),
		CorrelationID:  str(m, "correlationId", "correlation_id", "traceId"),
		TenantID:       str(m, "tenantId", "tenant_id", "tenant"),
		IdempotencyKey: str(m, "idempotencyKey", "idempotency_key"),
		SchemaRef:      str(m, "schemaRef", "schema_ref", "dataschema", "$schema"),
		OccurredAt:     str(m, "occurredAt", "occurred_at", "time", "timestamp"),
	}
	for _, k := range []string{"eventVersion", "event_version", "version", "specversion"} {
		if v, ok := m[k]; ok && v != nil {
			if f, isNum := v.(float64); isNum && f == float64(int64(f)) {
				e.EventVersion = int64(f)
			} else {
				e.EventVersion = v
			}
			break
		}
	}
	// An envelope needs at least an event type or id to be called one.
	if e.EventType == "" && e.EventID == "" {
		return nil
	}
	return e
}

func failureFrom(m map[string]any) *queue.Failure {
	f := &queue.Failure{
		Reason:          str(m, "failure_reason", "failureReason", "dlq_reason", "error_message", "errorMessage"),
		Type:            str(m, "failure_type", "failureType", "error_type", "errorType", "exception"),
		ErrorClass:      str(m, "error_class", "errorClass"),
		ConsumerVersion: str(m, "consumer_version", "consumerVersion"),
		FailedAt:        str(m, "failed_at", "failedAt"),
	}
	if e, ok := m["error"]; ok {
		switch v := e.(type) {
		case string:
			if f.Reason == "" {
				f.Reason = v
			}
		case map[string]any:
			if f.Reason == "" {
				f.Reason = str(v, "message", "reason")
			}
			if f.Type == "" {
				f.Type = str(v, "type", "name", "code")
			}
			if f.ErrorClass == "" {
				f.ErrorClass = str(v, "class")
			}
		}
	}
	if n := str(m, "attempt_count", "attemptCount", "attempts"); n != "" {
		f.AttemptCount, _ = strconv.Atoi(n)
	}
	if *f == (queue.Failure{}) {
		return nil
	}
	return f
}

func failureFromAttrs(attrs map[string]queue.Attribute) *queue.Failure {
	if len(attrs) == 0 {
		return nil
	}
	get := func(keys ...string) string {
		for _, k := range keys {
			for name, a := range attrs {
				if strings.EqualFold(name, k) && !a.IsBinary() {
					return a.Value
				}
			}
		}
		return ""
	}
	f := &queue.Failure{
		Reason:          get("dlq_reason", "failure_reason", "error", "error_message", "errorMessage"),
		Type:            get("error_type", "failure_type", "errorType", "exception"),
		ErrorClass:      get("error_class", "errorClass"),
		ConsumerVersion: get("consumer_version"),
	}
	if n := get("attempt_count", "attempts"); n != "" {
		f.AttemptCount, _ = strconv.Atoi(n)
	}
	if *f == (queue.Failure{}) {
		return nil
	}
	return f
}

func mergeFailure(dst, src *queue.Failure) {
	if dst.Reason == "" {
		dst.Reason = src.Reason
	}
	if dst.Type == "" {
		dst.Type = src.Type
	}
	if dst.ErrorClass == "" {
		dst.ErrorClass = src.ErrorClass
	}
	if dst.AttemptCount == 0 {
		dst.AttemptCount = src.AttemptCount
	}
	if dst.ConsumerVersion == "" {
		dst.ConsumerVersion = src.ConsumerVersion
	}
}
