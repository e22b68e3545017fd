package broker

// Words are how a command speaks of a run's steps on a broker, in that
// broker's own terms: what a queue's depth counts, what removing a handled
// message and sending its copy are called, what a resumed run does with
// the copies an earlier attempt made. They follow from how the broker
// holds a message (Hold) and removes it (Removal), so one redrive path
// speaks every broker's language without asking which broker it talks to.
type Words struct {
	// DLQ and Queue name a dead-letter queue and a queue: "DLQ"/"queue",
	// "dead-letter topic"/"topic" (a broker that reads by offset).
	DLQ, Queue string
	// Ready is what Depth.Ready counts, for prompts: "visible" (SQS),
	// "ready" (RabbitMQ), "pending" (Kafka).
	Ready string
	// Removed is a handled message leaving the queue, past tense:
	// "deleted" (one by one), "removed" (a committed offset).
	Removed string
	// Send and Sent are sending a copy: "send"/"sent", "publish"/"published".
	Send, Sent string
	// Resuming says what a resumed run does with the messages whose copy an
	// earlier attempt already made.
	Resuming string
	// ResumedRow is the summary's sentence after the count of such
	// messages.
	ResumedRow string
	// ReadBack is what a dry run says it did to the queue, with %s for its
	// name ("" when a read leaves nothing to say).
	ReadBack string
	// GiveBackFailed is the warning, with %v for the error, when giving
	// back what the run still held at its end failed ("" when a read holds
	// nothing).
	GiveBackFailed string
}

// Words of the broker whose capabilities c are.
func (c Capabilities) Words() Words {
	w := Words{DLQ: "DLQ", Queue: "queue", Removed: "deleted", Send: "send", Sent: "sent", ResumedRow: "deleted without re-sending (sent by an earlier attempt)"}
	if c.Removal == RemoveCommitOffset {
		w = Words{DLQ: "dead-letter topic", Queue: "topic", Removed: "removed", Send: "publish", Sent: "published", ResumedRow: "removed without publishing again (an earlier attempt published them)"}
	}
	switch c.Hold {
	case HoldLease:
		w.Ready = "visible"
		w.Resuming = "already-sent messages are deleted without sending them again"
		w.GiveBackFailed = "releasing held messages: %v (they become visible again when their visibility timeout ends)"
	case HoldDelivery:
		w.Ready = "ready"
		w.Resuming = "messages whose copy was confirmed are acknowledged without publishing them again"
		w.ReadBack = "the messages were read and returned to %s"
		w.GiveBackFailed = "returning held messages: %v (the broker returns them when the connection closes)"
	default:
		w.Ready = "pending"
		w.Resuming = "messages whose copy was recorded are removed without publishing them again"
		w.ReadBack = "%s was read without removing anything"
	}
	return w
}
