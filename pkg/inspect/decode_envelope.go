package inspect

import (
	"slices"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// An event shape recognises a well-known event structure (an EventBridge
// event, a CloudEvent, an SNS notification, AWS service records) wherever
// it appears: as the body, or as the original payload inside a DLQ format
// (a Lambda async DLQ body is the event Lambda was invoked with; a Lambda
// destination record's requestPayload may be an EventBridge event). It
// returns the envelope, and whether it matched.
type eventShape struct {
	name     string
	priority int
	envelope func(m map[string]any, depth int) (*record.Envelope, bool)
}

var eventShapes []eventShape

func registerEventShape(s eventShape) {
	eventShapes = append(eventShapes, s)
	slices.SortStableFunc(eventShapes, func(a, b eventShape) int { return a.priority - b.priority })
}

// EnvelopeOf decodes the envelope of an event (nil when it has none): a
// known event shape, or the generic envelope keys (eventId, eventType,
// eventVersion, producer, tenantId, ...).
func EnvelopeOf(v any) *record.Envelope { return envelopeOf(v, 0) }

func envelopeOf(v any, depth int) *record.Envelope {
	m, ok := v.(map[string]any)
	if !ok || depth > 4 {
		return nil
	}
	for _, s := range eventShapes {
		if e, ok := s.envelope(m, depth); ok {
			return e
		}
	}
	return genericEnvelope(m)
}

// Version keys that name the event's schema version, and the bare
// "version", which often names something else (an envelope or record
// format version) and is shown but never compared with supported versions.
var (
	schemaVersionKeys = []string{"eventVersion", "event_version", "schemaVersion", "schema_version", "messageVersion", "message_version", "dataVersion", "data_version", "payloadVersion", "payload_version"}
	metadataKeys      = []string{"metadata", "meta", "header", "headers", "envelope"}
)

func genericEnvelope(m map[string]any) *record.Envelope {
	e := genericEnvelopeFlat(m)
	// {"metadata": {"eventType": …, "eventVersion": …}, "data": {…}}
	for _, k := range metadataKeys {
		inner, ok := m[k].(map[string]any)
		if !ok {
			continue
		}
		if ie := genericEnvelopeFlat(inner); ie != nil {
			if e == nil {
				e = ie
			} else {
				mergeEnvelope(e, ie)
			}
		}
	}
	return e
}

func genericEnvelopeFlat(m map[string]any) *record.Envelope {
	id := str(m, "eventId", "event_id", "messageId", "message_id", "id")
	typ := str(m, "eventType", "event_type", "detail-type", "detailType", "messageType", "message_type", "eventName", "event_name")
	// An envelope needs at least an event type or id to be called one
	// (checked before the other keys are looked up: most objects are not
	// envelopes).
	if typ == "" && id == "" {
		return nil
	}
	e := &record.Envelope{
		EventID:        id,
		EventType:      typ,
		Producer:       str(m, "producer", "source"),
		CorrelationID:  str(m, "correlationId", "correlation_id", "traceId"),
		TenantID:       str(m, "tenantId", "tenant_id", "tenant"),
		IdempotencyKey: str(m, "idempotencyKey", "idempotency_key"),
		SchemaRef:      str(m, "schemaRef", "schema_ref", "dataschema", "$schema"),
		OccurredAt:     str(m, "occurredAt", "occurred_at", "time", "timestamp"),
	}
	for _, k := range schemaVersionKeys {
		if v, ok := m[k]; ok && v != nil {
			e.EventVersion, e.VersionIsSchema = versionValue(v), true
			return e
		}
	}
	if v, ok := m["version"]; ok && v != nil {
		e.EventVersion = versionValue(v)
	}
	return e
}

// versionValue keeps integral numbers as int64 (3, not 3.0).
func versionValue(v any) any {
	if f, isNum := v.(float64); isNum && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// mergeEnvelope fills the empty fields of dst from src.
func mergeEnvelope(dst, src *record.Envelope) {
	if src == nil {
		return
	}
	fill := func(d *string, s string) {
		if *d == "" {
			*d = s
		}
	}
	fill(&dst.EventID, src.EventID)
	fill(&dst.EventType, src.EventType)
	fill(&dst.Producer, src.Producer)
	fill(&dst.CorrelationID, src.CorrelationID)
	fill(&dst.TenantID, src.TenantID)
	fill(&dst.IdempotencyKey, src.IdempotencyKey)
	fill(&dst.SchemaRef, src.SchemaRef)
	fill(&dst.OccurredAt, src.OccurredAt)
	if src.EventVersion != nil && (dst.EventVersion == nil || (src.VersionIsSchema && !dst.VersionIsSchema)) {
		dst.EventVersion, dst.VersionIsSchema = src.EventVersion, src.VersionIsSchema
	}
}
