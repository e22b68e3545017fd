package amqp

import (
	"encoding/json"
	"testing"
)

// The management API lists a consumer's channel as an object, or as an
// empty list when it has no details of it (seen on a queue whose consumer
// was going away): both read, the second as a channel without a name,
// which consumersOf reports as another application's (held by it).
func TestConsumerChannelDetailsReadsBothEncodings(t *testing.T) {
	var qi QueueInfo
	raw := `{"consumer_details":[
		{"consumer_tag":"a","ack_required":true,"channel_details":{"name":"127.0.0.1:5 -> 127.0.0.1:5672 (1)"}},
		{"consumer_tag":"b","ack_required":true,"channel_details":[]}]}`
	if err := json.Unmarshal([]byte(raw), &qi); err != nil {
		t.Fatalf("a consumer listed with channel_details [] fails the read: %v", err)
	}
	if len(qi.ConsumerDetails) != 2 || qi.ConsumerDetails[0].Channel.Name != "127.0.0.1:5 -> 127.0.0.1:5672 (1)" || qi.ConsumerDetails[1].Channel.Name != "" {
		t.Fatalf("consumers %+v", qi.ConsumerDetails)
	}
	if _, foreign := consumersOf(qi, "own", false); len(foreign) != 2 {
		t.Fatalf("foreign channels %q; want both consumers' (the unnamed one included)", foreign)
	}
}
