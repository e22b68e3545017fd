package inspect

import (
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Kafka Connect dead-letter queue (errors.deadletterqueue.context.headers.enable),
// headers bridged to SQS message attributes: __connect.errors.topic,
// .partition, .offset, .connector.name, .task.id, .stage (KEY_CONVERTER,
// VALUE_CONVERTER, HEADER_CONVERTER, TRANSFORMATION, TASK_PUT, …),
// .class.name, .exception.class.name, .exception.message,
// .exception.stacktrace. The body is the record's value.
func init() {
	RegisterFormat(Format{
		Name:     "kafka-connect",
		Title:    "Kafka Connect dead-letter headers as attributes (__connect.errors.exception.class.name, .exception.message, .stage, .topic)",
		Priority: 33,
		Decode:   decodeKafkaConnect,
	})
}

func decodeKafkaConnect(d *Decoding) bool {
	var buf [64]byte
	found := false
	for _, name := range d.sortedAttrs() {
		a := d.Rec.Attributes[name]
		if a.IsBinary() {
			continue
		}
		n := string(failureKeyNorm(buf[:], name))
		if !strings.HasPrefix(n, "connecterrors") {
			continue
		}
		found = true
		d.Use(name)
		field := "attributes." + name
		switch n[len("connecterrors"):] {
		case "exceptionclassname":
			d.Evidence(field, record.EvidenceType, a.Value)
		case "exceptionmessage":
			d.Evidence(field, record.EvidenceMessage, a.Value)
		case "exceptionstacktrace":
			d.StackEvidence(field, a.Value)
		case "stage":
			d.Evidence(field, record.EvidenceCondition, "stage "+a.Value)
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
