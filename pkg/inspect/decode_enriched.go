package inspect

// The consumer-enriched wrapper (as written by our own consumers, seed
// 003): {"original_payload": <event or JSON string>, "failure_reason",
// "failure_type", "error_class", "attempt_count", "consumer_version",
// "failed_at"}. The failure fields are generic failure keys, read after
// this decoder; the original payload is original_payload.
func init() {
	RegisterFormat(Format{
		Name:     "enriched",
		Title:    "consumer-enriched wrapper (original_payload plus failure_reason, failure_type, error_class, attempt_count, …)",
		Priority: 80,
		Decode:   decodeEnriched,
	})
}

func decodeEnriched(d *Decoding) bool {
	if d.Obj == nil {
		return false
	}
	for _, k := range []string{"original_payload", "originalPayload", "original_message", "originalMessage"} {
		op, ok := d.Obj[k]
		if !ok {
			continue
		}
		if s, isStr := op.(string); isStr {
			op = parseMaybeJSON(s)
		}
		d.SetPayload(op)
		if d.env == nil {
			d.SetEnvelope(EnvelopeOf(d.Obj))
		}
		return true
	}
	return false
}
