package classify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// The seed corpus is in testdata/fuzz/FuzzParse/ (the rules files of
// testdata/ and docs/rules.example.yaml plus edge cases) and runs with every
// `go test`; `make fuzz` explores further.

var fuzzRecords = func() []*record.Record {
	var out []*record.Record
	for _, b := range []string{
		`{"eventType":"OrderCreated","eventVersion":3,"error":"java.net.SocketTimeoutException: Read timed out"}`,
		`{"errorType":"ValidationError","errorMessage":"amount must be positive"}`,
		`not json at all`,
	} {
		out = append(out, &record.Record{MessageID: "m", Body: b, Attributes: map[string]record.Attribute{"tenant": {Type: "String", Value: "t-1"}}})
	}
	return out
}()

// FuzzParse: any rules file either loads or is one bad-input error that
// names the file; loaded rules classify every kind of message into one of
// their classes and a valid action, and explain it the same way.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Parse(data, "rules.yaml")
		if err != nil {
			if errs.Code(err) != errs.ExitUsage || !strings.HasPrefix(err.Error(), "rules.yaml") {
				t.Fatalf("Parse error %q (exit %d) is not a bad-input error naming the file", err, errs.Code(err))
			}
			return
		}
		if len(rs.Rules) == 0 {
			t.Fatal("rules loaded without any rule")
		}
		for _, r := range fuzzRecords {
			rec := *r
			parsed := inspect.Decode(&rec)
			o := rs.Classify(&rec, parsed)
			if !validAction(o.Action) || !rs.HasClass(o.Class) || o.Rule == "" {
				t.Fatalf("classified as %+v: not a class and action of the rules", o)
			}
			ex := rs.Explain(&rec, parsed)
			if ex.Outcome.Class != o.Class || ex.Outcome.Action != o.Action || ex.Outcome.Rule != o.Rule {
				t.Fatalf("explain says %+v, classify %+v", ex.Outcome, o)
			}
			if _, err := json.Marshal(ex); err != nil {
				t.Fatalf("explanation cannot be printed: %v", err)
			}
		}
	})
}
