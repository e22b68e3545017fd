package transform_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

func rec(id, body string, attrs map[string]record.Attribute) (*record.Record, any) {
	r := &record.Record{MessageID: id, Body: body, BodySHA256: record.SHA256Hex(body), Attributes: attrs}
	parsed := inspect.Decode(r)
	return r, parsed
}

func compile(t *testing.T, src string, l transform.Limits) *transform.Transform {
	t.Helper()
	xf, err := transform.Compile(src, l)
	if err != nil {
		t.Fatal(err)
	}
	return xf
}

func TestApplyRepairsJSONAndKeepsAttributes(t *testing.T) {
	xf := compile(t, ".json.amount |= tonumber", transform.Limits{})
	attrs := map[string]record.Attribute{"tenant": {Type: "String", Value: "acme"}, "sig": {Type: "Binary", Base64: "AAEC"}}
	r, parsed := rec("m-1", `{"order":"o-1","amount":"12.50","note":"<b>"}`, attrs)
	res, err := xf.Apply(r, parsed, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Record.Body != `{"amount":12.5,"note":"<b>","order":"o-1"}` || res.Record.BodySHA256 != record.SHA256Hex(res.Record.Body) {
		t.Fatalf("copy %+v", res.Record)
	}
	if r.Body != `{"order":"o-1","amount":"12.50","note":"<b>"}` || len(r.Attributes) != 2 {
		t.Fatalf("the original was changed: %+v", r)
	}
	if res.Record.Attributes["tenant"] != attrs["tenant"] || res.Record.Attributes["sig"] != attrs["sig"] {
		t.Fatalf("attributes not kept: %+v", res.Record.Attributes)
	}
	var mk transform.Marker
	if err := json.Unmarshal([]byte(res.Record.Attributes[transform.Attribute].Value), &mk); err != nil ||
		mk != (transform.Marker{RunID: "run-1", ExprSHA256: xf.SHA256(), OriginalID: "m-1"}) {
		t.Fatalf("marker %q", res.Record.Attributes[transform.Attribute].Value)
	}
	s := xf.Summary()
	if s.Changed != 1 || s.Unchanged != 0 || s.Failed != 0 || len(xf.SHA256()) != 64 {
		t.Fatalf("summary %+v", s)
	}
}

func TestApplyBodyAttributesAndUnchanged(t *testing.T) {
	r, parsed := rec("m-2", "plain text", map[string]record.Attribute{"a": {Type: "String", Value: "1"}})
	// A text body replaced through .body; an attribute added, one removed.
	xf := compile(t, `.body = "fixed: " + .body | .attributes = {"b": {"type": "String", "value": "2"}}`, transform.Limits{})
	res, err := xf.Apply(r, parsed, "run")
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Body != "fixed: plain text" || len(res.Record.Attributes) != 2 || res.Record.Attributes["b"].Value != "2" {
		t.Fatalf("copy %+v", res.Record)
	}
	ch := transform.Diff(r, parsed, res.Record)
	if len(ch) != 3 || ch[0].Path != ".body" || ch[1].Path != ".attributes.a" || len(ch[1].After) != 0 || ch[2].Path != ".attributes.b" || len(ch[2].Before) != 0 {
		t.Fatalf("diff %+v", ch)
	}
	// The identity: sent as it was (with the marker), counted unchanged.
	id := compile(t, ".", transform.Limits{})
	res, err = id.Apply(r, parsed, "run")
	if err != nil || res.Changed || res.Record.Body != r.Body || id.Summary().Unchanged != 1 {
		t.Fatalf("identity: %v %+v %+v", err, res, id.Summary())
	}
	if d := transform.Diff(r, parsed, res.Record); len(d) != 0 {
		t.Fatalf("identity diff %+v", d)
	}
}

func TestApplyFailuresAreCountedPerReason(t *testing.T) {
	xf := compile(t, `if .json.customer == null then error("customer is required") else .json.amount |= tonumber end`, transform.Limits{})
	ok, okp := rec("ok", `{"customer":"c","amount":"1"}`, nil)
	if _, err := xf.Apply(ok, okp, "r"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		r, p := rec(id, `{"amount":"1"}`, nil)
		_, err := xf.Apply(r, p, "r")
		var te *transform.Error
		if !errors.As(err, &te) || te.Reason != transform.ReasonExpression || !strings.Contains(err.Error(), "customer is required") {
			t.Fatalf("%s: %v", id, err)
		}
	}
	bad, badp := rec("c", `{"customer":"c","amount":"x"}`, nil)
	if _, err := xf.Apply(bad, badp, "r"); err == nil {
		t.Fatal("tonumber on x succeeded")
	}
	s := xf.Summary()
	if s.Changed != 1 || s.Failed != 3 || len(s.Errors) != 1 || s.Errors[0].Count != 3 || s.Errors[0].FirstID != "a" {
		t.Fatalf("summary %+v", s)
	}
	if xf.Tally().Refusal() != nil {
		t.Fatal("a transform that repaired a message was refused")
	}
}

func TestApplyRefusesWhatTheDestinationWouldRefuse(t *testing.T) {
	cases := []struct {
		name, expr, body string
		attrs            map[string]record.Attribute
		limits           transform.Limits
		reason           string
	}{
		{"not a record", ".json.amount | tonumber", `{"amount":"1"}`, nil, transform.Limits{}, transform.ReasonNoRecord},
		{"nothing", "empty", `{}`, nil, transform.Limits{}, transform.ReasonNoRecord},
		{"json to text", `.body = "x"`, `{"a":1}`, nil, transform.Limits{}, transform.ReasonNotJSON},
		{"json to null", `.json = null`, `{"a":1}`, nil, transform.Limits{}, transform.ReasonNotJSON},
		{"both", `.body = "{}" | .json.a = 2`, `{"a":1}`, nil, transform.Limits{}, transform.ReasonBoth},
		{"number attribute", `.attributes.n = {"type":"Number","value":5}`, `{}`, nil, transform.Limits{}, transform.ReasonAttribute},
		{"too large", `.json.pad = ("x" * 100)`, `{}`, nil, transform.Limits{MaxMessageBytes: 150}, transform.ReasonTooLarge},
		{"too many attributes", `.`, `{}`, map[string]record.Attribute{"a": {Type: "String", Value: "1"}, "b": {Type: "String", Value: "2"}},
			transform.Limits{MaxAttributes: 2}, transform.ReasonTooMany},
	}
	for _, tc := range cases {
		xf := compile(t, tc.expr, tc.limits)
		r, p := rec("m", tc.body, tc.attrs)
		_, err := xf.Apply(r, p, "run")
		var te *transform.Error
		if !errors.As(err, &te) || te.Reason != tc.reason {
			t.Errorf("%s: %v; want reason %q", tc.name, err, tc.reason)
		}
	}
}

func TestEveryMessageFailingRefusesWhateverTheOrder(t *testing.T) {
	xf := compile(t, `error("no")`, transform.Limits{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refusals := 0
	for i := range transform.RefuseAfter + 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, p := rec("m"+string(rune('a'+i%26)), `{}`, nil)
			_, err := xf.Apply(r, p, "run")
			if errs.Code(err) == errs.ExitUsage {
				mu.Lock()
				refusals++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if refusals < 20 {
		t.Fatalf("%d refusals after %d failures", refusals, transform.RefuseAfter+20)
	}
	// Once refused, a message that would transform is refused too.
	r, p := rec("late", `{}`, nil)
	ok := compile(t, ".", transform.Limits{})
	if _, err := ok.Apply(r, p, "run"); err != nil {
		t.Fatal(err)
	}
	if err := xf.Tally().Refusal(); errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "--transform failed on every message read") {
		t.Fatalf("refusal %v", err)
	}
	// A short run: refused at its end.
	short := compile(t, `error("no")`, transform.Limits{})
	_, _ = short.Apply(r, p, "run")
	if err := short.Tally().Refusal(); errs.Code(err) != errs.ExitUsage {
		t.Fatalf("short run: %v", err)
	}
}

func TestCompileRefusesBadExpressions(t *testing.T) {
	for _, src := range []string{"", "  ", ".json |="} {
		if _, err := transform.Compile(src, transform.Limits{}); errs.Code(err) != errs.ExitUsage {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func TestDiffIsJSONAware(t *testing.T) {
	r, p := rec("m", `{"a":{"b":"1","keep":[1,2]},"gone":true,"we ird":1}`, nil)
	xf := compile(t, `.json.a.b |= tonumber | del(.json.gone) | .json.new = "x"`, transform.Limits{})
	res, err := xf.Apply(r, p, "run")
	if err != nil {
		t.Fatal(err)
	}
	ch := transform.Diff(r, p, res.Record)
	var got []string
	for _, c := range ch {
		got = append(got, c.Path+" "+string(c.Before)+" -> "+string(c.After))
	}
	want := []string{`.json.a.b "1" -> 1`, `.json.gone true -> `, `.json.new  -> "x"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
