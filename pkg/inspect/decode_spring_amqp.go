package inspect

import (
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Spring AMQP's RepublishMessageRecoverer: when a listener gives up, it
// publishes the message to a dead-letter exchange itself with
// x-exception-message, x-exception-stacktrace (whose first line is the
// exception class and message, "Caused by:" lines the causes),
// x-original-exchange and x-original-routingKey. RabbitMQ's own
// dead-lettering (x-death) records no exception; messages rejected by a
// Spring listener without the recoverer carry only x-death.
func init() {
	RegisterFormat(Format{
		Name:     "spring-amqp",
		Title:    "Spring AMQP RepublishMessageRecoverer headers (x-exception-message, x-exception-stacktrace, x-original-exchange, x-original-routingKey)",
		Priority: 31,
		Decode:   decodeSpringAMQP,
	})
}

func decodeSpringAMQP(d *Decoding) bool {
	msg, hasMsg := d.Rec.Attributes["x-exception-message"]
	st, hasST := d.Rec.Attributes["x-exception-stacktrace"]
	if !hasMsg && !hasST {
		return false
	}
	if hasST && !st.IsBinary() {
		d.Use("x-exception-stacktrace")
		first, _, _ := strings.Cut(strings.TrimSpace(st.Value), "\n")
		if typ, _, ok := strings.Cut(first, ":"); ok && !strings.ContainsAny(typ, " \t") {
			d.Evidence("attributes.x-exception-stacktrace", record.EvidenceType, typ)
		}
		d.StackEvidence("attributes.x-exception-stacktrace", st.Value)
	}
	if hasMsg && !msg.IsBinary() {
		d.Use("x-exception-message")
		d.Evidence("attributes.x-exception-message", record.EvidenceMessage, msg.Value)
	}
	d.Use("x-original-exchange", "x-original-routingKey")
	if d.Obj != nil {
		d.SetEnvelope(EnvelopeOf(d.Obj))
	}
	return true
}
