package logs

import (
	"slices"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]string{"/aws/lambda/a, /ecs/b", "/ecs/b"}, " 2024-05-01T00:00:00Z..", true)
	if err != nil {
		t.Fatalf("valid flags rejected: %v", err)
	}
	if !c.Active() || !slices.Equal(c.Groups, []string{"/aws/lambda/a", "/ecs/b"}) || c.Window.Spec != "2024-05-01T00:00:00Z.." || c.Window.From.IsZero() || !c.Refresh {
		t.Errorf("parsed %+v", c)
	}
	if c, err := ParseConfig(nil, "", false); err != nil || c.Active() {
		t.Errorf("no --logs: %+v, %v", c, err)
	}
	for _, c := range []struct {
		groups  []string
		window  string
		refresh bool
		want    string
	}{
		{[]string{"arn:aws:logs:us-east-1:1:log-group:x"}, "", false, `--logs "arn:aws:logs:us-east-1:1:log-group:x" is not a CloudWatch Logs group name (1-512 characters: letters, digits, _ - / . # and the group name only, not an ARN or a URL)`},
		{nil, "6h", false, "--logs-window and --logs-refresh need --logs LOG_GROUP"},
		{[]string{" , "}, "", true, "--logs-window and --logs-refresh need --logs LOG_GROUP"},
		{[]string{"/x"}, "last tuesday", false, ""},
	} {
		_, err := ParseConfig(c.groups, c.window, c.refresh)
		if err == nil || errs.Code(err) != errs.ExitUsage || (c.want != "" && err.Error() != c.want) {
			t.Errorf("%v %q %v: %v, want exit 2 %q", c.groups, c.window, c.refresh, err, c.want)
		}
	}
}

// TestNilLookupPassesThrough: without --logs a command reads through a nil
// *Lookup, which changes nothing.
func TestNilLookupPassesThrough(t *testing.T) {
	var lk *Lookup
	seen := 0
	fn, flush := lk.Stream(func(*record.Record, any) error { seen++; return nil })
	if err := fn(&record.Record{MessageID: "a"}, nil); err != nil || flush() != nil || seen != 1 {
		t.Errorf("stream: seen %d", seen)
	}
	if err := lk.One(&record.Record{}); err != nil {
		t.Error(err)
	}
	lk.Summary()
}
