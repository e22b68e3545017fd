package clitest

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schemas compile, accept what dlqctl writes, and catch what a script
// would trip over: a renamed or missing core field, a changed type.
func TestSchemasCatchContractBreaks(t *testing.T) {
	s := loadSchemas(t)
	good := `{"message_id":"m1","queue":"arn:aws:sqs:us-east-1:123456789012:dlq","body":"{}","body_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size_bytes":2,` +
		`"attributes":{"t":{"type":"String","value":"x"}},"system":{"receive_count":3,"sent_at":"2026-11-30T03:15:00.000Z"},"age_seconds":5,` +
		`"failure":{"format":"logs","reason":"timeout","evidence":[{"field":"logs","kind":"message","text":"timeout"}],"source":{"log_group":"/aws/lambda/x"}},` +
		`"error_fingerprint":"timeout","class":"transient","action":"redrive","rule":"r"}`
	rec := s["message-record.schema.json"]
	validate := func(sch *jsonschema.Schema, doc string) error {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(inst)
	}
	if err := validate(rec, good); err != nil {
		t.Fatalf("a good record (with fields added later: failure.source, error_fingerprint) is refused: %v", err)
	}
	for name, bad := range map[string]string{
		"receive_count as a string": strings.Replace(good, `"receive_count":3`, `"receive_count":"3"`, 1),
		"message_id renamed":        strings.Replace(good, `"message_id"`, `"messageId"`, 1),
		"attributes missing":        strings.Replace(good, `"attributes":{"t":{"type":"String","value":"x"}},`, ``, 1),
		"attributes null":           strings.Replace(good, `"attributes":{"t":{"type":"String","value":"x"}}`, `"attributes":null`, 1),
		"sent_at not a time":        strings.Replace(good, `"2026-11-30T03:15:00.000Z"`, `"yesterday"`, 1),
		"unknown action":            strings.Replace(good, `"action":"redrive"`, `"action":"replay"`, 1),
		"failure.format a number":   strings.Replace(good, `"format":"logs",`, `"format":2,`, 1),
		"size as a float string":    strings.Replace(good, `"size_bytes":2`, `"size_bytes":"2"`, 1),
	} {
		if validate(rec, bad) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ev := s["progress-event.schema.json"]
	if err := validate(ev, `{"type":"progress","op":"redrive","done":3,"skipped":0,"failed":0,"rate":1.5,"elapsed_seconds":2}`); err != nil {
		t.Errorf("progress event refused: %v", err)
	}
	if validate(ev, `{"type":"progress","op":"redrive","done":"3","skipped":0,"failed":0,"rate":1.5,"elapsed_seconds":2}`) == nil {
		t.Error("progress event with done as a string accepted")
	}
	if validate(ev, `{"type":"guard","name":"max-returns","state":"tripped"}`) == nil {
		t.Error("guard event without value and limit accepted")
	}
	if validate(ev, `{"type":"tick"}`) == nil {
		t.Error("unknown event type accepted")
	}
	// A redrive summary reports possible duplicates (a send whose answer
	// was lost and was retried) and what the counts said (advisory).
	sum := s["redrive-summary.schema.json"]
	goodSum := `{"run_id":"r1","received":10,"moved":10,"resumed":0,"sent_not_deleted":0,"failed":0,"unknown_outcome":0,"returned":0,` +
		`"skipped":{},"unmarked":0,"complete":true,"interrupted":false,"elapsed_seconds":1.5,"rate":6.6,"status":"completed","dlq":"d","to":"q",` +
		`"maybe_twice":3,"maybe_twice_ids":["m1","m2","m3"],` +
		`"approximate_counts":{"visible":10,"in_flight":0,"note":"the queue's approximate counts still show 10 visible"}}`
	if err := validate(sum, goodSum); err != nil {
		t.Errorf("a redrive summary with maybe_twice and approximate_counts is refused: %v", err)
	}
	for name, bad := range map[string]string{
		"maybe_twice as a string":           strings.Replace(goodSum, `"maybe_twice":3`, `"maybe_twice":"3"`, 1),
		"maybe_twice negative":              strings.Replace(goodSum, `"maybe_twice":3`, `"maybe_twice":-1`, 1),
		"approximate_counts without a note": strings.Replace(goodSum, `,"note":"the queue's approximate counts still show 10 visible"`, ``, 1),
	} {
		if validate(sum, bad) == nil {
			t.Errorf("redrive summary, %s: accepted", name)
		}
	}
	if c := contractFor([]string{"--region", "us-east-1", "classify", "q", "--summary", "-ondjson"}); c.format != "ndjson" || c.ndjson != "classify-summary.schema.json#/$defs/class" {
		t.Errorf("contractFor: %+v", c)
	}
	if c := contractFor([]string{"redrive", "q", "--engine=native", "-o", "json"}); c.json != "native-task.schema.json" {
		t.Errorf("contractFor native: %+v", c)
	}
	if c := contractFor([]string{"--state-dir", "/tmp/x", "restore", "m.json", "--to", "q", "-o", "json"}); c.json != "restore-summary.schema.json" {
		t.Errorf("contractFor restore: %+v", c)
	}
	if c := contractFor([]string{"redrive", "q", "--dry-run", "-o", "json"}); c.json != "dry-run-plan.schema.json#/$defs/redrive" {
		t.Errorf("contractFor redrive --dry-run: %+v", c)
	}
	if c := contractFor([]string{"classify", "q", "--explain", "m1", "-o", "json"}); c.json != "" {
		t.Errorf("classify --explain has no schema: %+v", c)
	}
}
