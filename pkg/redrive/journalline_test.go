package redrive

import (
	"encoding/json"
	"testing"
)

// A sent line is what encoding/json writes for it, so journals written
// before and after read the same (and tools that read them see no change).
func TestSentLineMatchesEncodingJSON(t *testing.T) {
	for _, r := range []SentRecord{
		{},
		{Orig: "m-1", Dest: "amqp\x00orders\x00orders.created", DestID: "m-1#17", SHA: "ab12"},
		{Orig: "sha256:00ff~1a2b3c4d", Dest: "https://sqs.us-east-1.amazonaws.com/1/q<&>", DestID: "\u2028\xff\"x\"", SHA: "", MaybeTwice: true},
	} {
		want, _ := json.Marshal(line{T: "sent", SentRecord: r})
		if got := appendSentLine(nil, r); string(got) != string(want)+"\n" {
			t.Errorf("sent line %s, encoding/json writes %s", got, want)
		}
	}
}

// A resent copy's line too.
func TestResentLineMatchesEncodingJSON(t *testing.T) {
	r := SentRecord{Orig: "m-1", Dest: "q", DestID: "d", SHA: "ab", MaybeTwice: true, Resent: true}
	want, _ := json.Marshal(line{T: "sent", SentRecord: r})
	if got := appendSentLine(nil, r); string(got) != string(want)+"\n" {
		t.Errorf("sent line %s, encoding/json writes %s", got, want)
	}
}
