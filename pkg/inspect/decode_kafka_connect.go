package inspect

import "github.com/dlqctl/dlqctl/pkg/record"

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
	return decodeErrorHeaders(d, "connecterrors", func(field, key, value string) {
		switch key {
		case "exceptionclassname":
			d.Evidence(field, record.EvidenceType, value)
		case "exceptionmessage":
			d.Evidence(field, record.EvidenceMessage, value)
		case "exceptionstacktrace":
			d.StackEvidence(field, value)
		case "stage":
			d.Evidence(field, record.EvidenceCondition, "stage "+value)
		}
	})
}
