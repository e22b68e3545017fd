package inspect

import "github.com/dlqctl/dlqctl/pkg/record"

// EventBridge target dead-letter queue: the body is the event EventBridge
// could not deliver; EventBridge adds the attributes RULE_ARN, TARGET_ARN,
// ERROR_CODE (CONNECTION_FAILURE, THROTTLING, NO_PERMISSIONS, …),
// ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION (MaximumRetryAttempts or
// MaximumEventAgeInSeconds) and RETRY_ATTEMPTS.
//
// The event itself (also as a Lambda payload, an SNS message, …) is read by
// the eventbridge-event shape: "detail-type" is the event type, "source"
// the producer, "detail" the payload; "version" is the EventBridge envelope
// version ("0"), never the event's schema version. A schema version inside
// detail (detail.eventVersion, detail.metadata.schemaVersion, …) is.
func init() {
	RegisterFormat(Format{
		Name:     "eventbridge",
		Title:    "EventBridge target DLQ (attributes RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION, RETRY_ATTEMPTS; body is the event)",
		Priority: 20,
		Decode:   decodeEventBridgeDLQ,
	})
	registerEventShape(eventShape{name: "eventbridge-event", priority: 10, envelope: eventBridgeEnvelope})
}

func decodeEventBridgeDLQ(d *Decoding) bool {
	_, hasRule := d.Attr("RULE_ARN")
	_, hasTarget := d.Attr("TARGET_ARN")
	code, hasCode := d.Attr("ERROR_CODE")
	if !((hasRule || hasTarget) && (hasCode || hasRule)) {
		return false
	}
	d.Evidence("attributes.ERROR_CODE", record.EvidenceCode, code)
	if msg, ok := d.Attr("ERROR_MESSAGE"); ok {
		// API destinations put the target's response here, often JSON.
		if v, isJSON := parseJSON(msg); isJSON {
			if !genericValue(d, "attributes.ERROR_MESSAGE", record.EvidenceMessage, v, 0) {
				d.Evidence("attributes.ERROR_MESSAGE", record.EvidenceMessage, msg)
			}
		} else {
			d.Evidence("attributes.ERROR_MESSAGE", record.EvidenceMessage, msg)
		}
	}
	if c, ok := d.Attr("EXHAUSTED_RETRY_CONDITION"); ok {
		d.Evidence("attributes.EXHAUSTED_RETRY_CONDITION", record.EvidenceCondition, c)
	}
	if n, ok := d.Attr("RETRY_ATTEMPTS"); ok {
		d.Attempts(n)
	}
	if d.Obj != nil {
		d.BodyHandled() // the body is the event, not a failure report
		if detail, ok := d.Obj["detail"]; ok {
			d.SetPayload(detail)
			d.SetEnvelope(EnvelopeOf(d.Obj))
		} else {
			d.SetEnvelope(EnvelopeOf(d.Obj))
		}
	}
	return true
}

// eventBridgeEnvelope reads an EventBridge event: {"version": "0", "id",
// "detail-type", "source", "account", "time", "region", "resources",
// "detail"}.
func eventBridgeEnvelope(m map[string]any, depth int) (*record.Envelope, bool) {
	dt, ok := m["detail-type"].(string)
	if !ok {
		return nil, false
	}
	if _, ok := m["source"]; !ok {
		return nil, false
	}
	e := &record.Envelope{
		EventID:    str(m, "id"),
		EventType:  dt,
		Producer:   str(m, "source"),
		OccurredAt: str(m, "time"),
	}
	if detail, ok := m["detail"].(map[string]any); ok {
		if inner := genericEnvelope(detail); inner != nil {
			// The detail's own metadata (tenant, correlation id, and the
			// event's schema version when it names one).
			inner.EventID, inner.EventType, inner.Producer = "", "", ""
			if !inner.VersionIsSchema {
				inner.EventVersion = nil
			}
			mergeEnvelope(e, inner)
		} else if v, ok := detail["eventVersion"]; ok {
			e.EventVersion, e.VersionIsSchema = versionValue(v), true
		}
	}
	return e, true
}

func init() {
	RegisterFormat(Format{
		Name:     "eventbridge-event",
		Title:    "EventBridge event as the body, without failure attributes (detail-type, source, detail)",
		Priority: 75,
		Decode:   decodeEventBridgeEvent,
	})
}

func decodeEventBridgeEvent(d *Decoding) bool {
	if d.Obj == nil {
		return false
	}
	e, ok := eventBridgeEnvelope(d.Obj, 0)
	if !ok {
		return false
	}
	if detail, ok := d.Obj["detail"]; ok {
		d.SetPayload(detail)
	}
	d.SetEnvelope(e)
	return true
}
