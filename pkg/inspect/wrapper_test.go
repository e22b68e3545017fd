package inspect

import (
	"slices"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// springBoot3 is a Spring Kafka 3 (Spring Framework 6) dead letter: the
// exception message is the listener wrapper's alone, the cause's message
// is only in the stack trace.
func springBoot3(causeMsg string) *record.Record {
	return kafkaRec(map[string]string{
		"kafka_dlt-exception-fqcn":       "org.springframework.kafka.listener.ListenerExecutionFailedException",
		"kafka_dlt-exception-cause-fqcn": "java.lang.IllegalArgumentException",
		"kafka_dlt-exception-message":    "Listener method 'public void com.acme.PaymentListener.onPayment(com.acme.Payment)' threw exception",
		"kafka_dlt-exception-stacktrace": "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method 'public void com.acme.PaymentListener.onPayment(com.acme.Payment)' threw exception\n" +
			"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2945)\n" +
			"Caused by: java.lang.IllegalArgumentException: " + causeMsg + "\n\tat com.acme.PaymentListener.onPayment(PaymentListener.java:42)\n\t... 15 more\n",
	})
}

// TestWrapperMessagesGiveWayToTheCause: failures of one listener method
// with different causes are different errors (group --by error, the
// archives' error_fingerprint), the same cause with other ids is one, and
// the wrapper's words stay in the evidence.
func TestWrapperMessagesGiveWayToTheCause(t *testing.T) {
	currency, currency2, amount := springBoot3("Unsupported currency XXX for payment p-17"), springBoot3("Unsupported currency XXX for payment p-99"), springBoot3("amount must be positive")
	for _, r := range []*record.Record{currency, currency2, amount} {
		Decode(r)
	}
	f := currency.Failure
	if f == nil || f.Type != "java.lang.IllegalArgumentException" || f.Reason != "Unsupported currency XXX for payment p-17" {
		t.Fatalf("failure type %q reason %q; want the cause's class and message", f.Type, f.Reason)
	}
	if !slices.ContainsFunc(f.Evidence, func(e record.Evidence) bool { return e.Kind == record.EvidenceMessage && isWrapperMessage(e.Text) }) {
		t.Errorf("the wrapper's message is no longer in the evidence: %+v", f.Evidence)
	}
	if a, b := ErrorFingerprint(currency), ErrorFingerprint(amount); a == b {
		t.Errorf("two causes of one listener share the fingerprint %q", a)
	}
	if a, b := ErrorFingerprint(currency), ErrorFingerprint(currency2); a != b {
		t.Errorf("one cause with other values: %q and %q", a, b)
	}

	for _, c := range []struct {
		name          string
		attrs         map[string]string
		type_, reason string
	}{
		{"Spring 5: the cause after the last 'nested exception is', no stack trace", map[string]string{
			"kafka_dlt-exception-fqcn":       "org.springframework.kafka.listener.ListenerExecutionFailedException",
			"kafka_dlt-exception-cause-fqcn": "com.acme.OrderNotFoundException",
			"kafka_dlt-exception-message":    "Listener method 'public void com.acme.L.on(java.lang.String)' threw exception; nested exception is com.acme.OrderNotFoundException: order o-1 not found",
		}, "com.acme.OrderNotFoundException", "order o-1 not found"},
		{"a cause deeper than the type keeps its class", map[string]string{
			"kafka_dlt-exception-fqcn":       "org.springframework.kafka.listener.ListenerExecutionFailedException",
			"kafka_dlt-exception-cause-fqcn": "org.springframework.messaging.converter.MessageConversionException",
			"kafka_dlt-exception-message":    "Listener failed",
			"kafka_dlt-exception-stacktrace": "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener failed\n\tat x.Y(Y.java:1)\nCaused by: org.springframework.messaging.converter.MessageConversionException: failed to convert\n\tat x.Y(Y.java:2)\nCaused by: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}')\n\tat x.Y(Y.java:3)\n",
		}, "org.springframework.messaging.converter.MessageConversionException", "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}')"},
		{"a wrapper without its cause stays", map[string]string{
			"kafka_dlt-exception-fqcn":    "org.springframework.kafka.listener.ListenerExecutionFailedException",
			"kafka_dlt-exception-message": "Listener method 'public void com.acme.L.on(java.lang.String)' threw exception",
		}, "org.springframework.kafka.listener.ListenerExecutionFailedException", "Listener method 'public void com.acme.L.on(java.lang.String)' threw exception"},
		{"a wrapper's class gives way too (Spring AMQP: the type is the trace's head)", map[string]string{
			"x-exception-message":    "Listener threw exception",
			"x-exception-stacktrace": "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener threw exception\n\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1762)\nCaused by: java.lang.IllegalStateException: order has no customer\n\tat com.acme.OrderListener.onOrder(OrderListener.java:42)\n",
		}, "java.lang.IllegalStateException", "order has no customer"},
		{"a message that is not a wrapper's stays", map[string]string{
			"kafka_dlt-exception-fqcn":       "com.acme.PaymentDeclinedException",
			"kafka_dlt-exception-message":    "card declined",
			"kafka_dlt-exception-stacktrace": "com.acme.PaymentDeclinedException: card declined\n\tat x.Y(Y.java:1)\nCaused by: com.acme.GatewayException: code 51\n\tat x.Y(Y.java:2)\n",
		}, "com.acme.PaymentDeclinedException", "card declined"},
	} {
		r := kafkaRec(c.attrs)
		Decode(r)
		if r.Failure == nil || r.Failure.Type != c.type_ || r.Failure.Reason != c.reason {
			t.Errorf("%s: failure %+v; want type %q reason %q", c.name, r.Failure, c.type_, c.reason)
		}
	}
}
