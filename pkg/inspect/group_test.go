package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func groupRecord(id, body, source string, sent time.Time, recv int) (*record.Record, any) {
	rec := &record.Record{MessageID: id, Body: body, Attributes: map[string]record.Attribute{}}
	rec.System.SourceQueueARN = "arn:aws:sqs:eu-west-1:000000000000:" + source
	rec.System.SentAt = sent
	rec.System.ReceiveCount = recv
	rec.ExpiresAt = sent.Add(14 * 24 * time.Hour)
	return rec, Decode(rec)
}

func TestGroupBySourceAndError(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	keys, err := ParseGroupKeys([]string{"source,error", "age"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGrouper(keys, now)
	add := func(id, body, source string, age time.Duration, recv int) {
		rec, parsed := groupRecord(id, body, source, now.Add(-age), recv)
		g.Add(rec, parsed)
	}
	add("m1", `{"eventType":"A","failure_reason":"timeout after 831ms for order o-17"}`, "orders", 10*time.Minute, 3)
	add("m2", `{"eventType":"A","failure_reason":"timeout after 912ms for order o-99"}`, "orders", 20*time.Minute, 5)
	add("m3", `{"eventType":"A","failure_reason":"timeout after 1204ms for order o-1041"}`, "orders", 30*time.Minute, 4)
	add("m4", `{"eventType":"A","failure_reason":"timeout after 5ms for order o-1"}`, "payments", 2*time.Hour, 2)
	add("m5", `plain text`, "orders", 80*time.Hour, 1)

	groups := g.Groups()
	if len(groups) != 3 || g.Total() != 5 {
		t.Fatalf("%d groups of %d records, want 3 of 5", len(groups), g.Total())
	}
	top := groups[0]
	if top.Count != 3 || top.Key["source"] != "orders" || top.Key["error"] != "timeout after <n>ms for order o-<n>" || top.Key["age"] != "<1h" {
		t.Fatalf("top group %+v", top.Key)
	}
	if top.Share != 0.6 || top.ReceiveCount.Min != 3 || top.ReceiveCount.Max != 5 {
		t.Errorf("share %v receive %+v", top.Share, top.ReceiveCount)
	}
	if strings.Join(top.Examples, ",") != "m1,m2" {
		t.Errorf("examples %v", top.Examples)
	}
	if !top.OldestSentAt.Equal(now.Add(-30*time.Minute)) || !top.NewestSentAt.Equal(now.Add(-10*time.Minute)) {
		t.Errorf("oldest %v newest %v", top.OldestSentAt, top.NewestSentAt)
	}
	if !top.SoonestExpiry.Equal(now.Add(-30 * time.Minute).Add(14 * 24 * time.Hour)) {
		t.Errorf("soonest expiry %v", top.SoonestExpiry)
	}
	// Ties sort by key values: orders before payments.
	if groups[1].Key["source"] != "orders" || groups[1].Key["error"] != NoFailure || groups[1].Key["age"] != "<7d" {
		t.Errorf("second group %+v", groups[1].Key)
	}
	if groups[2].Key["age"] != "<1d" {
		t.Errorf("third group %+v", groups[2].Key)
	}
}

func TestGroupByExpression(t *testing.T) {
	keys, err := ParseGroupKeys([]string{`.attributes.tenant.value,[.json.a, .json.b],shape`})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[1].Name != "[.json.a, .json.b]" {
		t.Fatalf("keys %v", keys)
	}
	g := NewGrouper(keys, time.Time{})
	for i, body := range []string{`{"a":1,"b":"x"}`, `{"b":"x","a":1}`, `{"a":2}`, `nope`} {
		rec := &record.Record{MessageID: string(rune('a' + i)), Body: body, Attributes: map[string]record.Attribute{}}
		if i < 2 {
			rec.Attributes["tenant"] = record.Attribute{Type: "String", Value: "t-acme"}
		}
		g.Add(rec, Decode(rec))
	}
	groups := g.Groups()
	if groups[0].Count != 2 || groups[0].Key[".attributes.tenant.value"] != "t-acme" || groups[0].Key["[.json.a, .json.b]"] != `[1,"x"]` {
		t.Fatalf("top group %+v", groups[0].Key)
	}
	last := groups[len(groups)-1]
	if last.Key["shape"] != NotJSON || last.Key[".attributes.tenant.value"] != None {
		t.Errorf("plain-text group %+v", last.Key)
	}
}

func TestParseGroupKeysErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"source,sorce":  `unknown group key "sorce"`,
		"source,,error": "empty key",
		"source,source": "twice",
		".json | ==":    "invalid expression",
		`.a,"unclosed`:  "unbalanced",
		"":              "empty key",
	} {
		_, err := ParseGroupKeys([]string{spec})
		if err == nil || errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), want) {
			t.Errorf("--by %q: %v, want exit 2 mentioning %q", spec, err, want)
		}
	}
	if _, err := ParseGroupKeys(nil); err == nil {
		t.Error("no keys accepted")
	}
}

func TestAgeBucket(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "<1h", 59 * time.Minute: "<1h", time.Hour: "<1d", 47 * time.Hour: "<3d",
		5 * 24 * time.Hour: "<7d", 30 * 24 * time.Hour: "older",
	} {
		if got := AgeBucket(d); got != want {
			t.Errorf("AgeBucket(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestGroupByEncoding: group --by encoding counts what the bodies are.
func TestGroupByEncoding(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	keys, err := ParseGroupKeys([]string{"encoding"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGrouper(keys, now)
	for i, body := range []string{`{"a":1}`, `{"b":2}`, `<Order id="1"/>`, `ORDER|o-1|5|EUR`, b64([]byte(`{"task":"x","id":"1"}`)), `{"a":`} {
		rec, parsed := groupRecord(string(rune('a'+i)), body, "orders", now, 1)
		g.Add(rec, parsed)
	}
	got := map[string]int{}
	for _, gr := range g.Groups() {
		got[gr.Key["encoding"]] = gr.Count
	}
	want := map[string]int{"json": 2, "xml": 1, "csv": 1, "base64/json": 1, "malformed-json": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("encoding groups %v, want %v", got, want)
			break
		}
	}
}
