package inspect

import (
	"encoding/base64"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// CloudEvents, structured JSON mode: {"specversion": "1.0", "id", "source",
// "type", "time", "datacontenttype", "dataschema", "subject", "data" |
// "data_base64", extensions…}. specversion is the CloudEvents spec version,
// never the event's: a schema version counts only from an extension that
// names one (dataversion, schemaversion, eventversion). Binary mode over
// SQS carries the same attributes as ce-* message attributes and the data
// as the body.
func init() {
	RegisterFormat(Format{
		Name:     "cloudevents",
		Title:    "CloudEvents, structured JSON (specversion, type, source, id, data) or binary mode (ce-* attributes)",
		Priority: 71,
		Decode:   decodeCloudEvents,
	})
	registerEventShape(eventShape{name: "cloudevents", priority: 20, envelope: func(m map[string]any, depth int) (*record.Envelope, bool) {
		if !isCloudEvent(m) {
			return nil, false
		}
		return cloudEventEnvelope(func(k string) string { return str(m, k) }), true
	}})
}

func isCloudEvent(m map[string]any) bool {
	_, sv := m["specversion"]
	_, typ := m["type"]
	_, src := m["source"]
	return sv && typ && src
}

func cloudEventEnvelope(get func(string) string) *record.Envelope {
	e := &record.Envelope{
		EventID:       get("id"),
		EventType:     get("type"),
		Producer:      get("source"),
		SchemaRef:     get("dataschema"),
		OccurredAt:    get("time"),
		CorrelationID: get("correlationid"),
		TenantID:      get("tenantid"),
	}
	if e.CorrelationID == "" {
		e.CorrelationID = get("traceparent")
	}
	for _, k := range []string{"dataversion", "schemaversion", "eventversion"} {
		if v := get(k); v != "" {
			e.EventVersion, e.VersionIsSchema = versionValue(numberOrString(v)), true
			break
		}
	}
	return e
}

func numberOrString(s string) any {
	if v, ok := parseNumber(s); ok {
		return v
	}
	return s
}

func decodeCloudEvents(d *Decoding) bool {
	if d.Obj != nil && isCloudEvent(d.Obj) {
		d.SetEnvelope(cloudEventEnvelope(func(k string) string { return str(d.Obj, k) }))
		if data, ok := d.Obj["data"]; ok && data != nil {
			if s, isStr := data.(string); isStr {
				data = parseMaybeJSON(s)
			}
			d.SetPayload(data)
		} else if b64, ok := d.Obj["data_base64"].(string); ok {
			if raw, err := base64.StdEncoding.DecodeString(b64); err == nil {
				d.SetPayload(parseMaybeJSON(string(raw)))
			}
		}
		return true
	}
	// Binary mode: ce-specversion, ce-type, ce-source, ce-id attributes.
	if !d.HasAttrPrefix("ce") {
		return false
	}
	ce := func(k string) string {
		for _, p := range []string{"ce-", "ce_", "ce."} {
			if v, ok := d.Attr(p + k); ok {
				return v
			}
		}
		return ""
	}
	if ce("specversion") == "" || ce("type") == "" {
		return false
	}
	d.SetEnvelope(cloudEventEnvelope(ce))
	return true
}

// parseNumber parses an integral decimal string as int64.
func parseNumber(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}
