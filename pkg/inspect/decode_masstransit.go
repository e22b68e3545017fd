package inspect

import (
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// MassTransit error (_error) and skipped (_skipped) queues: the fault is in
// headers — message attributes on SQS, or the envelope's "headers" object
// when they did not fit — MT-Fault-ExceptionType, MT-Fault-Message,
// MT-Fault-StackTrace, MT-Fault-ConsumerType, MT-Fault-MessageType,
// MT-Fault-Timestamp, MT-Fault-RetryCount and MT-Reason ("fault" for a
// consumer that threw; a skipped message has no consumer for its type).
// The body is the MassTransit envelope: {"messageId", "correlationId",
// "conversationId", "sourceAddress", "destinationAddress", "messageType":
// ["urn:message:Namespace:Type"], "message": {…}, "sentTime", "headers"}.
func init() {
	RegisterFormat(Format{
		Name:     "masstransit",
		Title:    "MassTransit error/skipped queue (MT-Fault-* and MT-Reason headers; envelope with messageType urn:message:…)",
		Priority: 30,
		Decode:   decodeMassTransit,
	})
}

func decodeMassTransit(d *Decoding) bool {
	if !d.HasAttrPrefix("MT-") && (d.Obj == nil || d.Obj["messageType"] == nil) {
		return false // neither MT- headers nor an envelope
	}
	headers := map[string]string{}
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if !a.IsBinary() && len(name) > 3 && strings.EqualFold(name[:3], "MT-") {
			headers[strings.ToLower(name)] = a.Value
			d.Use(name)
		}
	}
	var env map[string]any
	if d.Obj != nil {
		if mt, ok := d.Obj["messageType"].([]any); ok && len(mt) > 0 {
			if s, _ := mt[0].(string); strings.HasPrefix(s, "urn:message:") {
				env = d.Obj
			}
		}
		if env != nil {
			if h, ok := env["headers"].(map[string]any); ok {
				for _, k := range sortedKeys(h) {
					v := h[k]
					if len(k) > 3 && strings.EqualFold(k[:3], "MT-") {
						if s := scalarText(v); s != "" {
							if _, dup := headers[strings.ToLower(k)]; !dup {
								headers[strings.ToLower(k)] = s
							}
						}
					}
				}
			}
		}
	}
	if len(headers) == 0 && env == nil {
		return false
	}
	h := func(k string) string { return headers[strings.ToLower(k)] }
	d.Evidence("MT-Fault-ExceptionType", record.EvidenceType, h("MT-Fault-ExceptionType"))
	d.Evidence("MT-Fault-Message", record.EvidenceMessage, h("MT-Fault-Message"))
	if st := h("MT-Fault-StackTrace"); st != "" {
		d.StackEvidence("MT-Fault-StackTrace", st)
	}
	reason := strings.ToLower(strings.TrimSpace(h("MT-Reason")))
	switch {
	case strings.Contains(reason, "skip") || strings.Contains(reason, "dead"):
		d.Evidence("MT-Reason", record.EvidenceCondition, "skipped: no consumer on the endpoint handles this message type (MT-Reason "+h("MT-Reason")+")")
	case reason != "" && !hasMTFault(headers):
		d.Evidence("MT-Reason", record.EvidenceCondition, h("MT-Reason"))
	}
	d.Attempts(h("MT-Fault-RetryCount"))
	d.FailedAt(h("MT-Fault-Timestamp"))
	if env != nil {
		d.BodyHandled()
		e := &record.Envelope{
			EventID:       str(env, "messageId"),
			CorrelationID: str(env, "correlationId", "conversationId"),
			Producer:      str(env, "sourceAddress"),
			OccurredAt:    str(env, "sentTime"),
		}
		if mt, ok := env["messageType"].([]any); ok && len(mt) > 0 {
			s, _ := mt[0].(string)
			e.EventType = strings.TrimPrefix(s, "urn:message:")
		}
		if msg, ok := env["message"]; ok {
			d.SetPayload(msg)
			mergeEnvelope(e, EnvelopeOf(msg))
		}
		d.SetEnvelope(e)
	} else if d.Obj != nil {
		d.SetEnvelope(EnvelopeOf(d.Obj))
	}
	return true
}

func hasMTFault(headers map[string]string) bool {
	for k := range headers {
		if strings.HasPrefix(k, "mt-fault-") {
			return true
		}
	}
	return false
}
