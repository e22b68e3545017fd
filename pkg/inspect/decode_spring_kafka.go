package inspect

import "github.com/dlqctl/dlqctl/pkg/record"

// Spring Kafka dead-letter topics (DeadLetterPublishingRecoverer), headers
// bridged to SQS message attributes: kafka_dlt-exception-fqcn (the
// exception, often ListenerExecutionFailedException),
// kafka_dlt-exception-cause-fqcn (the real cause), kafka_dlt-exception-message,
// kafka_dlt-exception-stacktrace, kafka_dlt-original-topic,
// -original-partition, -original-offset, -original-consumer-group, and the
// kafka_dlt-key-exception-* variants for key deserialization failures.
// Names are matched case- and separator-insensitively (bridges rewrite
// them). The body is the record's value.
func init() {
	RegisterFormat(Format{
		Name:     "spring-kafka",
		Title:    "Spring Kafka dead-letter topic headers as attributes (kafka_dlt-exception-fqcn, -cause-fqcn, -message, -stacktrace, kafka_dlt-original-topic)",
		Priority: 32,
		Decode:   decodeSpringKafka,
	})
}

func decodeSpringKafka(d *Decoding) bool {
	var buf [64]byte
	found := false
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if a.IsBinary() {
			continue
		}
		n := string(failureKeyNorm(buf[:], name))
		if len(n) < 8 || n[:8] != "kafkadlt" {
			continue
		}
		found = true
		d.Use(name)
		field := "attributes." + name
		switch n[8:] {
		case "exceptionfqcn", "keyexceptionfqcn":
			// Spring writes the cause's class too when the exception has
			// one: the wrapper (ListenerExecutionFailedException) says
			// only that the listener threw; the cause is the failure.
			cause := "exceptioncausefqcn"
			if n[8:] == "keyexceptionfqcn" {
				cause = "keyexceptioncausefqcn"
			}
			if hasAttrNorm(d, "kafkadlt"+cause) {
				continue
			}
			d.Evidence(field, record.EvidenceType, a.Value)
		case "exceptioncausefqcn", "keyexceptioncausefqcn":
			// The cause's class is the failure's type (the wrapper above
			// is skipped when this one is present).
			d.Evidence(field, record.EvidenceType, a.Value)
		case "exceptionmessage", "keyexceptionmessage":
			d.Evidence(field, record.EvidenceMessage, a.Value)
		case "exceptionstacktrace", "keyexceptionstacktrace":
			d.StackEvidence(field, a.Value)
		}
	}
	if !found {
		return false
	}
	if d.Obj != nil {
		d.SetEnvelope(EnvelopeOf(d.Obj))
	}
	return true
}

// hasAttrNorm reports whether a text attribute with the normalised name n
// is present.
func hasAttrNorm(d *Decoding, n string) bool {
	var buf [64]byte
	for name, a := range d.Rec.Attributes {
		if !a.IsBinary() && a.Value != "" && string(failureKeyNorm(buf[:], name)) == n {
			return true
		}
	}
	return false
}
