package inspect

import (
	"github.com/dlqctl/dlqctl/pkg/record"
)

// SNS notification wrapper (an SQS subscription without raw message
// delivery): {"Type": "Notification", "MessageId", "TopicArn", "Subject",
// "Message": "<text, often JSON>", "Timestamp", "MessageAttributes":
// {"name": {"Type", "Value"}}}. The original payload is Message, parsed
// when it is JSON; the envelope comes from it (falling back to the
// notification's id, topic and time). SNS records no failure: failure
// context can only come from attributes the consumer added.
func init() {
	RegisterFormat(Format{
		Name:     "sns",
		Title:    "SNS notification wrapper (Type, MessageId, TopicArn, Message)",
		Priority: 70,
		Decode:   decodeSNS,
	})
	registerEventShape(eventShape{name: "sns", priority: 30, envelope: func(m map[string]any, depth int) (*record.Envelope, bool) {
		msg, ok := snsMessage(m)
		if !ok {
			return nil, false
		}
		return snsEnvelope(m, parseMaybeJSON(msg), depth), true
	}})
}

// snsMessage returns the Message of an SNS notification.
func snsMessage(m map[string]any) (string, bool) {
	msg, ok := m["Message"].(string)
	if !ok {
		return "", false
	}
	if t, _ := m["Type"].(string); t != "Notification" {
		return "", false
	}
	if _, ok := m["TopicArn"]; !ok {
		return "", false
	}
	return msg, true
}

func decodeSNS(d *Decoding) bool {
	if d.Obj == nil {
		return false
	}
	msg, ok := snsMessage(d.Obj)
	if !ok {
		return false
	}
	d.BodyHandled()
	p := parseMaybeJSON(msg)
	d.SetPayload(p)
	d.SetEnvelope(snsEnvelope(d.Obj, p, 0))
	// Failure keys among the SNS message attributes ({"Type", "Value"}).
	if ma, ok := d.Obj["MessageAttributes"].(map[string]any); ok {
		var buf [64]byte
		for _, k := range sortedKeys(ma) {
			a, ok := ma[k].(map[string]any)
			if !ok {
				continue
			}
			if kind := genericKind(buf[:], k); kind != "" && kind != record.EvidenceStatus {
				if s, ok := a["Value"].(string); ok {
					genericValue(d, "body.MessageAttributes."+k, kind, parseMaybeJSON(s), 0)
				}
			}
		}
	}
	// A consumer that re-published the failure inside the message.
	if inner, ok := p.(map[string]any); ok {
		genericObject(d, "payload", inner, 0)
	}
	return true
}

func snsEnvelope(n map[string]any, payload any, depth int) *record.Envelope {
	e := envelopeOf(payload, depth+1)
	fallback := &record.Envelope{
		EventID:    str(n, "MessageId"),
		EventType:  str(n, "Subject"),
		Producer:   record.ARNName(str(n, "TopicArn"), "sns"),
		OccurredAt: str(n, "Timestamp"),
	}
	if ma, ok := n["MessageAttributes"].(map[string]any); ok {
		for _, k := range []string{"eventType", "event_type", "type"} {
			if a, ok := ma[k].(map[string]any); ok {
				if s := str(a, "Value"); s != "" {
					fallback.EventType = s
					break
				}
			}
		}
	}
	if e == nil {
		return fallback
	}
	mergeEnvelope(e, fallback)
	return e
}
