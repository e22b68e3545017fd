package inspect

import (
	"encoding/base64"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// NServiceBus error queue: the failure is in headers —
// NServiceBus.ExceptionInfo.ExceptionType, .InnerExceptionType, .Message,
// .StackTrace, .Source, NServiceBus.FailedQ, NServiceBus.TimeOfFailure,
// NServiceBus.EnclosedMessageTypes ("Namespace.Type, Assembly,
// Version=…"), NServiceBus.MessageId, NServiceBus.Retries — either as
// message attributes or, with the SQS transport, inside a JSON transport
// message {"Headers": {…}, "Body": "<base64>", "S3BodyKey"}. The original
// payload is the decoded Body. NServiceBus.Version is the library's
// version, and the assembly Version in EnclosedMessageTypes is not an
// event schema version either.
func init() {
	RegisterFormat(Format{
		Name:     "nservicebus",
		Title:    "NServiceBus error queue (NServiceBus.ExceptionInfo.* headers as attributes or in {\"Headers\", \"Body\"})",
		Priority: 31,
		Decode:   decodeNServiceBus,
	})
}

const nsbPrefix = "NServiceBus."

func decodeNServiceBus(d *Decoding) bool {
	if _, ok := d.Obj["Headers"].(map[string]any); !ok && !d.HasAttrPrefix(nsbPrefix) {
		return false // neither NServiceBus headers nor a transport message
	}
	headers := map[string]string{}
	where := "attributes."
	for name, a := range d.Rec.Attributes {
		if !a.IsBinary() && strings.HasPrefix(name, nsbPrefix) {
			headers[name] = a.Value
			d.Use(name)
		}
	}
	var transport map[string]any
	if d.Obj != nil {
		if h, ok := d.Obj["Headers"].(map[string]any); ok {
			nsb := false
			for k := range h {
				if strings.HasPrefix(k, nsbPrefix) {
					nsb = true
					break
				}
			}
			if nsb {
				transport = d.Obj
				if len(headers) == 0 {
					where = "body.Headers."
				}
				for k, v := range h {
					if _, dup := headers[k]; !dup {
						if s := scalarText(v); s != "" {
							headers[k] = s
						}
					}
				}
			}
		}
	}
	if len(headers) == 0 {
		return false
	}
	const ei = nsbPrefix + "ExceptionInfo."
	d.Evidence(where+ei+"ExceptionType", record.EvidenceType, headers[ei+"ExceptionType"])
	d.Evidence(where+ei+"Message", record.EvidenceMessage, headers[ei+"Message"])
	d.Evidence(where+ei+"InnerExceptionType", record.EvidenceCause, headers[ei+"InnerExceptionType"])
	if st := headers[ei+"StackTrace"]; st != "" {
		d.StackEvidence(where+ei+"StackTrace", st)
	}
	d.FailedAt(headers[nsbPrefix+"TimeOfFailure"])
	d.Attempts(headers[nsbPrefix+"Retries"])
	e := &record.Envelope{
		EventID:       headers[nsbPrefix+"MessageId"],
		EventType:     enclosedType(headers[nsbPrefix+"EnclosedMessageTypes"]),
		CorrelationID: headers[nsbPrefix+"CorrelationId"],
		Producer:      headers[nsbPrefix+"OriginatingEndpoint"],
		OccurredAt:    headers[nsbPrefix+"TimeSent"],
	}
	var payload any
	if transport != nil {
		d.BodyHandled()
		if b, ok := transport["Body"].(string); ok && b != "" {
			if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
				payload = parseMaybeJSON(string(raw))
			} else {
				payload = parseMaybeJSON(b)
			}
			d.SetPayload(payload)
		}
	} else {
		payload = d.Parsed
	}
	mergeEnvelope(e, EnvelopeOf(payload))
	if e.EventType != "" || e.EventID != "" {
		d.SetEnvelope(e)
	}
	return true
}

// enclosedType returns the first message type of EnclosedMessageTypes
// without its assembly qualification.
func enclosedType(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
