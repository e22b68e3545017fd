package inspect

import (
	"strconv"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Lambda on-failure destination (an invocation record written to SQS):
// {"version", "timestamp", "requestContext": {"requestId", "functionArn",
// "condition", "approximateInvokeCount"}, "requestPayload": <the original
// event>, "responseContext": {"statusCode", "executedVersion",
// "functionError"}, "responsePayload": {"errorType", "errorMessage",
// "trace"}}. Records of stream and queue event source mappings (Kinesis,
// DynamoDB Streams, Kafka, SQS) carry batch information (…BatchInfo)
// instead of the payload. "version" is the record format's version, never
// the event's.
func init() {
	RegisterFormat(Format{
		Name:     "lambda-destination",
		Title:    "Lambda on-failure destination record (requestContext, requestPayload, responseContext, responsePayload)",
		Priority: 50,
		Decode:   decodeLambdaDestination,
	})
}

func decodeLambdaDestination(d *Decoding) bool {
	if d.Obj == nil {
		return false
	}
	rc, ok := d.Obj["requestContext"].(map[string]any)
	if !ok {
		return false
	}
	_, hasFn := rc["functionArn"]
	_, hasCond := rc["condition"]
	_, hasResp := d.Obj["responseContext"]
	_, hasReq := d.Obj["requestPayload"]
	if !(hasFn || hasCond) || !(hasResp || hasReq) {
		return false
	}
	d.BodyHandled()
	if rp, ok := d.Obj["responsePayload"]; ok && rp != nil {
		switch t := rp.(type) {
		case map[string]any:
			runtimeErrorObject(d, "body.responsePayload", t)
		case string:
			runtimeError(d, "body.responsePayload", t)
		}
	}
	if resp, ok := d.Obj["responseContext"].(map[string]any); ok {
		if sc := str(resp, "statusCode"); sc != "" && sc != "200" {
			d.Evidence("body.responseContext.statusCode", record.EvidenceStatus, sc)
		}
		if fe := str(resp, "functionError"); fe != "" && len(d.fail.Evidence) == 0 {
			d.Evidence("body.responseContext.functionError", record.EvidenceCondition, "functionError "+fe)
		}
	}
	d.Evidence("body.requestContext.condition", record.EvidenceCondition, str(rc, "condition"))
	if n, ok := rc["approximateInvokeCount"].(float64); ok {
		d.Attempts(strconv.Itoa(int(n)))
	}
	d.FailedAt(str(d.Obj, "timestamp"))
	if p, ok := d.Obj["requestPayload"]; ok {
		if s, isStr := p.(string); isStr {
			p = parseMaybeJSON(s)
		}
		d.SetPayload(p)
	} else {
		for _, k := range sortedKeys(d.Obj) {
			if len(k) > 9 && k[len(k)-9:] == "BatchInfo" {
				d.SetPayload(d.Obj[k])
				break
			}
		}
	}
	if d.env == nil {
		d.SetEnvelope(&record.Envelope{EventID: str(rc, "requestId"), Producer: str(rc, "functionArn"), OccurredAt: str(d.Obj, "timestamp")})
	}
	return true
}
