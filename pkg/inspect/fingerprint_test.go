package inspect

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestNormalizeErrorMergesVaryingDetails(t *testing.T) {
	same := [][]string{
		{"timeout after 831ms for order o-17", "timeout after 912ms for order o-99"},
		{"read tcp 10.0.3.17:51234->10.0.9.2:5432: read: connection reset by peer", "read tcp 10.0.3.18:40112->10.0.9.2:5432: read: connection reset by peer"},
		{"order 4b0a1c52-3f7e-4d2a-9c1e-0f2b3c4d5e6f not found", "order 00000000-0000-4000-8000-000000000000 not found"},
		{`field "customerId" is required`, `field 'orderId' is required`},
		{"failed at 2026-01-02T03:04:05.123Z on shard 3", "failed at 2025-12-31T23:59:59+01:00 on shard 12"},
		{"commit a1b2c3d4e5f6 rejected (trace 0x7fff12ab)", "commit 9f8e7d6c5b4a rejected (trace 0xdead)"},
		{"POST https://fraud-check.internal/v2/score returned 503", "POST https://fraud-check.internal/v3/score?x=1 returned 503"},
		{"HTTP 503 after 2 attempts", "HTTP 503 after 5 attempts"},
		{"too   many\n spaces", "too many spaces"},
	}
	for _, p := range same {
		a, b := NormalizeError(p[0]), NormalizeError(p[1])
		if a != b {
			t.Errorf("%q -> %q\n%q -> %q\nwant the same fingerprint", p[0], a, p[1], b)
		}
	}
	different := [][]string{
		{"timeout calling inventory-db", "timeout calling payments-db"},
		{"order already cancelled", "insufficient funds"},
		{"can't reach 'ledger'", "can't reach 'fraud'"}, // apostrophe does not swallow the text
	}
	for _, p := range different[:2] {
		if NormalizeError(p[0]) == NormalizeError(p[1]) {
			t.Errorf("%q and %q share a fingerprint", p[0], p[1])
		}
	}
	if got := NormalizeError(different[2][0]); got != "can't reach <str>" {
		t.Errorf("apostrophe: %q", got)
	}
	if got := NormalizeError("timeout after 831ms for order o-17"); got != "timeout after <n>ms for order o-<n>" {
		t.Errorf("got %q", got)
	}
	if got := NormalizeError(strings.Repeat("x", 1000)); len(got) > maxFingerprint {
		t.Errorf("fingerprint of %d bytes", len(got))
	}
	for in, want := range map[string]string{
		"POST https://x/y returned 503 Service Unavailable (request id r-8812)": "POST <url> returned 503 Service Unavailable (request id r-<n>)",
		"HTTP 503 from ledger-api after 2 attempts":                             "HTTP 503 from ledger-api after <n> attempts",
		"429 Too Many Requests from psp-adyen (retry after 2s)":                 "429 Too Many Requests from psp-adyen (retry after <n>s)",
		"status=500":                   "status=500",
		"order 503 not found":          "order <n> not found",
		"amount 450 exceeds the limit": "amount <n> exceeds the limit",
	} {
		if got := NormalizeError(in); got != want {
			t.Errorf("NormalizeError(%q) = %q, want %q", in, got, want)
		}
	}
	if NormalizeError("HTTP 503 from ledger") == NormalizeError("HTTP 500 from ledger") {
		t.Error("503 and 500 share a fingerprint")
	}
	if got := NormalizeError("deadbeef failed"); got != "deadbeef failed" {
		t.Errorf("plain hex-letter word replaced: %q", got)
	}
}

func TestErrorFingerprintUsesTypeAndReason(t *testing.T) {
	rec := &record.Record{Failure: &record.Failure{Type: "DatabaseTimeout", Reason: "timeout after 831ms"}}
	if got := ErrorFingerprint(rec); got != "DatabaseTimeout: timeout after <n>ms" {
		t.Errorf("got %q", got)
	}
	if got := ErrorFingerprint(&record.Record{}); got != NoFailure {
		t.Errorf("no failure: %q", got)
	}
	if got := ErrorFingerprint(&record.Record{Failure: &record.Failure{ErrorClass: "transient"}}); got != NoFailure {
		t.Errorf("class only: %q", got)
	}
}

func TestShapeFingerprint(t *testing.T) {
	parse := func(s string) any {
		v, ok := parseJSON(s)
		if !ok {
			t.Fatalf("bad test JSON %s", s)
		}
		return v
	}
	a := ShapeFingerprint(parse(`{"eventType":"A","payload":{"id":1,"tags":["x","y"]}}`))
	b := ShapeFingerprint(parse(`{"payload":{"tags":["z"],"id":99},"eventType":"B"}`))
	if a != b {
		t.Errorf("same structure, different order/values: %q vs %q", a, b)
	}
	if !strings.HasPrefix(a, "{eventType,payload{id,tags[…]}}#") {
		t.Errorf("outline: %q", a)
	}
	c := ShapeFingerprint(parse(`{"eventType":"A","payload":{"id":"1","tags":["x"]}}`))
	if c == a {
		t.Errorf("a number and a string id share a shape: %q", c)
	}
	deep1 := ShapeFingerprint(parse(`{"a":{"b":{"c":{"d":1}}}}`))
	deep2 := ShapeFingerprint(parse(`{"a":{"b":{"c":{"e":1}}}}`))
	if deep1 == deep2 {
		t.Errorf("structures differing below the outline share a shape: %q", deep1)
	}
	if ShapeFingerprint(nil) != NotJSON {
		t.Error("nil body is not not-json")
	}
}
