package inspect

import (
	"strings"

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
	var buf [64]byte
	found := false
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if a.IsBinary() {
			continue
		}
		n := string(failureKeyNorm(buf[:], name))
		if !strings.HasPrefix(n, "streamserrors") {
			continue
		}
		found = true
		d.Use(name)
		field := "attributes." + name
		switch n[len("streamserrors"):] {
		case "exception":
			d.Evidence(field, record.EvidenceType, a.Value)
		case "message":
			d.Evidence(field, record.EvidenceMessage, a.Value)
		case "stacktrace":
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
