package inspect_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// BenchmarkRedactRecord: masking secrets in one decoded record, as sample
// and classify do for every record they print (the benchmark DLQ mix).
func BenchmarkRedactRecord(b *testing.B) {
	data := benchNDJSON(b, 1000)
	var recs []record.Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatal(err)
		}
		inspect.Decode(&r)
		recs = append(recs, r)
	}
	red := inspect.NewRedactor(nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = red.Record(recs[i%len(recs)])
	}
}

// TestRedactSkipsOnlyWhatCannotHoldASecret: the shortcut that returns a
// text untouched when no secret key name occurs in it must not let a
// secret through: key spellings (case, '_', '-'), JSON escapes, free-text
// "key=value" and extra keys are still masked.
func TestRedactSkipsOnlyWhatCannotHoldASecret(t *testing.T) {
	r := inspect.NewRedactor([]string{"x_customer_pin2"})
	for _, tc := range []struct{ in, secret string }{
		{`{"user":"a","Pass_Word":"hunter2"}`, "hunter2"},
		{`{"auth":{"API-KEY":"k-123"}}`, "k-123"},
		{`{"pass\u0077ord":"s3cr3t"}`, "s3cr3t"},
		{`login failed: password=topsecret for user a`, "topsecret"},
		{`{"x-customer-pin2":"9999"}`, "9999"},
	} {
		if out := r.Body(tc.in); bytes.Contains([]byte(out), []byte(tc.secret)) {
			t.Errorf("%s: %q still shows the secret", tc.in, out)
		}
	}
	plain := `{"order":"o-1", "amount": 12.50}`
	if out := r.Body(plain); out != plain {
		t.Errorf("a body without secrets changed: %q -> %q", plain, out)
	}
}
