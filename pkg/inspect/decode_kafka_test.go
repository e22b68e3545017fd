package inspect

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func kafkaRec(h map[string]string) *record.Record {
	r := &record.Record{Broker: record.BrokerKafka, Body: `{"orderId":1}`, Attributes: map[string]record.Attribute{}}
	for k, v := range h {
		r.Attributes[k] = record.Attribute{Type: "String", Value: v}
	}
	return r
}

func TestSpringKafkaPrefersTheCauseOverTheListenerWrapper(t *testing.T) {
	r := kafkaRec(map[string]string{
		"kafka_dlt-exception-fqcn":       "org.springframework.kafka.listener.ListenerExecutionFailedException",
		"kafka_dlt-exception-cause-fqcn": "jakarta.validation.ConstraintViolationException",
		"kafka_dlt-exception-message":    "Listener method threw exception; nested exception is amount: must be greater than 0",
	})
	Decode(r)
	if r.Failure == nil || r.Failure.Format != "spring-kafka" || !strings.Contains(r.Failure.Type, "ConstraintViolationException") {
		t.Fatalf("failure %+v, want the cause's class as the type", r.Failure)
	}
	// Without a cause the exception itself is the type.
	r = kafkaRec(map[string]string{"kafka_dlt-exception-fqcn": "java.lang.IllegalStateException", "kafka_dlt-exception-message": "boom"})
	Decode(r)
	if r.Failure == nil || !strings.Contains(r.Failure.Type, "IllegalStateException") {
		t.Fatalf("failure %+v", r.Failure)
	}
}

func TestKafkaStreamsDeadLetterHeaders(t *testing.T) {
	r := kafkaRec(map[string]string{
		"__streams.errors.exception":  "org.apache.kafka.common.errors.SerializationException",
		"__streams.errors.message":    "Size of data received by IntegerDeserializer is not 4",
		"__streams.errors.stacktrace": "org.apache.kafka.common.errors.SerializationException: Size of data\n\tat org.apache.kafka.common.serialization.IntegerDeserializer.deserialize(IntegerDeserializer.java:30)\n",
		"__streams.errors.topic":      "orders",
	})
	Decode(r)
	if r.Failure == nil || r.Failure.Format != "kafka-streams" || !strings.Contains(r.Failure.Type, "SerializationException") || !strings.Contains(r.Failure.Reason, "IntegerDeserializer") {
		t.Fatalf("failure %+v", r.Failure)
	}
}
