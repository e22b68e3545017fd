package inspect

import (
	"strconv"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// EventBridge custom event bus subscriber dead-letter record: a JSON
// document about the failed delivery, not the event: {"version": "1.0",
// "busArn", "subscriberArn", "targetArn", "errorCode", "errorMessage",
// "exhaustedRetryCondition", "retryAttempts", "failedMessages": [{"eventId",
// "eventGroupId", "timestamp", …}]}.
func init() {
	RegisterFormat(Format{
		Name:     "eventbridge-subscriber",
		Title:    "EventBridge custom event bus subscriber dead-letter record (busArn, subscriberArn, errorCode, errorMessage, failedMessages)",
		Priority: 55,
		Decode:   decodeEventBridgeSubscriber,
	})
}

func decodeEventBridgeSubscriber(d *Decoding) bool {
	if d.Obj == nil {
		return false
	}
	_, hasBus := d.Obj["busArn"]
	_, hasSub := d.Obj["subscriberArn"]
	_, hasFailed := d.Obj["failedMessages"]
	if !(hasBus || hasSub) || !(hasFailed || d.Obj["errorCode"] != nil) {
		return false
	}
	d.BodyHandled()
	d.Evidence("body.errorCode", record.EvidenceCode, str(d.Obj, "errorCode"))
	d.Evidence("body.errorMessage", record.EvidenceMessage, str(d.Obj, "errorMessage"))
	d.Evidence("body.exhaustedRetryCondition", record.EvidenceCondition, str(d.Obj, "exhaustedRetryCondition"))
	if n, ok := d.Obj["retryAttempts"].(float64); ok {
		d.Attempts(strconv.Itoa(int(n)))
	}
	if fm, ok := d.Obj["failedMessages"]; ok {
		d.SetPayload(fm)
		if l, ok := fm.([]any); ok && len(l) > 0 {
			if first, ok := l[0].(map[string]any); ok {
				d.SetEnvelope(&record.Envelope{EventID: str(first, "eventId"), OccurredAt: str(first, "timestamp"), Producer: str(d.Obj, "busArn")})
			}
		}
	}
	return true
}
