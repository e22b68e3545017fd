package inspect

import (
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Kafka Streams dead-letter queue records (KIP-1034, errors.dead.letter.queue.topic.name):
// headers __streams.errors.exception (the exception class),
// __streams.errors.message, __streams.errors.stacktrace, and the origin in
// __streams.errors.topic, .partition, .offset. The body is the record's value.
func init() {
	RegisterFormat(Format{
		Name:     "kafka-streams",
		Title:    "Kafka Streams dead-letter headers (__streams.errors.exception, .message, .stacktrace, .topic)",
		Priority: 34,
		Decode:   decodeKafkaStreams,
	})
}

func decodeKafkaStreams(d *Decoding) bool {
	return decodeErrorHeaders(d, "streamserrors", func(field, key, value string) {
		switch key {
		case "exception":
			d.Evidence(field, record.EvidenceType, value)
		case "message":
			d.Evidence(field, record.EvidenceMessage, value)
		case "stacktrace":
			d.StackEvidence(field, value)
		}
	})
}

// decodeErrorHeaders reads the text attributes whose normalised name
// (failureKeyNorm) starts with prefix — the error headers a Kafka
// framework writes under one namespace — marks them used and hands each
// to use with its field path and the rest of its normalised name. It
// reports whether there was any; the body's envelope is then read too.
func decodeErrorHeaders(d *Decoding, prefix string, use func(field, key, value string)) bool {
	var buf [64]byte
	found := false
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if a.IsBinary() {
			continue
		}
		nb := failureKeyNorm(buf[:], name)
		if len(nb) < len(prefix) || string(nb[:len(prefix)]) != prefix {
			continue
		}
		n := string(nb)
		found = true
		d.Use(name)
		use("attributes."+name, n[len(prefix):], a.Value)
	}
	if !found {
		return false
	}
	if d.Obj != nil {
		d.SetEnvelope(EnvelopeOf(d.Obj))
	}
	return true
}
