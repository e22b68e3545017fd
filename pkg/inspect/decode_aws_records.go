package inspect

import "github.com/dlqctl/dlqctl/pkg/record"

// AWS service event records — {"Records": [{"eventSource": "aws:s3",
// "eventName", "eventVersion", "eventTime", …}]}, and {"Records": [{"EventSource":
// "aws:sns", "Sns": {…}}]} — as a Lambda event or an original payload. The
// envelope is the first record's: eventName as the event type, the
// service as the producer. eventVersion there is the service's record
// format version, not an application schema version.
func init() {
	registerEventShape(eventShape{name: "aws-records", priority: 40, envelope: awsRecordsEnvelope})
}

func awsRecordsEnvelope(m map[string]any, depth int) (*record.Envelope, bool) {
	recs, ok := m["Records"].([]any)
	if !ok || len(recs) == 0 {
		return nil, false
	}
	r, ok := recs[0].(map[string]any)
	if !ok {
		return nil, false
	}
	src := str(r, "eventSource", "EventSource")
	if src == "" {
		return nil, false
	}
	if sns, ok := r["Sns"].(map[string]any); ok {
		if msg, ok := sns["Message"].(string); ok {
			return snsEnvelope(sns, parseMaybeJSON(msg), depth), true
		}
	}
	return &record.Envelope{
		EventID:    str(r, "eventID", "messageId"),
		EventType:  str(r, "eventName"),
		Producer:   src,
		OccurredAt: str(r, "eventTime"),
	}, true
}
