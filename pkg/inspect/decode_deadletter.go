package inspect

import (
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Dead-letter conventions of other clouds and job systems, decoded with
// their meaning: a count of deliveries or "max delivery count exceeded"
// says retries ran out (a condition), never why; the why is in the
// description, the last outcome or the failure record next to it.
func init() {
	RegisterFormat(Format{
		Name:     "azure-service-bus",
		Title:    "Azure Service Bus dead-lettered message (DeadLetterReason / DeadLetterErrorDescription properties)",
		Priority: 12,
		Decode:   decodeServiceBus,
	})
	RegisterFormat(Format{
		Name:     "pubsub-dead-letter",
		Title:    "Google Pub/Sub dead-lettered message (CloudPubSubDeadLetterSource* attributes: delivery count, subscription)",
		Priority: 13,
		Decode:   decodePubSubDeadLetter,
	})
	RegisterFormat(Format{
		Name:     "event-grid-dead-letter",
		Title:    "Azure Event Grid dead-letter event (deadLetterReason, deliveryAttempts, lastDeliveryOutcome, lastHttpCodeReceived)",
		Priority: 25,
		Decode:   decodeEventGridDeadLetter,
	})
	RegisterFormat(Format{
		Name:     "nats-advisory",
		Title:    "NATS JetStream advisory (io.nats.jetstream.advisory.v1.max_deliver / terminated / nak)",
		Priority: 26,
		Decode:   decodeNATSAdvisory,
	})
	RegisterFormat(Format{
		Name:     "hangfire",
		Title:    "Hangfire job with its Failed state (State.Name Failed; Data.ExceptionType, ExceptionMessage, ExceptionDetails)",
		Priority: 47,
		Decode:   decodeHangfire,
	})
}

// retriesExhausted names reasons that only say the deliveries ran out.
func retriesExhausted(reason string) bool {
	switch strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(reason, "_", ""), " ", "")) {
	case "maxdeliverycountexceeded", "maxdeliveryattemptsexceeded", "maxdeliver", "maxdeliveriesexceeded",
		"retriesexhausted", "maxretriesexceeded", "maxattemptsexceeded":
		return true
	}
	return false
}

func decodeServiceBus(d *Decoding) bool {
	reason, ok := d.Attr("DeadLetterReason")
	if !ok {
		return false
	}
	desc, _ := d.Attr("DeadLetterErrorDescription")
	switch {
	case retriesExhausted(reason):
		d.Evidence("attributes.DeadLetterReason", record.EvidenceCondition, "max delivery count exceeded (retries exhausted; the reason is not recorded)")
	case reason == "TTLExpiredException":
		d.Evidence("attributes.DeadLetterReason", record.EvidenceCondition, "TTLExpiredException: the message's time to live ran out before it was consumed")
		return true
	default:
		d.TextEvidence("attributes.DeadLetterReason", record.EvidenceType, reason)
	}
	if desc != "" && !retriesExhausted(reason) {
		d.TextEvidence("attributes.DeadLetterErrorDescription", record.EvidenceMessage, desc)
	}
	return true
}

func decodePubSubDeadLetter(d *Decoding) bool {
	n, ok := d.Attr("CloudPubSubDeadLetterSourceDeliveryCount")
	if !ok {
		return false
	}
	d.Use("CloudPubSubDeadLetterSourceSubscription", "CloudPubSubDeadLetterSourceSubscriptionProject", "CloudPubSubDeadLetterSourceTopicPublishTime")
	d.Attempts(n)
	d.Evidence("attributes.CloudPubSubDeadLetterSourceDeliveryCount", record.EvidenceCondition,
		"delivered "+strings.TrimSpace(n)+" times (max delivery attempts reached; Pub/Sub records no reason)")
	return true
}

func decodeEventGridDeadLetter(d *Decoding) bool {
	var ev map[string]any
	switch t := d.Parsed.(type) {
	case map[string]any:
		ev = t
	case []any:
		if len(t) != 1 {
			return false
		}
		ev, _ = t[0].(map[string]any)
	}
	if ev == nil {
		return false
	}
	reason, _ := ev["deadLetterReason"].(string)
	if reason == "" {
		return false
	}
	d.BodyHandled()
	if retriesExhausted(reason) {
		d.Evidence("body.deadLetterReason", record.EvidenceCondition, "max delivery attempts exceeded (retries exhausted)")
	} else {
		d.TextEvidence("body.deadLetterReason", record.EvidenceMessage, reason)
	}
	if n, ok := ev["deliveryAttempts"].(float64); ok {
		d.Attempts(strconv.Itoa(int(n)))
	}
	outcome, _ := ev["lastDeliveryOutcome"].(string)
	// What the endpoint did on the last attempt. NotFound, Unauthorized
	// and Forbidden are about the endpoint (a wrong URL or key: fix it,
	// then replay), not the event.
	endpoint := false
	switch outcome {
	case "":
	case "TimedOut":
		d.Evidence("body.lastDeliveryOutcome", record.EvidenceCode, "TimedOut: the endpoint did not answer in time")
	case "Busy":
		d.Evidence("body.lastDeliveryOutcome", record.EvidenceCode, "Busy: the endpoint was busy (server busy)")
	case "NotFound":
		d.Evidence("body.lastDeliveryOutcome", record.EvidenceCode, "NotFound: the endpoint does not exist (function not found)")
		endpoint = true
	case "Unauthorized", "Forbidden":
		d.Evidence("body.lastDeliveryOutcome", record.EvidenceCode, outcome+": the endpoint refused the credentials (access denied)")
		endpoint = true
	default:
		d.Evidence("body.lastDeliveryOutcome", record.EvidenceCondition, outcome)
	}
	if n, ok := ev["lastHttpCodeReceived"].(float64); ok && n >= 400 && !endpoint {
		d.Evidence("body.lastHttpCodeReceived", record.EvidenceStatus, strconv.Itoa(int(n)))
	}
	typ, _ := ev["eventType"].(string)
	if typ == "" {
		typ, _ = ev["type"].(string)
	}
	d.SetEnvelope(&record.Envelope{EventID: str(ev, "id"), EventType: typ, OccurredAt: str(ev, "eventTime", "time")})
	if data, ok := ev["data"]; ok {
		d.SetPayload(data)
	}
	return true
}

func decodeNATSAdvisory(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	typ, _ := m["type"].(string)
	kind, ok := strings.CutPrefix(typ, "io.nats.jetstream.advisory.v1.")
	if !ok {
		return false
	}
	d.BodyHandled()
	if n, ok := m["deliveries"].(float64); ok {
		d.Attempts(strconv.Itoa(int(n)))
	}
	switch kind {
	case "max_deliver":
		d.Evidence("body.type", record.EvidenceCondition, "max deliveries exceeded (retries exhausted; the advisory does not say why)")
	default:
		if r := str(m, "reason", "error", "description"); r != "" {
			d.TextEvidence("body.reason", record.EvidenceMessage, r)
		}
	}
	d.SetEnvelope(&record.Envelope{EventID: str(m, "id"), EventType: typ, OccurredAt: str(m, "timestamp")})
	return true
}

func decodeHangfire(d *Decoding) bool {
	m := d.Obj
	if m == nil {
		return false
	}
	state, _ := m["State"].(map[string]any)
	job, _ := m["Job"].(map[string]any)
	if state == nil || job == nil || str(state, "Name") == "" {
		return false
	}
	d.BodyHandled()
	data, _ := state["Data"].(map[string]any)
	if data != nil {
		if t := str(data, "ExceptionType"); t != "" {
			d.Evidence("body.State.Data.ExceptionType", record.EvidenceType, t)
		}
		if msg := str(data, "ExceptionMessage"); msg != "" {
			d.TextEvidence("body.State.Data.ExceptionMessage", record.EvidenceMessage, msg)
		}
		if det := str(data, "ExceptionDetails"); det != "" {
			d.StackEvidence("body.State.Data.ExceptionDetails", det)
		}
		d.FailedAt(str(data, "FailedAt"))
	}
	d.SetEnvelope(&record.Envelope{EventType: str(job, "Type")})
	d.SetPayload(job["Arguments"])
	return true
}
