package sqs

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func rec(id, body string, attrs map[string]record.Attribute) *record.Record {
	if attrs == nil {
		attrs = map[string]record.Attribute{}
	}
	return &record.Record{MessageID: id, Body: body, BodySHA256: record.SHA256Hex(body), Attributes: attrs}
}

func TestBuildCopyKeepsEverythingAndAddsTheMarker(t *testing.T) {
	attrs := map[string]record.Attribute{
		"eventType": {Type: "String", Value: "OrderPaid"},
		"amount":    {Type: "Number.cents", Value: "1250"},
		"sig":       {Type: "Binary", Base64: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255})},
	}
	r := rec("m-1", "héllo ✓ {\"a\":null}", attrs)
	std := &Queue{Name: "orders"}
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	cp, skip := BuildCopy(r, "run-1", "", std, now)
	if skip != "" || !cp.Marked {
		t.Fatalf("skip %q marked %v", skip, cp.Marked)
	}
	e := cp.Entry
	if e.Body != r.Body || e.GroupID != "" || e.DedupID != "" {
		t.Fatalf("entry %+v", e)
	}
	if aws.ToString(e.Attributes["amount"].DataType) != "Number.cents" || string(e.Attributes["sig"].BinaryValue) != "\x00\x01\x02\xff" {
		t.Fatalf("attributes changed: %+v", e.Attributes)
	}
	var m record.Marker
	if err := json.Unmarshal([]byte(aws.ToString(e.Attributes[record.MarkerAttribute].StringValue)), &m); err != nil {
		t.Fatal(err)
	}
	if m.RunID != "run-1" || m.OriginalID != "m-1" || m.Count != 1 || !m.At.Equal(now) {
		t.Fatalf("marker %+v", m)
	}

	// A second redrive keeps the first original id and counts up.
	again := rec("m-2", r.Body, map[string]record.Attribute{record.MarkerAttribute: {Type: "String", Value: aws.ToString(e.Attributes[record.MarkerAttribute].StringValue)}})
	cp2, _ := BuildCopy(again, "run-2", "", std, now)
	_ = json.Unmarshal([]byte(aws.ToString(cp2.Entry.Attributes[record.MarkerAttribute].StringValue)), &m)
	if m.OriginalID != "m-1" || m.Count != 2 || m.RunID != "run-2" || len(cp2.Entry.Attributes) != 1 {
		t.Fatalf("second marker %+v (%d attributes)", m, len(cp2.Entry.Attributes))
	}
}

func TestBuildCopyFIFOGetsGroupAndDeterministicDedupID(t *testing.T) {
	r := rec("m-1", "x", nil)
	r.System.MessageGroupID = "order-7"
	fifo := &Queue{Name: "orders.fifo", FIFO: true}
	a, _ := BuildCopy(r, "run-1", "", fifo, time.Now())
	b, _ := BuildCopy(r, "run-1", "", fifo, time.Now().Add(time.Minute))
	c, _ := BuildCopy(r, "run-2", "", fifo, time.Now())
	if a.Entry.GroupID != "order-7" || a.Entry.DedupID == "" || a.Entry.DedupID != b.Entry.DedupID || a.Entry.DedupID == c.Entry.DedupID || len(a.Entry.DedupID) > 128 {
		t.Fatalf("dedup ids %q %q %q", a.Entry.DedupID, b.Entry.DedupID, c.Entry.DedupID)
	}
	r.System.MessageGroupID = ""
	if _, skip := BuildCopy(r, "run-1", "", fifo, time.Now()); skip != SkipNoGroup {
		t.Fatalf("a message without a group to a FIFO queue: skip %q", skip)
	}
}

func TestBuildCopySkipsInsteadOfChanging(t *testing.T) {
	ten := map[string]record.Attribute{}
	for i := 0; i < 10; i++ {
		ten[fmt.Sprintf("a%d", i)] = record.Attribute{Type: "String", Value: "v"}
	}
	cp, skip := BuildCopy(rec("m", "body", ten), "run", "", &Queue{}, time.Now())
	if skip != "" || cp.Marked || len(cp.Entry.Attributes) != 10 {
		t.Fatalf("10 attributes: skip %q marked %v attrs %d; want sent unmarked", skip, cp.Marked, len(cp.Entry.Attributes))
	}
	eleven := map[string]record.Attribute{"a10": {Type: "String", Value: "v"}}
	for k, v := range ten {
		eleven[k] = v
	}
	if _, skip := BuildCopy(rec("m", "body", eleven), "run", "", &Queue{}, time.Now()); skip != SkipTooManyAttrs {
		t.Fatalf("11 attributes: skip %q", skip)
	}
	small := &Queue{Attrs: map[string]string{"MaximumMessageSize": "1024"}}
	if _, skip := BuildCopy(rec("m", strings.Repeat("x", 1025), nil), "run", "", small, time.Now()); skip != SkipTooLarge {
		t.Fatalf("too large: skip %q", skip)
	}
	// Fits only without the marker: sent unmarked, never truncated.
	cp, skip = BuildCopy(rec("m", strings.Repeat("x", 1000), nil), "run", "", small, time.Now())
	if skip != "" || cp.Marked || len(cp.Entry.Body) != 1000 {
		t.Fatalf("near the limit: skip %q marked %v", skip, cp.Marked)
	}
}
