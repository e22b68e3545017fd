package logs

import (
	"slices"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestAttach(t *testing.T) {
	found := &record.Failure{Type: "DatabaseTimeout", Reason: "timeout", Source: &record.FailureSource{LogGroup: "/aws/lambda/orders"}}
	nothing := &record.Failure{Source: &record.FailureSource{Note: "no log line mentions this message"}}

	var rec record.Record
	Attach(&rec, found)
	if rec.Failure != found {
		t.Fatalf("a record without failure gets the logs' failure: %+v", rec.Failure)
	}
	own := &record.Failure{Type: "Own", Reason: "its own reason"}
	rec = record.Record{Failure: own}
	Attach(&rec, found)
	if rec.Failure != own {
		t.Fatalf("a record with failure context keeps it: %+v", rec.Failure)
	}
	format := &record.Failure{Format: "sns"}
	rec = record.Record{Failure: format}
	Attach(&rec, nothing)
	if rec.Failure == format || rec.Failure.Format != "sns" || rec.Failure.Source != nothing.Source || format.Source != nil {
		t.Fatalf("a format without a reason keeps its format and gets the search's note on a copy: %+v (original %+v)", rec.Failure, format)
	}
	rec = record.Record{}
	Attach(&rec, nil)
	if rec.Failure != nil {
		t.Fatalf("no result changes nothing: %+v", rec.Failure)
	}
}

func TestSplitGroupsAndValidGroup(t *testing.T) {
	got := SplitGroups([]string{"/aws/lambda/orders, /ecs/payments", "", "/aws/lambda/orders", " a ,,b"})
	if want := []string{"/aws/lambda/orders", "/ecs/payments", "a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("SplitGroups = %q, want %q", got, want)
	}
	for g, want := range map[string]bool{
		"/aws/lambda/orders": true, "app_1-x.y#z": true, "": false, strings.Repeat("a", 513): false,
		"arn:aws:logs:us-east-1:1:log-group:x": false, "https://logs": false, "with space": false,
	} {
		if got := ValidGroup(g); got != want {
			t.Errorf("ValidGroup(%.40q) = %v, want %v", g, got, want)
		}
	}
}
